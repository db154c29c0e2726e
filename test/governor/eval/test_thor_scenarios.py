"""The Jetson AGX Thor scenarios are shipped (issue 25): they load by name, FP8 on Thor is a
precision the scenario checker accepts, and the steady one meets the acceptance criteria on
the virtual Thor with realistic actuation."""

from __future__ import annotations

import pytest

from edge_roofline.governor.eval import evaluate
from edge_roofline.governor.eval.scenario import load_scenario, shipped_scenarios

THOR = ("ms_thor_two", "thor_fp8_rate_changes", "thor_steady", "thor_tight")


@pytest.mark.parametrize("name", THOR)
def test_thor_scenarios_are_shipped_and_load(name):
    scenario = load_scenario(name)
    assert scenario.device == "agx_thor_t5000" and name in shipped_scenarios()


def test_fp8_is_a_thor_precision():
    assert load_scenario("thor_fp8_rate_changes").precision == "fp8"


def test_thor_steady_meets_the_criteria():
    result = evaluate(load_scenario("thor_steady"))
    assert result.passed, result.criteria()
