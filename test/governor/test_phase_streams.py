"""A language model governed per phase: two streams on one generation node's stats, one judging
time to first token (prefill), the other time per output token (decode), each with the prior of
its phase's step. No ROS."""

import pytest

from edge_roofline.clock import SimClock
from edge_roofline.governor.config import ConfigError, GovernorConfig, parse_streams
from edge_roofline.governor.runtime import GovernorRuntime
from edge_roofline.virtual.live import LiveVirtualJetson
from test.governor.test_crash_record import runtime_params
from test.nodes.virtual_rig import DEVICE

PHASE_STREAMS = ("[{name: ttft, stats_topic: /llm/inference/stats, phase: prefill, target_latency_ms: 300},"
                 " {name: tpot, stats_topic: /llm/inference/stats, phase: decode, target_latency_ms: 60}]")


def test_a_stream_phase_is_prefill_decode_or_empty():
    ttft, tpot = parse_streams(PHASE_STREAMS)
    assert (ttft.phase, tpot.phase) == ("prefill", "decode")
    assert GovernorConfig().stream_configs[0].phase == ""
    with pytest.raises(ConfigError, match="stream tpot: phase must be prefill or decode.*got 'decoding'"):
        parse_streams("[{name: tpot, phase: decoding, target_latency_ms: 60}]")


@pytest.fixture
def runtime(tmp_path):
    root = tmp_path / "virtual_agx_orin"
    LiveVirtualJetson(root, DEVICE)
    rt = GovernorRuntime(runtime_params(root, mode="advise", model="", streams=PHASE_STREAMS), SimClock(0.0),
                         log=list().append)
    yield rt
    rt.close()


def test_each_phase_stream_takes_only_its_phase_and_judges_ttft_or_tpot(runtime):
    gov = runtime.governor
    # A prefill step of 50 ms that answered 400 ms after its request: over the TTFT target (the
    # queue counts), while its own 50 ms would not be. Decode steps go to the other stream only.
    assert runtime.observe_stats("ttft", "zoo:tiny_decoder", 0.050, 1.0, "prefill", 0.400)
    assert not runtime.observe_stats("ttft", "zoo:tiny_decoder", 0.080, 1.1, "decode", 0.480)
    assert [lat for _, lat in gov.streams["ttft"].latencies] == [0.400]
    # TPOT: the step's own time (80 ms over 60 ms), whatever its time since the request.
    assert runtime.observe_stats("tpot", "zoo:tiny_decoder", 0.080, 1.1, "decode", 0.480)
    assert not runtime.observe_stats("tpot", "zoo:tiny_decoder", 0.050, 1.0, "prefill", 0.400)
    assert not runtime.observe_stats("tpot", "zoo:tiny_cnn", 0.010, 1.2, "", 0.010)  # a camera frame
    assert [lat for _, lat in gov.streams["tpot"].latencies] == [0.080]


def test_each_phase_stream_gets_its_phases_roofline(runtime):
    for stream, phase in (("ttft", "prefill"), ("tpot", "decode")):
        runtime.observe_stats(stream, "zoo:tiny_decoder", 0.01, 0.0, phase, 0.01)
        runtime.models[stream].wait()
    assert len(runtime.follow_models()) == 2
    analyses = {name: s.predictor.workload.analysis for name, s in runtime.governor.streams.items()}
    intensity = {name: a.total_flops / a.total_bytes for name, a in analyses.items()}
    # Prefill of 128 tokens reuses each weight 128 times; a decode step reads each once per token.
    assert intensity["ttft"] > 20 * intensity["tpot"], intensity


def test_a_language_model_back_after_a_gap_comes_back_as_one_workload(runtime):
    """After its first answer a language model falls silent (no request rate known yet) and
    leaves; its next prefill brings both phases back as one workload: the decode step after it
    must not count as a second change that clears the time to first token just taken."""
    gov = runtime.governor
    gap_s = gov.config.stream_timeout_s + 1.0
    for start_s in (1.0, 1.0 + 2 * gap_s):
        runtime.observe_stats("ttft", "zoo:tiny_decoder", 0.050, start_s, "prefill", 0.050)
        for k in range(1, 4):
            runtime.observe_stats("tpot", "zoo:tiny_decoder", 0.010, start_s + 0.01 * k, "decode", 0.010)
        gov.step(start_s + gap_s)
        if start_s == 1.0:
            assert not any(s.active for s in gov.streams.values())  # silent: the model left
    assert [lat for _, lat in gov.streams["ttft"].latencies] == [0.050]


@pytest.mark.parametrize("gap_s, calibrates", [(4.0, True), (1.0, False)])
def test_a_slow_prefill_calibrates_on_one_time_to_first_token(gap_s, calibrates):
    """Requests further apart than a dwell: a second time to first token would hold the point a
    request longer, so one calibrates the prefill's mean (at the rate of the gap before it)."""
    from edge_roofline.governor.streams import Stream

    dwell_s = GovernorConfig().dwell_s
    assert 1.0 < dwell_s < 4.0
    ttft = Stream(parse_streams(PHASE_STREAMS)[0])
    for t_s in (10.0, 10.0 + gap_s):
        ttft.note_seen(t_s)
    ttft.add_judged(10.0 + gap_s, 0.050, 30.0)
    window = ttft.calibration_window(ttft.config.calibration_samples(6), dwell_s)
    assert (window is not None) == calibrates
    if calibrates:
        assert list(window.latencies_s) == [0.050] and window.rate_hz == pytest.approx(1.0 / gap_s)
    tpot = Stream(parse_streams(PHASE_STREAMS)[1])  # a decode step is no request: it waits for its samples
    for t_s in (10.0, 10.0 + gap_s):
        tpot.note_seen(t_s)
    tpot.add_judged(10.0 + gap_s, 0.010, 30.0)
    assert tpot.calibration_window(tpot.config.calibration_samples(6), dwell_s) is None
