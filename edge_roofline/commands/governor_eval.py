"""``edge-roofline governor-eval SCENARIO``: the governor against static policies and a hindsight
oracle on the virtual Jetson, closed loop on simulated time (SIMULATION). SCENARIO is a YAML
file or the name of one in config/scenarios/ or config/scenarios/llm/ (see docs/governor.md). A
language model's scenario (one that sets ``prompt_tokens``) runs governor-eval's generation mode
(governor/eval/generation.py): energy per output token and every target's samples."""

NAME = "governor-eval"
HELP = "evaluate the governor closed-loop on the virtual Jetson against static policies and an oracle (SIMULATION)"


def add_arguments(parser) -> None:
    parser.add_argument("scenario", help="scenario YAML file, or a name from config/scenarios/ (e.g. agx_steady)")
    parser.add_argument("--json", metavar="FILE", help="write the results as JSON")
    parser.add_argument("--plot", metavar="FILE", help="write a PNG: latency vs target, power, operating points "
                                                       "(governor vs MAXN)")
    parser.add_argument("--seeds", type=int, default=1, metavar="N",
                        help="a language model's scenario: run every policy over seeds 0..N-1 (default 1)")


def run(args) -> int:
    from edge_roofline.governor.eval.generation_scenario import is_generation_scenario

    from edge_roofline.governor.eval import evaluate, format_evaluation, load_scenario
    from edge_roofline.governor.eval.scenario import resolve_scenario_path

    path = resolve_scenario_path(args.scenario)
    if is_generation_scenario(path):
        return run_generation(args, path)
    evaluation = evaluate(load_scenario(args.scenario))
    print(format_evaluation(evaluation))
    _write_json(args.json, evaluation.to_dict())
    if args.plot:
        plot(evaluation, args.plot)
        print(f"wrote {args.plot}")
    return 0


def _write_json(path: str | None, data: dict) -> None:
    import json

    if path:
        with open(path, "w") as f:
            json.dump(data, f, indent=2)
        print(f"wrote {path}")


def run_generation(args, path) -> int:
    from edge_roofline.governor.eval.generation import evaluate, load_generation_scenario, table, to_dict
    from edge_roofline.governor.eval.scenario import ScenarioError

    if args.plot:
        raise ScenarioError(f"{path.name} is a language model's scenario: --plot is not built for those yet; "
                            f"drop it (--json and the table hold every number)")
    if args.seeds < 1:
        raise ScenarioError(f"--seeds must be >= 1, got {args.seeds}")
    sc = load_generation_scenario(path)
    runs = evaluate(sc, tuple(range(args.seeds)))
    print(table(sc, runs))
    _write_json(args.json, to_dict(sc, runs))
    return 0


def plot(evaluation, path: str) -> None:
    """Latency against the target, sampled power and operating point changes over time for the
    governor and MAXN."""
    import matplotlib
    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    ev, scenario = evaluation, evaluation.scenario
    fig, (ax_lat, ax_pow) = plt.subplots(2, 1, figsize=(11, 7), sharex=True)
    for name, color in (("maxn", "tab:gray"), ("governor", "tab:blue")):
        trace = ev.scores[name].trace
        ax_lat.plot([r.end_s for r in trace.inferences], [r.latency_s * 1e3 for r in trace.inferences],
                    ".", ms=2, color=color, label=f"{name} latency")
        ax_pow.plot([t for t, _ in trace.power], [w for _, w in trace.power], lw=0.6, color=color,
                    label=f"{name} sampled power")
    starts = ev.scores["governor"].trace.phase_start_s
    for i, segment in enumerate(scenario.segments):
        for j, (_, phase) in enumerate(segment.active):  # every stream's target
            ax_lat.hlines(phase.target_latency_ms, starts[i], segment.end_s, colors="tab:red",
                          label="target" if i == j == 0 else None)
        for ax in (ax_lat, ax_pow):
            ax.axvline(starts[i], color="k", lw=0.5, alpha=0.4)
    for t, point, why in ev.scores["governor"].trace.decisions:
        ax_pow.axvline(t, color="tab:orange", lw=0.8, alpha=0.6)
        ax_pow.annotate(point.split("/")[-1], (t, ax_pow.get_ylim()[1]), rotation=90, fontsize=6,
                        va="top", ha="right", color="tab:orange")
    ax_lat.set_yscale("log")
    ax_lat.set_ylabel("latency (ms, queueing included)")
    ax_pow.set_ylabel("module power (W, INA3221 samples)")
    ax_pow.set_xlabel("simulated time (s); orange: governor operating point changes")
    ax_lat.legend(loc="upper right", fontsize=7)
    ax_pow.legend(loc="upper right", fontsize=7)
    ratio = ev.ratio("governor", "oracle")
    fig.suptitle(f"SIMULATION -- governor vs MAXN on a virtual {scenario.device}: {scenario.name}\n"
                 f"governor energy/inference = {ratio:.3f} x oracle, "
                 f"{ev.ratio('governor', 'maxn'):.3f} x MAXN", fontsize=9)
    fig.tight_layout()
    fig.savefig(path, dpi=120)
    plt.close(fig)
