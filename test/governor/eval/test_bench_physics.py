"""benchmarks/bench_governor_eval.py --physics: every scenario on another actuation preset (the
governor on a board its rules were not written against), named so a run says which, and never
written to the results file, which holds the scenarios' own physics."""

import importlib.util
import subprocess
import sys
from pathlib import Path

from edge_roofline.governor.eval import load_scenario
from edge_roofline.virtual.actuation import PRESETS

REPO = Path(__file__).resolve().parents[3]
BENCH = REPO / "benchmarks" / "bench_governor_eval.py"


def load_bench():
    spec = importlib.util.spec_from_file_location("bench_governor_eval", BENCH)
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


def test_a_run_on_another_preset_takes_its_physics_and_says_so_in_its_name():
    bench = load_bench()
    own = load_scenario("agx_bursty")  # its own physics: bursts, replaced whole by the preset
    run = bench.scenario_run("agx_bursty", 1, "slow")
    assert run.physics == PRESETS["slow"] != own.physics
    assert (run.seed, run.name) == (own.seed + 1, f"agx_bursty@seed{own.seed + 1}+slow")
    assert bench.scenario_run("agx_bursty", 0, "slow").name == "agx_bursty+slow"
    assert bench.scenario_run("agx_bursty") == own


def test_another_preset_is_not_written_to_the_results_file():
    done = subprocess.run([sys.executable, str(BENCH), "--physics", "slow", "--write-results", "agx_steady"],
                          capture_output=True, text=True, timeout=120)
    assert done.returncode == 2 and "--physics and --write-results" in done.stderr, done.stderr
    assert "Traceback" not in done.stderr
