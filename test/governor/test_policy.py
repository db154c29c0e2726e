"""The policy on hand-made predictions: hysteresis, provisional points, feedback from a miss, the
utilisation rule and exploration."""

from edge_roofline.governor.policy import choose
from edge_roofline.governor.predictor import Prediction
from edge_roofline.platforms.base import OperatingPoint


def pred(name: str, latency_ms: float, energy_mj: float, *, latency_std_ms: float = 0.1,
         energy_std_mj: float = 1.0, rate_hz: float = 30.0) -> Prediction:
    return Prediction(OperatingPoint(name), latency_ms / 1e3, latency_std_ms / 1e3, energy_mj * rate_hz / 1e3,
                      energy_mj / 1e3, energy_std_mj / 1e3, rate_hz)


CHOICE = dict(limit_s=0.019, jitter_ratio=1.03, violation_scale=None, hysteresis=0.03, explore=False,
              explore_min_rel_std=0.08)


def test_hysteresis_holds_a_chosen_point_but_not_a_provisional_one():
    current, cheaper = pred("here", 15, 110.2), pred("there", 16, 109.0)  # 1 % cheaper
    assert choose([current, cheaper], current, **CHOICE).prediction is current
    moved = choose([current, cheaper], current, provisional=True, **CHOICE)
    assert moved.prediction is cheaper and not moved.exploring
    # a provisional point that is predicted the best stays
    assert choose([current, pred("there", 16, 111.0)], current, provisional=True, **CHOICE).prediction is current


def test_a_big_enough_saving_moves_even_a_held_point():
    current, cheaper = pred("here", 15, 110), pred("there", 16, 100)
    assert choose([current, cheaper], current, **CHOICE).prediction is cheaper


def test_a_miss_allows_only_points_faster_by_the_measured_factor():
    current = pred("here", 15, 100)
    slow_cheap, fast = pred("slow", 18, 80), pred("fast", 10, 130)
    choice = choose([current, slow_cheap, fast], current, **{**CHOICE, "violation_scale": 1.3})
    assert choice.prediction is fast and "faster point" in choice.reason


def test_points_too_slow_for_the_input_period_are_not_feasible():
    # 18 ms at 60 Hz keeps the device 108 % busy: under the latency limit, but it queues
    current = pred("here", 12, 120, rate_hz=60)
    queueing = pred("queueing", 18, 90, rate_hz=60)
    assert choose([current, queueing], current, **CHOICE).prediction is current


def test_exploration_picks_the_cheapest_uncertain_unmeasured_point():
    current = pred("here", 12, 120)
    sure = pred("sure", 14, 110, energy_std_mj=1.0)
    shaky_cheap, shaky_dear = pred("a", 14, 112, energy_std_mj=15), pred("b", 13, 116, energy_std_mj=30)
    explore = {**CHOICE, "explore": True}
    choice = choose([current, sure, shaky_cheap, shaky_dear], current, **explore)
    assert choice.exploring and choice.prediction is shaky_cheap
    measured = choose([current, sure, shaky_cheap, shaky_dear], current, measured=frozenset({"a"}), **explore)
    assert measured.prediction is shaky_dear
