"""The Jetson AGX Thor scenarios (config/scenarios/thor/, not yet in the shipped set) load and
run: FP8 on Thor is a precision the scenario checker accepts, and the steady one meets the
acceptance criteria with today's physics (to be re-run with issue 28's)."""

from __future__ import annotations

from pathlib import Path

import pytest

from edge_roofline.governor.eval import evaluate
from edge_roofline.governor.eval.scenario import load_scenario, shipped_scenarios

THOR_DIR = Path(__file__).resolve().parents[3] / "config" / "scenarios" / "thor"


@pytest.mark.parametrize("path", sorted(THOR_DIR.glob("*.yaml")), ids=lambda p: p.stem)
def test_thor_scenarios_load_and_stay_out_of_the_shipped_set(path):
    scenario = load_scenario(path)
    assert scenario.device == "agx_thor_t5000" and path.stem not in shipped_scenarios()


def test_thor_steady_meets_the_criteria():
    result = evaluate(load_scenario(THOR_DIR / "thor_steady.yaml"))
    assert result.passed, result.criteria()
