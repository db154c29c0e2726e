"""governor-eval for a language model (SIMULATION), alone or beside a detector: requests arrive
periodically, each a prefill of its prompt then one decode step per further output token (the
KV cache growing), served one request at a time on a freshly booted ``VirtualBoard``
(generation_sim.py). The governor holds two streams, one per phase (``StreamConfig.phase``):
time to first token (arrival to the prefill's end, the queue included) and time per output
token (each decode step); and the detector's frames as a third stream where there is one.

Policies: ``maxn``; ``best_static`` (in hindsight, the one point of least energy meeting every
target); ``oracle`` (per phase, in hindsight: the least-energy prefill point during prefills,
decode point during decodes and, beside a detector, a point for the detector alone between
requests; switched at every phase change with the board's own settle times;
generation_oracle.py; where that spends more than the best static point meeting every target,
measured, or misses a target, the oracle stays at that point); ``governor``. Result: energy
per output token (the board's whole energy over the run, idle between requests and the
detector included, over the tokens generated) and each target's p95 and share of samples over
it.
"""

from __future__ import annotations

import math
from pathlib import Path

import numpy as np

from ..config import ConfigError
from .generation_oracle import hindsight
from .generation_scenario import GenerationScenario, load_generation_scenario
from .generation_sim import Run, simulate
from .score import MAX_ENERGY_VS_ORACLE, MAX_VIOLATION_RATE

POLICIES = ("maxn", "best_static", "oracle", "governor")


def evaluate(sc: GenerationScenario, seeds: tuple[int, ...] = (0,)) -> list[Run]:
    """Every policy over ``seeds`` (the runs in policy order, seeds within)."""
    from dataclasses import replace

    runs = {}
    for seed in seeds:
        s = replace(sc, seed=seed)
        chosen = hindsight(s)
        for policy in POLICIES:
            runs[policy, seed] = simulate(s, policy, chosen.get(policy))
        static, oracle = runs["best_static", seed], runs["oracle", seed]
        if meets(s, static) and (static.energy_j < oracle.energy_j or not meets(s, oracle)):
            # Switching at every phase change did not pay here, or its transients missed a
            # target: in hindsight the oracle stays at the best static point.
            runs["oracle", seed] = replace(static, policy="oracle")
    return [runs[policy, seed] for policy in POLICIES for seed in seeds]


def targets(sc: GenerationScenario) -> list[tuple[str, str, float]]:
    """(label, Run field of its samples, target in s) of every target the scenario sets."""
    out = [("TTFT", "ttft_s", sc.ttft_ms / 1e3), ("TPOT", "tpot_s", sc.tpot_ms / 1e3)]
    if sc.detector:
        out.append(("detector", "detector_s", sc.detector.target_latency_ms / 1e3))
    return out


def over_rates(sc: GenerationScenario, runs: list[Run]) -> dict[str, float]:
    """Per target, the share of the runs' samples over it (NaN: no sample)."""
    rates = {}
    for label, attr, target_s in targets(sc):
        samples = np.concatenate([getattr(r, attr) for r in runs] + [np.array([])])
        rates[label] = float(np.mean(samples > target_s)) if len(samples) else math.nan
    return rates


def meets(sc: GenerationScenario, run: Run) -> bool:
    """At most MAX_VIOLATION_RATE of each target's samples over it."""
    return all(rate <= MAX_VIOLATION_RATE for rate in over_rates(sc, [run]).values())


def summary(sc: GenerationScenario, runs: list[Run]) -> dict[str, dict]:
    """Per policy, over its seeds: energy per output token (against MAXN and the oracle), each
    target's p95 and share of samples over it, the mean switches and the points (the table's
    numbers, and the CLI's JSON)."""
    by: dict[str, list[Run]] = {}
    for r in runs:
        by.setdefault(r.policy, []).append(r)
    maxn = np.mean([r.energy_per_token_j for r in by["maxn"]])
    oracle = np.mean([r.energy_per_token_j for r in by["oracle"]]) if "oracle" in by else math.nan
    out = {}
    for policy, rs in by.items():
        e = float(np.mean([r.energy_per_token_j for r in rs]))
        over = over_rates(sc, rs)
        per_target = {}
        for label, attr, _ in targets(sc):
            samples = np.concatenate([getattr(r, attr) for r in rs] + [np.array([math.nan])])
            per_target[label] = {"p95_latency_ms": float(np.nanpercentile(samples, 95) * 1e3) if len(samples) > 1
                                 else math.nan, "over_rate": over[label]}
        out[policy] = {"energy_per_output_token_j": e, "vs_maxn": float(e / maxn), "vs_oracle": float(e / oracle),
                       "targets": per_target, "switches": float(np.mean([r.switches for r in rs])),
                       "points": sorted({f"{k}: {v}" for r in rs for k, v in r.points.items()}), "seeds": len(rs)}
    return out


def table(sc: GenerationScenario, runs: list[Run]) -> str:
    """A Markdown table: energy per output token against MAXN and the oracle, and each target's
    p95 and share of samples over it."""
    det = sc.detector
    beside = (f"; beside {det.model} at {det.input_rate_hz:g} Hz, p{det.percentile:g} <= "
              f"{det.target_latency_ms:g} ms") if det else ""
    heads = [label for label, _, _ in targets(sc)]
    lines = [f"{sc.name} ({sc.device}, prompt {sc.prompt_tokens}, {sc.output_tokens} tokens out, "
             f"{sc.request_rate_hz:g} req/s; TTFT p{sc.percentile:g} <= {sc.ttft_ms:g} ms, TPOT <= {sc.tpot_ms:g} ms"
             f"{beside}) SIMULATION", "",
             "| policy | mJ / output token | vs MAXN | vs oracle | "
             + " | ".join(f"{h} p95 ms | {h} over" for h in heads) + " | switches | points |",
             "|---" * (6 + 2 * len(heads)) + "|"]
    for policy, p in summary(sc, runs).items():
        cells = [f"{t['p95_latency_ms']:.3f} | {t['over_rate']:.1%}" for t in p["targets"].values()]
        lines.append(f"| {policy} | {p['energy_per_output_token_j'] * 1e3:.3f} | {p['vs_maxn']:.3f} | "
                     f"{p['vs_oracle']:.3f} | " + " | ".join(cells) + f" | {p['switches']:.0f} | "
                     + "; ".join(p["points"]) + " |")
    return "\n".join(lines)


def readme_row(sc: GenerationScenario, runs: list[Run]) -> str:
    """The scenario's row of the README's table: the governor's energy per output token against
    MAXN and the per-phase oracle, its worst target's share over, and issue 27's verdict."""
    gov = summary(sc, runs)["governor"]
    worst_label, worst = max(((label, t["over_rate"]) for label, t in gov["targets"].items()), key=lambda lt: lt[1])
    passed = gov["vs_oracle"] <= MAX_ENERGY_VS_ORACLE and worst <= MAX_VIOLATION_RATE
    return (f"| {sc.name} | {sc.device} | {gov['energy_per_output_token_j'] * 1e3:.2f} | {gov['vs_maxn']:.3f} | "
            f"{gov['vs_oracle']:.3f} | {worst:.2%} ({worst_label}) | {'PASS' if passed else 'FAIL'} |")


def readme_table(rows: list[str], command: str, commit: str) -> str:
    """The README's block (tables.README_LLM_START/END) of ``readme_row`` rows."""
    from .tables import README_LLM_END, README_LLM_START

    return "\n".join([README_LLM_START, f"Generated by `{command}` at commit {commit}. SIMULATION "
                      f"(each run: docs/governor_eval_results.md). Criteria (issue 27): <= {MAX_ENERGY_VS_ORACLE:g} x "
                      f"the per-phase oracle's energy, <= {MAX_VIOLATION_RATE:.0%} of each target's samples over it.",
                      "", "| scenario | device | governed mJ / output token | vs MAXN | vs per-phase oracle | "
                      "worst target over | verdict |", "|---|---|---|---|---|---|---|", *rows, README_LLM_END])


def to_dict(sc: GenerationScenario, runs: list[Run]) -> dict:
    """The CLI's JSON (``governor-eval --json``): the scenario and ``summary``; NaN (a target
    without samples) as null."""
    def clean(v):
        if isinstance(v, dict):
            return {k: clean(x) for k, x in v.items()}
        return None if isinstance(v, float) and math.isnan(v) else v

    return clean({"label": "SIMULATION", "scenario": sc.name, "device": sc.device,
                  "targets_ms": {label: target_s * 1e3 for label, _, target_s in targets(sc)},
                  "policies": summary(sc, runs)})


def results_section(tables: list[str], command: str, commit: str, date_utc: str) -> str:
    """The language models' section of the results file (tables.LLM_SECTION_START/END)."""
    from .tables import LLM_SECTION_END, LLM_SECTION_START

    return "\n".join([LLM_SECTION_START, "", "## Language models: energy per output token", "",
                      f"Generated by `{command}` at commit {commit} on {date_utc}. SIMULATION. Per request: a "
                      f"prefill, then decode steps with the KV cache growing; energy per output token includes "
                      f"idle time between requests; `vs MAXN` < 1 is energy saved. The oracle switches at every "
                      f"phase change (it pays each switch's transient).", "",
                      "\n\n".join(tables), "", LLM_SECTION_END])


def _tables(scenario, seeds: tuple[int, ...]) -> tuple[str, str]:
    """(the results file's table, the README's row)."""
    runs = evaluate(scenario, seeds)
    return table(scenario, runs), readme_row(scenario, runs)


def main(argv: list[str] | None = None) -> int:
    """``python -m edge_roofline.governor.eval.generation [--seeds N] [--jobs J] [--write-results] SCENARIO.yaml ...``:
    a table each (``--write-results``: also into the results file's language models section)."""
    import argparse
    import shlex
    import sys
    from concurrent.futures import ProcessPoolExecutor

    from .tables import RESULTS_FILE

    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("scenarios", nargs="+")
    parser.add_argument("--seeds", type=int, default=1)
    parser.add_argument("--jobs", type=int, default=1, help="scenarios evaluated in parallel (processes)")
    parser.add_argument("--write-results", action="store_true",
                        help=f"also write the tables into {RESULTS_FILE} and the README's table")
    args = parser.parse_args(argv)
    try:
        scenarios = [load_generation_scenario(path) for path in args.scenarios]
    except ConfigError as exc:
        print(f"error: {exc}")
        return 2
    tables, rows = [], []
    seeds = tuple(range(args.seeds))
    with ProcessPoolExecutor(max_workers=max(args.jobs, 1)) as pool:
        for done, row in pool.map(_tables, scenarios, [seeds] * len(scenarios)):
            tables.append(done)
            rows.append(row)
            print(done, end="\n\n", flush=True)
    if args.write_results:
        command = shlex.join(["python", "-m", "edge_roofline.governor.eval.generation",
                              *(argv if argv is not None else sys.argv[1:])])
        return write_results(Path.cwd(), tables, rows, command)  # run from the repository root
    return 0


def write_results(repo: Path, tables: list[str], rows: list[str], command: str) -> int:
    """The tables into ``repo``'s results file's section, and the rows into the README's table
    where README.md has its marks; 2 (and why, printed) where ``repo`` has no docs folder."""
    from .tables import README_LLM_END, README_LLM_START, RESULTS_FILE, generated_stamp, with_llm_section

    path = repo / RESULTS_FILE
    if not path.parent.is_dir():
        print(f"error: no {path.parent} here; write the results from the repository root")
        return 2
    commit, date_utc = generated_stamp(repo)
    path.write_text(with_llm_section(path.read_text() if path.exists() else "",
                                     results_section(tables, command, commit, date_utc)))
    print(f"wrote {RESULTS_FILE}")
    readme = repo / "README.md"
    text = readme.read_text() if readme.exists() else ""
    if README_LLM_START in text:  # the table's place is the README's choice: its marks
        readme.write_text(with_llm_section(text, readme_table(rows, command, commit), README_LLM_START, README_LLM_END))
        print("wrote the table in README.md")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
