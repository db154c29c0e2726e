"""Streams that come and go (issue 13): a slow stream does not hold every exploration back, a
stream that stops leaves after some of its own periods, and a mix of streams that comes back
starts from what was measured under it. The scripted law of test_multistream, simulated time."""

import numpy as np

from edge_roofline.governor.config import GovernorConfig, StreamConfig
from edge_roofline.governor.findings import Findings, MixMemory
from edge_roofline.governor.streams import SILENT_PERIODS, Stream, StreamWindow

from .test_multistream import drive, make


def test_a_slow_stream_calibrates_on_fewer_samples_once_another_is_measured(tmp_path):
    # det at 30 Hz fills its 12-sample window in 0.4 s; seg at 10 Hz needs 1.2 s for 12, 0.6 s for 6
    first_move_s = {}
    for samples in (6, 12):
        gov, platform, clock = make(tmp_path / str(samples), min_calibration_samples=samples)
        decisions = drive(gov, platform, clock, 5.0)  # a decision every 0.1 s
        first_move_s[samples] = 0.1 * (1 + next(i for i, d in enumerate(decisions) if d.applied))
    assert first_move_s[6] < 12 / 10.0 <= first_move_s[12], first_move_s


def test_a_stream_not_yet_measured_in_full_is_judged_by_its_worst_sample():
    s = Stream(StreamConfig("seg", 60.0))
    few = StreamWindow(np.array([0.01, 0.05, 0.02]), 10.0)
    full = StreamWindow(np.linspace(0.01, 0.02, 20), 10.0)
    assert s.judged_percentile_s(None, few) == 0.05
    assert s.judged_percentile_s(full, few) == s.measured_percentile_s(full) < 0.02
    assert s.judged_percentile_s(None, None) is None


def test_a_stream_leaves_after_the_timeout_and_some_of_its_own_periods():
    s = Stream(StreamConfig("seg", 60.0))
    assert s.silence_limit_s(1.0) == 1.0  # period unknown: the configured timeout
    s.last_gap_s = 0.5  # before its rate is calibrated: the last gap between two inferences
    assert s.silence_limit_s(1.0) == SILENT_PERIODS * 0.5
    s.calibrated_rate_hz = 15.0
    assert s.silence_limit_s(1.0) == 1.0 and s.silence_limit_s(3.0) == 3.0
    s.calibrated_rate_hz = 0.5  # a language model at 0.5 Hz is not dropped between frames
    assert s.silence_limit_s(1.0) == SILENT_PERIODS * 2.0


def test_a_silent_stream_drops_out_after_the_timeout_not_the_old_three_seconds(tmp_path):
    gov, platform, clock = make(tmp_path, stream_timeout_s=GovernorConfig().stream_timeout_s)
    drive(gov, platform, clock, 20.0)
    decisions = drive(gov, platform, clock, 1.5, silent=("seg",))  # 15 of its 10 Hz periods
    assert not next(s for s in decisions[-1].streams if s.name == "seg").active


def test_a_mix_that_comes_back_starts_from_what_was_measured_under_it(tmp_path):
    gov, platform, clock = make(tmp_path)
    drive(gov, platform, clock, 30.0)
    drive(gov, platform, clock, 30.0, silent=("seg",))
    alone = gov.findings.copy()
    assert alone.met  # the detector alone: points measured to meet its target
    drive(gov, platform, clock, 30.0)  # the segmenter is back: another mix, other findings
    assert gov.streams["seg"].active and gov.findings.met != alone.met
    decisions = drive(gov, platform, clock, 1.5, silent=("seg",))  # make(): stream_timeout_s 2 s
    assert next(s for s in decisions[-1].streams if s.name == "seg").active
    decisions = drive(gov, platform, clock, 1.0, silent=("seg",))
    assert not next(s for s in decisions[-1].streams if s.name == "seg").active
    # Right after the drop-out the detector-alone findings are back (grown by at most a step).
    assert alone.met <= gov.findings.met and alone.measured <= gov.findings.measured


def test_mix_memory_keeps_copies():
    memory = MixMemory()
    a, b = frozenset({("det", "m")}), frozenset({("det", "m"), ("seg", "n")})
    found = Findings(20.0, measured={"p1"}, met={"p1"})
    assert memory.switch(a, b, found) == Findings(20.0)  # b never seen
    found.met.add("p2")  # what the governor does next under a is not what a kept
    assert memory.switch(b, a, Findings(20.0, measured={"p3"})) == Findings(20.0, measured={"p1"}, met={"p1"})
    memory.clear()
    assert memory.switch(b, a, Findings(20.0)) == Findings(20.0)
