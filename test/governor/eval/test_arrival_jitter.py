"""A scenario's ``arrival_jitter_ms``: camera frames delivered up to that much after their
capture instant, in order and at the stream's rate; bad values refused on one line (SIMULATION)."""

import numpy as np
import pytest

from edge_roofline.governor.eval.policies import StaticController
from edge_roofline.governor.eval.scenario import ScenarioError, scenario_from_dict
from edge_roofline.governor.eval.simulate import maxn_mode_id, simulate

from .scenarios import short

ONE_PHASE = [{"duration_s": 4, "input_rate_hz": 50, "target_latency_ms": 5}]


def _arrivals_s(**over) -> np.ndarray:
    s = short(phases=ONE_PHASE, **over)
    trace = simulate(s, maxn_mode_id(s), StaticController(), sample_hz=None, step_s=None)
    return np.array([r.arrival_s for r in trace.inferences])


@pytest.mark.parametrize("value, message", [
    (-1, r"short: arrival_jitter_ms must be >= 0, got -1"),
    ("3 ms", r"short: arrival_jitter_ms must be a number, got '3 ms'"),
    (float("nan"), r"short: arrival_jitter_ms must be >= 0, got nan"),
])
def test_bad_arrival_jitter_is_refused_on_one_line(value, message):
    with pytest.raises(ScenarioError, match=message) as err:
        short(arrival_jitter_ms=value)
    assert "\n" not in str(err.value)


def test_several_streams_take_arrival_jitter_too():
    data = {"device": "agx_orin_64gb", "precision": "fp16", "duration_s": 2, "arrival_jitter_ms": 4,
            "streams": [{"name": "a", "model": "tiny_cnn", "input_rate_hz": 30, "target_latency_ms": 5}]}
    assert scenario_from_dict(data, "several").arrival_jitter_ms == 4.0
    with pytest.raises(ScenarioError, match=r"several: arrival_jitter_ms must be >= 0"):
        scenario_from_dict(data | {"arrival_jitter_ms": -0.5}, "several")


def test_jittered_arrivals_keep_their_order_and_the_stream_rate():
    periodic, jittered = _arrivals_s(), _arrivals_s(arrival_jitter_ms=15.0)  # 15 ms at a 20 ms period
    assert np.allclose(np.diff(periodic), 0.02)
    assert len(jittered) == len(periodic)
    delay_s = jittered - periodic
    assert (delay_s >= 0).all() and (delay_s <= 0.015 + 1e-12).all() and np.ptp(delay_s) > 0.012
    gaps = np.diff(jittered)
    assert (gaps >= 0).all() and gaps.min() < 0.008  # bunched: a late frame, then an early one
    assert gaps.mean() == pytest.approx(0.02, rel=0.01)
    # The scenario's seed draws them: the same seed, the same arrivals; another, others.
    assert np.array_equal(jittered, _arrivals_s(arrival_jitter_ms=15.0))
    assert not np.array_equal(jittered, _arrivals_s(arrival_jitter_ms=15.0, seed=2))


def test_arrival_jitter_makes_a_busy_point_queue():
    """At a point busy about 90 % of the period (ResNet-50 at MAXN: about 1 ms), periodic inputs
    wait little; inputs delivered with a jitter the size of the period queue behind each other."""
    busy = [{"duration_s": 2, "input_rate_hz": 900, "target_latency_ms": 50}]
    runs = [simulate(sc, maxn_mode_id(sc), StaticController(), sample_hz=None, step_s=None).inferences
            for sc in (short(model="resnet50", phases=busy, arrival_jitter_ms=j) for j in (0.0, 1.0))]
    plain, jittered = ([r.latency_s for r in run] for run in runs)
    assert len(plain) == len(jittered)
    assert np.mean(jittered) > 1.1 * np.mean(plain)
    assert np.percentile(jittered, 99) > 1.5 * np.percentile(plain, 99)


def test_shipped_camera_jitter_scenarios_deliver_with_jitter():
    from edge_roofline.governor.eval.scenario import load_scenario, shipped_scenarios

    names = shipped_scenarios()
    for name in ("agx_camera_jitter", "agx_camera_jitter_p30"):
        assert name in names and load_scenario(name).arrival_jitter_ms > 0
    assert load_scenario("agx_camera_jitter_p30").physics_perturbation == 0.3
