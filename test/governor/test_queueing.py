"""Queueing in the latency model: a periodic stream's inputs wait behind its running inference,
so near a full input period the latency percentile is waiting plus service. Checked against a
simulated FIFO queue (Lindley's recursion) fed the way the governor is fed: each inference's
end-to-end latency and its finish time."""

import math

import numpy as np
import pytest

from edge_roofline.governor.policy import ChoiceSettings, JointPrediction, StreamPrediction, choose
from edge_roofline.governor.queueing import TAIL_SHARE, QueueShape, measure, rate_change_at
from edge_roofline.platforms.base import OperatingPoint

SERVICE_S = 4e-3  # mean service time
PERCENTILE = 95.0


def simulate(utilisation: float, service_sigma: float, arrival_sigma: float, n: int, seed: int,
             outlier_probability: float = 0.0) -> tuple[np.ndarray, np.ndarray]:
    """(finish times, end-to-end latencies) of a FIFO queue: lognormal service times of mean
    SERVICE_S (now and then 2-5x longer), arrivals every SERVICE_S / utilisation on average
    (lognormal gaps; sigma 0: periodic)."""
    rng = np.random.default_rng(seed)
    service = np.exp(rng.normal(-service_sigma ** 2 / 2, service_sigma, n))
    slow = rng.random(n) < outlier_probability
    service[slow] *= rng.uniform(2.0, 5.0, int(slow.sum()))
    service *= SERVICE_S / (1.0 + 2.5 * outlier_probability)
    gaps = np.exp(rng.normal(-arrival_sigma ** 2 / 2, arrival_sigma, n)) * SERVICE_S / utilisation
    arrival = np.cumsum(gaps)
    finish = np.empty(n)
    free_s = -math.inf
    for i in range(n):
        free_s = finish[i] = max(arrival[i], free_s) + service[i]
    return finish, finish - arrival


def stream(measured, rate_hz: float, limit_s: float = 1.0) -> StreamPrediction:
    return StreamPrediction("s", measured.service_mean_s, 0.0, rate_hz, limit_s, measured.jitter_ratio,
                            percentile=PERCENTILE, queue=measured.shape)


def rate_hz(utilisation: float) -> float:
    return utilisation / SERVICE_S


@pytest.mark.parametrize("service_sigma, arrival_sigma", [(0.3, 0.0), (0.1, 0.2), (0.03, 0.5), (0.0, 0.3)])
def test_at_95_percent_utilisation_the_model_predicts_the_queueing_tail(service_sigma, arrival_sigma):
    # Calibrated where nothing waits (30 %), predicted at 95 %: the service time's spread and the
    # arrivals' are what the model takes from the measurements.
    finish, latency = simulate(0.3, service_sigma, arrival_sigma, 3000, seed=1)
    calibrated = measure(finish, latency, PERCENTILE, rate_hz(0.3))
    _, true_latency = simulate(0.95, service_sigma, arrival_sigma, 100_000, seed=2)
    true_s = float(np.percentile(true_latency, PERCENTILE))
    predicted_s = stream(calibrated, rate_hz(0.95)).percentile_s()
    assert true_s > 1.15 * calibrated.service_mean_s * calibrated.jitter_ratio  # the queue matters here
    assert predicted_s == pytest.approx(true_s, rel=0.15)


def test_a_tail_longer_than_kingman_is_learned_where_the_stream_waits():
    # Rare 2-5x inferences at 95 %: each one leaves a backlog that drains over many periods, a
    # tail two moments miss; windows measured at that load teach the model how long it is.
    _, true_latency = simulate(0.95, 0.03, 0.0, 200_000, seed=3, outlier_probability=0.002)
    true_s = float(np.percentile(true_latency, PERCENTILE))
    shape, measured = QueueShape(), None
    finish, latency = simulate(0.95, 0.03, 0.0, 12_000, seed=4, outlier_probability=0.002)
    for window in range(10):
        part = slice(window * 1200, (window + 1) * 1200)
        measured = measure(finish[part], latency[part], PERCENTILE, rate_hz(0.95), shape)
        shape = measured.shape
    assert shape.wait_scale > 1.2
    assert stream(measured, rate_hz(0.95)).percentile_s() == pytest.approx(true_s, rel=0.15)


def test_service_times_are_recovered_from_end_to_end_latencies():
    # What the governor calibrates its service-time model with: at 95 % the latencies include
    # the waiting, the service times recovered from them do not.
    finish, latency = simulate(0.95, 0.3, 0.0, 5000, seed=5)
    measured = measure(finish, latency, PERCENTILE, rate_hz(0.95))
    assert latency.mean() > 1.3 * SERVICE_S
    assert measured.service_mean_s == pytest.approx(SERVICE_S, rel=0.03)


@pytest.mark.parametrize("service_sigma", [0.0, 0.05, 0.3])
def test_at_low_utilisation_the_prediction_is_the_service_time_percentile(service_sigma):
    finish, latency = simulate(0.2, service_sigma, 0.0, 3000, seed=6)
    measured = measure(finish, latency, PERCENTILE, rate_hz(0.2))
    s = stream(measured, rate_hz(0.2))
    assert s.percentile_s() == pytest.approx(s.latency_s * s.jitter_ratio, rel=1e-12)
    assert s.percentile_s() == pytest.approx(float(np.percentile(latency, PERCENTILE)), rel=0.02)


def test_the_policy_does_not_choose_a_point_whose_queue_misses_the_target():
    # Two points for a 250 Hz stream (4 ms period), p95 limit 6 ms. The cheaper one serves in
    # 3.72 ms (93 % of the period): its service-time percentile (4.8 ms) meets the limit, its
    # queue does not; the other serves in 3 ms (75 %).
    finish, latency = simulate(0.3, 0.15, 0.1, 3000, seed=7)
    shape = measure(finish, latency, PERCENTILE, rate_hz(0.3)).shape
    limit_s, jitter = 6e-3, 1.3

    def point(name: str, service_s: float, power_w: float) -> JointPrediction:
        s = StreamPrediction("s", service_s, 0.0, 250.0, limit_s, jitter, percentile=PERCENTILE, queue=shape)
        return JointPrediction(OperatingPoint(name), (s,), power_w, 0.01)

    busy, roomy = point("busy", 3.72e-3, 10.0), point("roomy", 3.0e-3, 12.0)
    assert busy.streams[0].latency_s * jitter <= limit_s  # the service time alone would pass
    assert busy.streams[0].percentile_s() > limit_s
    choice = choose([busy, roomy], roomy, violations={},
                    settings=ChoiceSettings(hysteresis=0.03, explore=False, explore_min_rel_std=0.08))
    assert choice.prediction is roomy


def test_a_point_whose_queue_puts_more_than_the_tail_share_over_the_target_is_not_chosen():
    # Issue 28's case: 3 % jitter, 0.2 % of inferences 2-5x long, 96 % of the period busy: the
    # p95 meets its limit, but the backlogs the long ones leave put more than 1 % of inferences
    # over the target. Learned from windows at that load, the model sees it.
    rho, target_s = 0.96, 3.5 * SERVICE_S
    limit_s = 0.95 * target_s
    _, true_latency = simulate(rho, 0.03, 0.0, 300_000, seed=3, outlier_probability=0.002)
    assert np.percentile(true_latency, PERCENTILE) <= limit_s and np.mean(true_latency > target_s) > TAIL_SHARE
    finish, latency = simulate(rho, 0.03, 0.0, 12_500, seed=4, outlier_probability=0.002)
    measured = None
    for window in range(10):
        part = slice(window * 1250, (window + 1) * 1250)
        measured = measure(finish[part], latency[part], PERCENTILE, rate_hz(rho),
                           measured.shape if measured else QueueShape())

    def point(name: str, utilisation: float, power_w: float) -> JointPrediction:
        s = StreamPrediction("s", SERVICE_S, 0.0, rate_hz(utilisation), limit_s, measured.jitter_ratio,
                             percentile=PERCENTILE, queue=measured.shape, target_s=target_s)
        return JointPrediction(OperatingPoint(name), (s,), power_w, 0.01)

    busy, roomy = point("busy", rho, 10.0), point("roomy", 0.8, 10.5)
    assert busy.streams[0].percentile_s() <= limit_s  # the percentile alone would pass
    assert not busy.meets() and roomy.meets()
    choice = choose([busy, roomy], busy, violations={},
                    settings=ChoiceSettings(hysteresis=0.03, explore=False, explore_min_rel_std=0.08))
    assert choice.prediction is roomy


def test_a_self_paced_stream_waits_for_nothing_at_a_slower_point():
    # A decoder's steps: each issued the moment the previous one finished, so the rate measured
    # is the service time's own and a slower point lowers it; nothing queues. The same rate of
    # periodic inputs at a 1.2x slower point would be an unstable queue.
    rng = np.random.default_rng(3)
    service = SERVICE_S * rng.uniform(0.97, 1.03, 200)
    finish = np.cumsum(service)
    closed = measure(finish, service, PERCENTILE, 1.0 / SERVICE_S)
    assert closed.shape.self_paced
    slower_s = 1.2 * closed.service_mean_s
    assert stream(closed, 1.0 / SERVICE_S).percentile_s() == pytest.approx(closed.service_mean_s * closed.jitter_ratio)
    assert math.isfinite(StreamPrediction("s", slower_s, 0.0, 1.0 / SERVICE_S, 1.0, closed.jitter_ratio,
                                          percentile=PERCENTILE, queue=closed.shape).percentile_s())
    finish, latency = simulate(0.3, 0.03, 0.0, 400, seed=4)
    periodic = measure(finish, latency, PERCENTILE, rate_hz(0.3))
    assert not periodic.shape.self_paced
    assert math.isinf(stream(periodic, 1.2 / SERVICE_S).percentile_s())


def arrivals(rates_hz: list[tuple[float, int]], jitter: float = 0.0, seed: int = 0) -> np.ndarray:
    """Arrival times: ``count`` periods of each ``(rate, count)`` in turn (exponential gaps
    where ``jitter`` is None)."""
    rng = np.random.default_rng(seed)
    gaps = np.concatenate([(rng.exponential(1.0, n) if jitter is None else np.ones(n)) / hz for hz, n in rates_hz])
    return np.cumsum(gaps)


def test_a_rate_change_is_placed_at_its_first_arrival_once_min_samples_show_it():
    # 15 -> 60 Hz: the window's average creeps over seconds; the split finds the first 60 Hz
    # arrival as soon as 12 arrivals are at 60 Hz, and not before.
    t = arrivals([(15.0, 40), (60.0, 11)])
    assert rate_change_at(t, 12, 0.3) == pytest.approx(t[39])
    assert rate_change_at(t[:-1], 12, 0.3) is None  # 11 arrivals at the new rate
    down = arrivals([(60.0, 60), (30.0, 11)])  # and a fall
    assert rate_change_at(down, 12, 0.3) == pytest.approx(down[59])
    assert rate_change_at(arrivals([(60.0, 60), (70.0, 30)]), 12, 0.3) is None  # under rate_change_rel


def test_a_burst_of_slow_inferences_where_frames_are_dropped_is_no_rate_change():
    # A camera whose frames are dropped while the node is busy: four inferences 5x slower
    # stretch four gaps among the last 12 (their mean doubles); the rate did not move.
    assert rate_change_at(arrivals([(40.0, 40), (8.0, 4), (40.0, 8)]), 12, 0.3) is None
    assert rate_change_at(arrivals([(40.0, 40), (8.0, 12)]), 12, 0.3) is not None  # sustained: a change


@pytest.mark.parametrize("seed", range(20))
def test_random_arrivals_at_one_rate_are_no_rate_change(seed):
    # Exponential gaps: 12 of them average within 30 % of the rate only by luck; the gaps' own
    # spread is what the split must beat.
    assert rate_change_at(arrivals([(60.0, 300)], jitter=None, seed=seed), 12, 0.3) is None


def test_a_step_down_is_not_tried_where_the_predicted_service_time_overruns_the_period():
    # 17.8 ms predicted at 60 Hz (period 16.7 ms): the model's 20 % error would reach a point that
    # meets the target, but at the prediction the queue grows until the escape (31 late).
    def at(latency_s, self_paced=False):
        return StreamPrediction("s", latency_s, 0.5e-3, 60.0, 19e-3, 1.05, model_rel_error=0.2,
                                queue=QueueShape(self_paced=self_paced), target_s=20e-3)
    assert not at(17.8e-3).within_model_error()
    assert at(14.8e-3).within_model_error()  # the queue bounded at the prediction: tried
    assert at(17.8e-3, self_paced=True).within_model_error()  # its rate follows the point: nothing queues


def test_an_outlier_in_a_short_window_does_not_stretch_the_service_time():
    # nx_rate_changes@10: the first window at MAXN (12 inferences at 15 Hz) held a 5x outlier and
    # a 3x one; counted in the mean and spread, every slower point was predicted to miss and the
    # governor sat at MAXN for its whole dwell. The outliers are BurstMeter's to price.
    period_s, service_s = 1 / 15, 8.9e-3
    service = np.full(12, service_s)
    service[6], service[7] = 5 * service_s, 3 * service_s
    finish = np.arange(12) * period_s + service
    measured = measure(finish, service.copy(), PERCENTILE, 15.0)
    assert measured.service_mean_s == pytest.approx(service_s, rel=0.01)
    assert measured.jitter_ratio == pytest.approx(1.0, abs=0.01)
    # A two-speed spread (a neighbour's frame every other inference, 2.2x) is the point's own.
    two_speed = np.where(np.arange(12) % 2 == 0, service_s, 2.2 * service_s)
    finish = np.arange(12) * period_s + two_speed
    assert measure(finish, two_speed.copy(), PERCENTILE, 15.0).service_mean_s == pytest.approx(1.6 * service_s)
