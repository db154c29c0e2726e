"""A scenario's ``physics`` section: the board's actuation and disturbances, realistic unless it
says otherwise, refused on one line when a key or preset is unknown (SIMULATION)."""

import pytest

from edge_roofline.governor.eval.scenario import ScenarioError, load_scenario, scenario_from_dict, shipped_scenarios
from edge_roofline.governor.eval.simulate import boot
from edge_roofline.virtual.actuation import PRESETS

from .scenarios import short

STREAMS = {"device": "agx_orin_64gb", "precision": "fp16", "duration_s": 2,
           "streams": [{"name": "a", "model": "tiny_cnn", "input_rate_hz": 30, "target_latency_ms": 5}]}


def test_a_scenario_runs_on_realistic_actuation_unless_it_says_otherwise():
    assert boot(short(), 0)[0].actuation == PRESETS["realistic"]
    assert boot(short(physics="instant"), 0)[0].actuation == PRESETS["instant"]
    slow = boot(short(physics={"preset": "slow", "emc_stall_s": [0.002, 0.003]}), 0)[0].actuation
    assert slow.settle_gpu_s == PRESETS["slow"].settle_gpu_s and slow.emc_stall_s == (0.002, 0.003)
    several = scenario_from_dict(STREAMS | {"physics": "slow"}, "several")
    assert boot(several, 0)[0].actuation == PRESETS["slow"]


@pytest.mark.parametrize("physics, message", [
    ({"settle_gpu": 0.01}, r"short: physics: unknown key\(s\) settle_gpu; known: preset, .*settle_gpu_s"),
    ("sluggish", r"short: physics: unknown preset 'sluggish'; use one of realistic, slow, instant"),
    ({"emc_stall_s": [0.004, 0.001]}, r"short: physics: emc_stall_s must be \[low, high\] with low <= high"),
    ({"outlier_burst_probability": "often"}, r"short: physics: outlier_burst_probability must be a number"),
    ([1, 2], r"short: physics: must be a preset name"),
])
def test_bad_physics_is_refused_on_one_line(physics, message):
    with pytest.raises(ScenarioError, match=message) as err:
        short(physics=physics)
    assert "\n" not in str(err.value)


def test_shipped_actuation_scenarios_say_what_they_test():
    names = shipped_scenarios()
    for name in ("agx_slow_actuation", "agx_fast_actuation", "agx_bursty", "agx_small_model_switch",
                 "agx_saturated", "ms_agx_slow_actuation"):
        assert name in names and (name.startswith("ms_") or f"{name}_p30" in names)
    assert load_scenario("agx_slow_actuation").physics.settle_emc_s == (0.05, 0.08)
    bursty = load_scenario("agx_bursty").physics
    assert bursty.outlier_burst_probability > PRESETS["realistic"].outlier_burst_probability


def test_outlier_bursts_do_not_rule_out_every_candidate_of_the_oracle():
    """Every candidate's run draws the same disturbances: were bursts held against each point
    as they are, bursts that make even the least late point miss would rule out every candidate
    and the oracle would fall back to that point. It ranks without them and confirms its choice
    with them, holding a point only to what the least late point shows on the same run."""
    from edge_roofline.governor.eval.hindsight import Hindsight

    one_phase = [{"duration_s": 4, "input_rate_hz": 30, "target_latency_ms": 5}]
    bursty = Hindsight(short(phases=one_phase, physics={"outlier_burst_probability": 0.05,
                                                         "outlier_factor": [30, 30]}))
    segment = bursty.scenario.segments[0]
    floor, chosen = bursty._floor(segment), bursty.oracle()[0]
    assert floor.streams[0].violation_rate > 0.01  # no point meets the 1 % criterion here
    assert chosen.point != floor.point and chosen.meets(segment, None, floor)
    assert chosen.energy_per_inference_j < floor.energy_per_inference_j
    calm = Hindsight(short(phases=one_phase, physics={"outlier_burst_probability": 0.0}))
    assert calm.oracle()[0].meets(calm.scenario.segments[0])
