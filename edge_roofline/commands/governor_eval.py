"""``edge-roofline governor-eval SCENARIO``: the governor against static policies and a hindsight
oracle on the virtual Jetson, closed loop on simulated time (SIMULATION). SCENARIO is a YAML
file or the name of one in config/scenarios/ or config/scenarios/llm/ (see docs/governor.md). A
language model's scenario (one that sets ``prompt_tokens``) runs governor-eval's generation mode
(governor/eval/generation.py): energy per output token and every target's samples."""

NAME = "governor-eval"
HELP = "evaluate the governor closed-loop on the virtual Jetson against static policies and an oracle (SIMULATION)"


def add_arguments(parser) -> None:
    from edge_roofline.commands._args import chart_file, count, output_file
    parser.add_argument("scenario", help="scenario YAML file, or a name from config/scenarios/ (e.g. agx_steady)")
    parser.add_argument("--json", metavar="FILE", type=output_file, help="write the results as JSON")
    parser.add_argument("--plot", metavar="FILE", type=chart_file,
                        help="write a PNG: latency vs target, power, operating points (governor vs MAXN)")
    parser.add_argument("--seeds", type=count(1), default=1, metavar="N",
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

    sc = load_generation_scenario(path)
    runs = evaluate(sc, tuple(range(args.seeds)))
    print(table(sc, runs))
    _write_json(args.json, to_dict(sc, runs))
    if args.plot:
        plot_generation(sc, runs, args.plot)
        print(f"wrote {args.plot}")
    return 0


def plot(evaluation, path: str) -> None:
    """Latency against the target, sampled power and operating point changes over time for the
    governor and MAXN."""
    ev, scenario = evaluation, evaluation.scenario
    traces = {name: ev.scores[name].trace for name in ("maxn", "governor")}
    starts = traces["governor"].phase_start_s
    targets = [(phase.target_latency_ms, starts[i], segment.end_s) for i, segment in enumerate(scenario.segments)
               for _, phase in segment.active]  # every stream's target
    _plot(path, {name: ([r.end_s for r in t.inferences], [r.latency_s * 1e3 for r in t.inferences], t.power)
                 for name, t in traces.items()},
          targets, starts, [(t, point) for t, point, _ in traces["governor"].decisions],
          f"SIMULATION -- governor vs MAXN on a virtual {scenario.device}: {scenario.name}\n"
          f"governor energy/inference = {ev.ratio('governor', 'oracle'):.3f} x oracle, "
          f"{ev.ratio('governor', 'maxn'):.3f} x MAXN")


def plot_generation(sc, runs, path: str) -> None:
    """A language model's scenario (its first seed): every target's samples (TTFT, TPOT, the
    detector's frames) against it, sampled power and the governor's moves, governor vs MAXN."""
    from edge_roofline.governor.eval.generation import summary, targets

    first = {r.policy: r for r in reversed(runs)}  # each policy's first seed
    series = {}
    for name in ("maxn", "governor"):
        r = first[name]
        ends, lats = [], []
        for _, attr, _ in targets(sc):
            ends += r.end_s.get(attr, [])
            lats += [v * 1e3 for v in getattr(r, attr)]
        series[name] = (ends, lats, r.power)
    gov = summary(sc, runs)["governor"]
    _plot(path, series, [(target_s * 1e3, 0.0, sc.duration_s) for _, _, target_s in targets(sc)], [],
          first["governor"].moves,
          f"SIMULATION -- governor vs MAXN on a virtual {sc.device}: {sc.name} (first seed; "
          f"targets: {', '.join(label for label, _, _ in targets(sc))})\ngovernor energy/output token = "
          f"{gov['vs_oracle']:.3f} x oracle, {gov['vs_maxn']:.3f} x MAXN (over every seed)")


def _plot(path: str, series, targets, phase_starts_s, moves, title: str) -> None:
    """``series``: per policy, (end times, latencies ms, (t, W) power samples); ``targets``:
    (ms, from s, to s); ``moves``: the governor's (t, point name)."""
    from pathlib import Path

    import matplotlib
    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    fig, (ax_lat, ax_pow) = plt.subplots(2, 1, figsize=(11, 7), sharex=True)
    for name, color in (("maxn", "tab:gray"), ("governor", "tab:blue")):
        ends_s, latencies_ms, power = series[name]
        ax_lat.plot(ends_s, latencies_ms, ".", ms=2, color=color, label=f"{name} latency")
        ax_pow.plot([t for t, _ in power], [w for _, w in power], lw=0.6, color=color,
                    label=f"{name} sampled power")
    for i, (target_ms, from_s, to_s) in enumerate(targets):
        ax_lat.hlines(target_ms, from_s, to_s, colors="tab:red", label="target" if i == 0 else None)
    for t in phase_starts_s:
        for ax in (ax_lat, ax_pow):
            ax.axvline(t, color="k", lw=0.5, alpha=0.4)
    for t, point in moves:
        ax_pow.axvline(t, color="tab:orange", lw=0.8, alpha=0.6)
        ax_pow.annotate(point.split("/")[-1], (t, ax_pow.get_ylim()[1]), rotation=90, fontsize=6,
                        va="top", ha="right", color="tab:orange")
    ax_lat.set_yscale("log")
    ax_lat.set_ylabel("latency (ms, queueing included)")
    ax_pow.set_ylabel("module power (W, INA3221 samples)")
    ax_pow.set_xlabel("simulated time (s); orange: governor operating point changes")
    ax_lat.legend(loc="upper right", fontsize=7)
    ax_pow.legend(loc="upper right", fontsize=7)
    fig.suptitle(title, fontsize=9)
    fig.tight_layout()
    out = Path(path).expanduser()
    out.parent.mkdir(parents=True, exist_ok=True)  # chart_file leaves the folder to the writer
    fig.savefig(out, dpi=120)
    plt.close(fig)
