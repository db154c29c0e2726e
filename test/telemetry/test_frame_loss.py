"""Frames lost upstream, from stamp gaps alone: the period is learned from the stream, jitter
is not loss, pauses and restarts are not loss, heavy loss is still counted."""

import random

import pytest

from edge_roofline.telemetry.diagnostics import OK, WARN
from edge_roofline.telemetry.frame_loss import LossSample, LossWindow, StampGapCounter, input_status

PERIOD_NS = 33_333_333  # 30 Hz


def feed(counter, indices, jitter_ns=0, seed=0, start_ns=1_700_000_000 * 10**9):
    """Frames ``indices`` of a 30 Hz stream; returns the frames counted lost, pending included."""
    rng = random.Random(seed)
    for i in indices:
        counter.observe(start_ns + i * PERIOD_NS + rng.randint(-jitter_ns, jitter_ns))
    return counter.lost + counter.pending


def test_counts_each_missing_frame_of_a_gap():
    counter = StampGapCounter()
    frames = [i for i in range(200) if i not in (50, 51, 52, 120, 180)]
    assert feed(counter, frames) == 5
    assert (counter.lost, counter.pending) == (4, 1)  # the last gap is under a second old: pending
    assert counter.period_s == pytest.approx(PERIOD_NS / 1e9, rel=1e-6)


def test_jitter_under_half_a_period_is_not_loss():
    counter = StampGapCounter()
    assert feed(counter, range(1000), jitter_ns=PERIOD_NS // 5, seed=1) == 0


@pytest.mark.parametrize("seed", range(3))
def test_random_loss_is_counted_exactly_with_jitter(seed):
    rng = random.Random(seed)
    frames = [i for i in range(3000) if i < 20 or rng.random() > 0.3]  # 30 % lost after warm-up
    counter = StampGapCounter()
    counted = feed(counter, frames, jitter_ns=PERIOD_NS // 6, seed=seed + 10)
    assert abs(counted - (frames[-1] + 1 - len(frames))) <= 3


def test_late_frames_sent_back_to_back_are_not_loss():
    """A publisher that stamps at publish time stalls for 4 periods, then sends the frames it
    owes at once (what a starved camera process does): nothing was lost."""
    counter = StampGapCounter()
    start_ns = 1_700_000_000 * 10**9
    stamps = [start_ns + i * PERIOD_NS for i in range(100)]
    stalled = stamps[:50] + [stamps[54] + k * 2_000_000 for k in range(5)] + stamps[55:]
    for stamp in stalled:
        counter.observe(stamp)
    assert counter.lost + counter.pending == 0


def test_missing_frames_count_as_lost_once_the_catch_up_time_passed():
    counter = StampGapCounter(catch_up_s=1.0)
    feed(counter, [i for i in range(40) if i not in (30, 31)])
    assert (counter.lost, counter.pending) == (0, 2)
    feed(counter, range(40, 80))  # 1.3 s later
    assert (counter.lost, counter.pending) == (2, 0)


def test_heavy_loss_still_learns_the_period():
    """Most frames lost (the case issue 14 found): a median of raw intervals would learn two or
    more periods and undercount; the estimator still finds one period."""
    rng = random.Random(4)
    frames = [i for i in range(3000) if rng.random() > 0.6]
    counter = StampGapCounter()
    counted = feed(counter, frames)
    warm = counter.min_intervals + 20  # a few gaps may go uncounted while the first intervals are learned
    missing_after_warmup = frames[-1] - frames[warm] - (len(frames) - 1 - warm)  # counted, pending included
    assert counter.period_s == pytest.approx(PERIOD_NS / 1e9, rel=1e-6)
    assert missing_after_warmup <= counted <= frames[-1] - frames[0] + 1 - len(frames)


def test_pause_and_restart_are_not_loss():
    counter = StampGapCounter(pause_s=2.0)
    feed(counter, range(100))
    assert counter.observe(1_700_000_000 * 10**9 + 99 * PERIOD_NS + 5 * 10**9) == 0  # 5 s later
    assert counter.pauses == 1
    assert counter.observe(10**9) == 0  # clock went back: a restarted camera or a replayed bag
    assert counter.restarts == 1 and counter.lost == 0
    assert counter.period_s is None  # learned again from the new stream


def test_repeated_stamp_is_not_a_gap():
    counter = StampGapCounter()
    feed(counter, range(50))
    assert counter.observe(1_700_000_000 * 10**9 + 49 * PERIOD_NS) == 0
    assert counter.lost == 0


def test_bad_settings_are_refused():
    with pytest.raises(ValueError, match="gap_factor"):
        StampGapCounter(gap_factor=1.0)
    with pytest.raises(ValueError, match="window"):
        StampGapCounter(window=4, min_intervals=8)


def test_diagnostics_warn_above_the_fraction_over_the_window_only():
    window = LossWindow(window_s=10.0)
    for t in range(12):  # 30 frames a second, none lost
        window.add(LossSample(float(t), 30 * t, 0, 0))
    status = input_status("inference: input /image", window, LossSample(11.0, 330, 0, 0), 0.01)
    assert status.level == OK
    for t in range(12, 15):  # 10 lost per second for 3 s
        window.add(LossSample(float(t), 330 + 20 * (t - 11), 10 * (t - 11), 8 * (t - 11)))
    totals = LossSample(14.0, 390, 30, 24)
    status = input_status("inference: input /image", window, totals, 0.01)
    assert status.level == WARN and "lost before the node" in status.message
    assert status.values["frames_lost_upstream"] == "30" and status.values["frames_lost_transport"] == "24"
    for t in range(15, 27):  # no loss for longer than the window: OK again
        window.add(LossSample(float(t), 390 + 30 * (t - 14), 30, 24))
    assert input_status("x", window, LossSample(26.0, 750, 30, 24), 0.01).level == OK
