"""What the governor learns by measuring where its model is wrong (issue 13): one step down a
single axis from the best point, points measured to meet, an exploration that misses left at
once and learned from, a slow stream measured before a point is left, and the power floor a
measured point sets under the points above it."""

from contextlib import contextmanager
from dataclasses import replace

from edge_roofline.governor.joint import predict_candidates
from edge_roofline.governor.points import effective_clocks
from edge_roofline.governor.policy import ChoiceSettings, Evidence, JointPrediction, Steps, StreamPrediction, choose
from edge_roofline.governor.predictor import Predictor
from edge_roofline.governor.rules import Dominance
from edge_roofline.platforms.base import OperatingPoint

from .fake_law import DEVICE, drive
from .test_multistream import STREAMS, make
from .test_multistream import drive as drive_streams
from .test_rules import grid, launch_bound_governor, launch_bound_latency_s

LIMIT_S = 0.010
SETTINGS = ChoiceSettings(hysteresis=0.03, explore=True, explore_min_rel_std=0.08)
CHOICE = dict(violations={}, settings=SETTINGS)


def point(name: str, latency_ms: float, power_w: float, model_rel_error: float = 0.0) -> JointPrediction:
    stream = StreamPrediction("default", latency_ms / 1e3, 0.05e-3, 30.0, LIMIT_S, 1.0, model_rel_error)
    return JointPrediction(OperatingPoint(name), (stream,), power_w, 0.01 * power_w)


def test_one_step_below_is_one_level_down_one_axis():
    points = grid()
    dominance = Dominance(DEVICE, points)
    keys = {p.name: effective_clocks(DEVICE, p) for p in points}

    def axes(name):
        c = keys[name]
        return c.cpu_freq_hz, c.gpu_freq_hz, c.emc_freq_hz, c.cpu_online_cores

    checked = 0
    for p in points:
        for name in dominance.step_below(p.name):
            here, there = axes(p.name), axes(name)
            differ = [k for k in range(4) if here[k] != there[k]]
            assert len(differ) == 1 and there[differ[0]] < here[differ[0]], (p.name, name)
            k = differ[0]
            between = [q.name for q in points if axes(q.name)[k] < here[k] and axes(q.name)[k] > there[k]
                       and all(axes(q.name)[j] == here[j] for j in range(4) if j != k)]
            assert not between, f"{name} is not the next level below {p.name}: {between}"
            checked += 1
    assert checked > len(points)  # most points have a step down on several axes


def test_a_step_down_is_explored_only_where_the_model_has_been_wrong():
    best = point("best", 8.0, 10.0)
    below = point("below", 11.0, 9.0)  # predicted 10 % over the limit
    steps = Steps(below=lambda n: {"best": {"below"}}.get(n) or set())
    trusted = choose([best, below], best, steps=steps, **CHOICE)
    assert trusted.prediction is best and not trusted.exploring
    wrong = point("below", 11.0, 9.0, model_rel_error=0.1)  # 2 x 10 %: within reach
    choice = choose([point("best", 8.0, 10.0, 0.1), wrong], best, steps=steps, **CHOICE)
    assert choice.exploring and choice.prediction is wrong and "one step down" in choice.reason
    # twice the model's error is the reach: 30 % over the limit is not tried
    far = point("below", 13.0, 9.0, model_rel_error=0.1)
    assert choose([best, far], best, steps=steps, **CHOICE).prediction is best


def test_a_point_measured_to_meet_is_feasible_whatever_the_model_says():
    here = point("here", 8.0, 10.0)
    cheap = point("cheap", 11.0, 8.0)  # predicted to miss
    options = dict(CHOICE, settings=replace(SETTINGS, explore=False))
    assert choose([here, cheap], here, **options).prediction is here
    assert choose([here, cheap], here, evidence=Evidence(met=frozenset({"cheap"})), **options).prediction is cheap


def test_an_exploration_that_misses_is_left_at_once(tmp_path):
    # A launch-bound model at a tight target: the first exploration misses; the minimum
    # interval between switches must not hold the governor there: it leaves once the evidence
    # is in (issue 28: a full window at most, after the move settled, not one late sample).
    gov, platform, clock = launch_bound_governor(tmp_path, 1.3)
    decisions = drive(gov, platform, clock, 10.0, rate_hz=60.0, latency_law=launch_bound_latency_s)
    times = [(i * 0.1, d) for i, d in enumerate(decisions) if d.applied]
    left = [(t1 - t0, d0.point.name) for (t0, d0), (t1, d1) in zip(times, times[1:])
            if d0.state == "exploring" and d1.reason.startswith("measured percentile")]
    assert left, [d.reason for _, d in times]
    evidence_s = gov.config.settle_s + (gov.config.min_window_samples + 1) / 60.0 + 0.1  # + a step
    assert all(dt < evidence_s for dt, _ in left), (left, evidence_s)
    assert any(dt < gov.config.safety.min_switch_interval_s + 0.1 for dt, _ in left), left


@contextmanager
def calibrations(stream):
    """The names of the points ``stream``'s predictor is fed a measurement at, in order."""
    calibrated_at, update = [], Predictor.update

    def record(predictor, point, *args, **kwargs):
        if predictor is stream.predictor:
            calibrated_at.append(point.name)
        return update(predictor, point, *args, **kwargs)

    Predictor.update = record
    try:
        yield calibrated_at
    finally:
        Predictor.update = update


def test_every_stream_is_measured_before_an_exploration_is_left(tmp_path):
    # A 5 Hz stream needs 2.4 s for its window: a point left once the 30 Hz one is measured
    # would teach the slow stream's predictor nothing.
    streams = {"det": STREAMS["det"], "seg": (5.0, 2.0, 60.0)}
    gov, platform, clock = make(tmp_path, streams)
    with calibrations(gov.streams["seg"]) as calibrated_at:
        decisions = drive_streams(gov, platform, clock, 30.0, streams=streams)
    explored = [d.point.name for d in decisions[:-30] if d.applied and d.state == "exploring"]
    assert explored
    assert set(explored) <= set(calibrated_at), sorted(set(explored) - set(calibrated_at))


def test_a_point_above_a_measured_one_is_never_predicted_to_draw_less():
    points = grid()
    dominance = Dominance(DEVICE, points)
    names = [p.name for p in points]
    powers = [10.0 + (k * 7) % 5 for k in range(len(points))]  # no order at all
    measured = next(i for i, p in enumerate(points) if len(dominance.above[i]) >= 5)
    powers[measured] = 30.0  # measured high: every point above it must be at least that
    unmeasured_high = next(i for i in range(len(points)) if i != measured and dominance.above[i]
                           and measured not in dominance.above[i])
    powers[unmeasured_high] = 40.0  # an extrapolation: it must not carry to the points above it
    out = dominance.power_envelope(powers, {names[measured]})
    for j in range(len(points)):
        if j in dominance.above[measured]:
            assert out[j] >= 30.0, names[j]
        else:
            assert out[j] == powers[j], names[j]


def test_a_point_that_met_the_targets_inside_the_margin_is_left_one_step_up():
    # Measured under every target but over target x (1 - margin): a point one step above it on
    # a single axis is at least as fast, so it meets the targets too; the cheapest is tried
    # even where the model predicts it misses the margin.
    best = point("best", 8.0, 12.0)
    near, up, far = point("near", 10.2, 9.0), point("up", 10.1, 9.5), point("far", 10.05, 11.0)
    measured = Evidence(measured=frozenset({"best", "near"}))
    without = choose([best, near, up, far], best, evidence=measured, **CHOICE)
    assert without.prediction is best and not without.exploring
    choice = choose([best, near, up, far], best, evidence=replace(measured, near=frozenset({"near"})),
                    steps=Steps(above=lambda n: {"up", "far"} if n == "near" else set()), **CHOICE)
    assert choice.exploring and choice.prediction is up and "one step above" in choice.reason


def test_a_step_above_the_model_predicts_no_nearer_the_margin_counts_as_measured():
    # More cores for GPU-bound work: the same predicted latency at more power. Measuring it
    # tells nothing the point below did not, and a window under the limit there by chance would
    # hold it: neither the step up from the point inside the margin nor a step down from the
    # best point goes there; the step up an axis the latency follows is tried.
    best = point("best", 8.0, 12.0)
    near, cores, clock = point("near", 10.2, 9.0), point("cores", 10.2, 9.3), point("clock", 10.1, 9.5)
    options = dict(CHOICE, evidence=Evidence(measured=frozenset({"best", "near"}), near=frozenset({"near"})))
    choice = choose([best, near, cores, clock], best, steps=Steps(above=lambda n: {"cores", "clock"} if n == "near"
                                                                  else set()), **options)
    assert choice.exploring and choice.prediction is clock
    down = choose([best, near, point("cores", 10.2, 9.3, model_rel_error=0.5)], best,
                  steps=Steps(above=lambda n: {"cores"} if n == "near" else set(),
                              below=lambda n: {"cores"} if n == "best" else set()), **options)
    assert down.prediction is best and not down.exploring


def test_one_step_above_mirrors_one_step_below():
    dominance = Dominance(DEVICE, grid())
    pairs_up = {(p.name, q) for p in dominance.points for q in dominance.step_above(p.name)}
    pairs_down = {(q, p.name) for p in dominance.points for q in dominance.step_below(p.name)}
    assert pairs_up and pairs_up == pairs_down


def test_a_point_left_after_a_miss_teaches_the_model_its_samples(tmp_path):
    # Under half the GPU clock this device is 3x slower (a cliff the model's features lack): a
    # miss there shows in a few samples and is escaped before a window fills. Unless those
    # samples reach the predictor, the model still ranks every point like it as promising and
    # the same miss comes again, point after point (seven times in these 10 s without them).
    def cliff_latency_s(p, scale=1.0):
        slow = (p.gpu_max_freq_hz or DEVICE.gpu_max_freq_hz) < 0.6 * DEVICE.gpu_max_freq_hz
        return launch_bound_latency_s(p, scale) * (3.0 if slow else 1.0)

    gov, platform, clock = launch_bound_governor(tmp_path, 2.0)
    with calibrations(gov.streams["default"]) as calibrated_at:
        decisions = drive(gov, platform, clock, 10.0, rate_hz=30.0, latency_law=cliff_latency_s)
    applied = [d for d in decisions if d.applied]
    missed = [d0.point.name for d0, d1 in zip(applied, applied[1:])
              if d0.state == "exploring" and d1.reason.startswith("measured percentile")]
    assert missed, [d.reason for d in applied]
    assert set(missed) <= set(calibrated_at), sorted(set(missed) - set(calibrated_at))
    assert len(missed) <= 3, missed


def test_each_prediction_carries_the_power_of_the_measured_points_it_dominates(tmp_path):
    # The floor the uncertain-point exploration is held to (policy.JointPrediction.power_low_w):
    # the most any measured point under it (itself included) draws, predicted there; none: 0.
    gov, platform, clock = launch_bound_governor(tmp_path, 1.3)
    drive(gov, platform, clock, 5.0, rate_hz=60.0, latency_law=launch_bound_latency_s)
    measured = gov.findings.measured
    assert len(measured) >= 2
    streams = [(s, None, s.limit_s(gov.config.margin)) for s in gov.streams.values()]
    window_s = gov.config.late_window_s
    preds = predict_candidates(gov.candidates, gov.dominance, streams, gov.energy, measured, late_window_s=window_s)
    raw = {p.point.name: p.power_w for p in predict_candidates(gov.candidates, gov.dominance, streams,
                                                                 gov.energy, set(), late_window_s=window_s)}
    below = {p.point.name: [q.name for i, q in enumerate(gov.candidates)
                            if q.name in measured and (k in gov.dominance.above[i] or k == i)]
             for k, p in enumerate(preds)}
    assert any(below.values())
    for p in preds:
        assert p.power_floor_w == max((raw[n] for n in below[p.point.name]), default=0.0), p.point.name


def test_a_miss_teaches_its_service_times_not_its_queue(tmp_path):
    # 20 ms inferences arriving every 16.7 ms queue: each finishes one service after the last,
    # and the first waited behind the move's own inferences (52 ms). The model learns 20 ms.
    gov, platform, clock = launch_bound_governor(tmp_path, 1.3)
    drive(gov, platform, clock, 1.0, rate_hz=60.0, latency_law=launch_bound_latency_s)
    stream = gov.streams["default"]
    stream.latencies.clear()
    for k, latency_s in enumerate((0.052, 0.0233, 0.0267)):
        stream.latencies.append((10.0 + 0.020 * k, latency_s))
    fed = []
    update = Predictor.update

    def record(predictor, point, latency_s, *args, **kwargs):
        fed.append(latency_s)
        return update(predictor, point, latency_s, *args, **kwargs)

    Predictor.update = record
    try:
        gov.learned._learn_from_miss(gov.current, [stream], [stream])
    finally:
        Predictor.update = update
    assert len(fed) == 1 and abs(fed[0] - 0.020) < 1e-6, fed


def test_a_step_under_a_point_measured_inside_the_margin_is_tried_only_from_a_measured_best():
    # Nothing under a point measured over its limit (near) meets the limit: the step down there is
    # a bet on the model's error in that step, taken from a best point measured to meet, not from
    # one only predicted to (agx_batch_change@seed24: 4 late from such a step, 1.44 % late).
    best, below = point("best", 8.0, 10.0, 0.1), point("below", 11.0, 9.0, model_rel_error=0.1)
    options = dict(CHOICE, steps=Steps(below=lambda n: {"below"} if n == "best" else set()))
    assert choose([best, below], best, **options).prediction is below  # under no near point: tried
    under = Evidence(under_near=frozenset({"below"}))
    held = choose([best, below], best, evidence=under, **options)
    assert held.prediction is best and not held.exploring
    tried = choose([best, below], best, evidence=replace(under, met=frozenset({"best"})), **options)
    assert tried.exploring and tried.prediction is below and "one step down" in tried.reason
