"""Every shipped governor scenario (config/scenarios/) closed-loop on the virtual Jetson
(SIMULATION): policies x scenarios, energy per inference relative to the per-phase oracle (joint:
every stream of a phase meets its target) and to MAXN, the governor's violation rate (the worst
stream's) and the acceptance verdict, plus the time it took. ``--details`` adds each scenario's
table (with several streams: each policy's total energy and each stream's p95 and violations).
``--write-results`` also writes them to docs/governor_eval_results.md, the one file the results
live in (the README and the docs link it), with the command, the commit and the date.

    python benchmarks/bench_governor_eval.py [--jobs 2] [--details] [--seeds N] [--physics PRESET]
                                             [--write-results] [SCENARIO ...]

``--seeds N`` runs each scenario with N seeds (its own and the next N-1): a different jitter
draw and, with physics_perturbation, a differently perturbed device, so the verdict is not
the luck of one shipped seed. ``--physics PRESET`` runs every scenario on that actuation preset
(virtual/actuation.py: ``slow`` is issue 28's outside AGX Orin, settles of 15-80 ms) in place of
its own: the governor on a board its rules were not written against. The results file holds the
scenarios' own physics only, so it is not written then.
"""

from __future__ import annotations

import argparse
import shlex
import sys
import time
from concurrent.futures import ProcessPoolExecutor
from dataclasses import replace
from pathlib import Path

REPO = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(REPO))

from edge_roofline.governor.eval import (evaluate, format_evaluation, format_summary,  # noqa: E402
                                         load_scenario, shipped_scenarios)
from edge_roofline.governor.eval.tables import (RESULTS_FILE, format_results_file, llm_section,  # noqa: E402
                                               generated_stamp, with_llm_section)
from edge_roofline.virtual.actuation import PRESETS  # noqa: E402


def scenario_run(name: str, seed_offset: int = 0, physics: str = ""):
    """Scenario ``name`` at its own seed + ``seed_offset``, on actuation preset ``physics`` ("": its own);
    the name says both (``agx_steady@seed2+slow``)."""
    scenario = load_scenario(name)
    if not seed_offset and not physics:
        return scenario
    seed = scenario.seed + seed_offset
    label = Path(scenario.name).stem + (f"@seed{seed}" if seed_offset else "") + (f"+{physics}" if physics else "")
    return replace(scenario, seed=seed, name=label, physics=PRESETS[physics] if physics else scenario.physics)


def _evaluate(job: tuple[str, int, str]):
    start = time.perf_counter()
    evaluation = evaluate(scenario_run(*job))
    return evaluation, time.perf_counter() - start


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("scenarios", nargs="*", help="scenario names or files (default: every shipped one)")
    parser.add_argument("--jobs", type=int, default=2, help="scenarios evaluated in parallel")
    parser.add_argument("--details", action="store_true", help="also print each scenario's table")
    parser.add_argument("--seeds", type=int, default=1, help="seeds per scenario (its own and the next ones)")
    parser.add_argument("--physics", choices=sorted(PRESETS), default="",
                        help="run every scenario on this actuation preset instead of its own")
    parser.add_argument("--write-results", action="store_true",
                        help=f"also write the tables (each run's too) to {RESULTS_FILE}")
    args = parser.parse_args()
    if args.physics and args.write_results:
        parser.error(f"--physics and --write-results: {RESULTS_FILE} holds the scenarios' own physics; drop one")
    names = args.scenarios or shipped_scenarios()
    jobs = [(name, k, args.physics) for name in names for k in range(max(args.seeds, 1))]
    start = time.perf_counter()
    with ProcessPoolExecutor(max_workers=max(args.jobs, 1)) as pool:
        results = list(pool.map(_evaluate, jobs))
    wall_s = time.perf_counter() - start
    evaluations = [ev for ev, _ in results]
    if args.details:
        for ev in evaluations:
            print(format_evaluation(ev), end="\n\n")
    print(format_summary(evaluations))
    simulated_s = sum(ev.scenario.duration_s for ev in evaluations)
    passed = sum(ev.passed for ev in evaluations)
    print(f"\n{passed}/{len(evaluations)} scenarios meet every criterion; {simulated_s:.0f} s simulated per "
          f"policy, evaluated in {wall_s:.0f} s wall ({args.jobs} jobs; per scenario "
          + ", ".join(f"{t:.0f}" for _, t in results) + " s)")
    if args.write_results:
        command = shlex.join(["python", "benchmarks/bench_governor_eval.py", *sys.argv[1:]])
        commit, date_utc = generated_stamp(REPO)
        path = REPO / RESULTS_FILE
        kept = llm_section(path.read_text()) if path.exists() else ""  # the language models' runs stay
        path.write_text(with_llm_section(format_results_file(evaluations, command=command, commit=commit,
                                                             date_utc=date_utc, details=True), kept))
        print(f"wrote {RESULTS_FILE}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
