"""Several streams on one operating point (issue 13): every stream's target held at least power,
contention in the prediction, per-stream targets and status, streams dropping out and coming
back. A scripted law on simulated time: each stream's GPU time stretches while the other's
kernels hold the GPU (the law's own processor sharing, not the virtual Jetson's physics)."""

import math
import random

import numpy as np
import pytest

from edge_roofline.clock import SimClock
from edge_roofline.governor.config import ConfigError, GovernorConfig, StreamConfig, parse_streams
from edge_roofline.governor.core import Governor
from edge_roofline.governor.joint import contended, contention, StreamLoad
from edge_roofline.governor.predictor import Prediction
from edge_roofline.platforms.base import OperatingPoint

from .fake_law import LawPlatform, law_latency_s, law_power_w
from .test_governor import analysis

# stream: (rate Hz, scale of the law's latency, target ms)
STREAMS = {"det": (30.0, 1.0, 25.0), "seg": (10.0, 2.0, 60.0)}


def make(tmp_path, streams=STREAMS, **cfg):
    clock = SimClock(100.0)
    platform = LawPlatform()
    config = GovernorConfig.from_dict({
        "state_path": str(tmp_path / "state.json"), "stream_timeout_s": 2.0,
        "streams": [{"name": n, "target_latency_ms": t} for n, (_, _, t) in streams.items()], **cfg})
    return Governor(platform, config, analysis(), clock), platform, clock


def solo_s(point, scale):
    return law_latency_s(point, scale)


def drive(gov, platform, clock, duration_s, streams=STREAMS, dt_s=0.1, seed=0, silent=()):
    """Every stream at its rate; a stream's latency is its law stretched by the others' GPU
    share (1 / (1 - U_others)); ``silent``: streams that publish nothing."""
    rng = random.Random(seed)
    decisions, end = [], clock.now_s() + duration_s
    next_at = {n: clock.now_s() for n in streams}
    while clock.now_s() < end - 1e-9:
        t0 = clock.now_s()
        live = {n: v for n, v in streams.items() if n not in silent}
        share = {n: r * solo_s(platform.current, k) for n, (r, k, _) in live.items()}
        busy = 0.0
        for name, (rate, scale, _) in live.items():
            others = min(sum(share.values()) - share[name], 0.9)
            while next_at[name] < t0 + dt_s:
                lat = solo_s(platform.current, scale) / (1 - others) * math.exp(rng.gauss(0, 0.04))
                gov.observe_inference(lat, next_at[name] + lat, stream=name)
                busy += lat
                next_at[name] += max(1.0 / rate, lat)
        for name in silent:
            next_at[name] = t0 + dt_s
        clock.advance(dt_s)
        gov.observe_power(law_power_w(platform.current, min(1.0, busy / dt_s)), clock.now_s(), {"tj-thermal": 50.0})
        decisions.append(gov.step(clock.now_s()))
    return decisions


def true_power_w(point, streams=STREAMS):
    return law_power_w(point, min(1.0, sum(r * solo_s(point, k) for r, k, _ in streams.values())))


def test_one_point_holds_every_stream_at_less_power(tmp_path):
    gov, platform, clock = make(tmp_path)
    decisions = drive(gov, platform, clock, 60.0)
    last = decisions[-1]
    assert platform.current != platform.found
    assert true_power_w(platform.current) < 0.85 * true_power_w(platform.found)
    by_name = {s.name: s for s in last.streams}
    assert set(by_name) == {"det", "seg"} and all(s.active and s.met for s in by_name.values()), last.streams
    for name, (_, _, target_ms) in STREAMS.items():
        viol = np.mean([next(s for s in d.streams if s.name == name).violation_rate for d in decisions[-100:]])
        assert viol < 0.05, (name, viol)
        assert by_name[name].measured_latency_s < target_ms / 1e3
    assert last.binding_stream in STREAMS and math.isfinite(last.predicted_power_w)
    binding = by_name[last.binding_stream]
    assert last.measured_latency_s == binding.measured_latency_s


def test_contention_stretches_the_gpu_part_only():
    def load(name, latency_ms, gpu_ms, rate_hz):
        solo = Prediction(OperatingPoint("p"), latency_ms / 1e3, 1e-4, math.nan, math.nan, math.inf, rate_hz)
        return StreamLoad(name, solo, gpu_ms / 1e3, rate_hz, None)

    alone = [load("a", 10, 8, 30)]
    assert contention(alone) == ([1.0], pytest.approx(0.24))
    pair = [load("a", 10, 8, 30), load("b", 20, 20, 20)]  # b keeps the GPU 40 % busy, a 24 %
    stretches, utilisation = contention(pair)
    assert stretches == pytest.approx([1 / 0.6, 1 / 0.76]) and utilisation == pytest.approx(0.64)
    latency_s, _ = contended(pair[0], stretches[0])
    assert latency_s == pytest.approx(0.010 + 0.008 * (1 / 0.6 - 1))  # host part 2 ms not stretched


def test_targets_are_set_per_stream_by_name(tmp_path):
    gov, platform, clock = make(tmp_path)
    with pytest.raises(ConfigError, match="name the stream: one of det, seg"):
        gov.set_target(10.0, 95.0)
    with pytest.raises(ConfigError, match="no stream 'lidar'"):
        gov.set_target(10.0, 95.0, stream="lidar")
    gov.set_target(12.0, 99.0, stream="det")
    det = gov.config.stream("det")
    assert (det.target_latency_ms, det.percentile) == (12.0, 99.0)
    assert gov.config.stream("seg").target_latency_ms == 60.0
    with pytest.raises(ConfigError, match="no stream"):
        gov.observe_inference(0.01, clock.now_s(), stream="lidar")


def test_a_silent_stream_drops_out_and_comes_back(tmp_path):
    gov, platform, clock = make(tmp_path)
    drive(gov, platform, clock, 40.0)
    both = platform.current
    decisions = drive(gov, platform, clock, 40.0, silent=("seg",))
    seg = next(s for s in decisions[-1].streams if s.name == "seg")
    assert not seg.active and decisions[-1].binding_stream == "det"
    # Without the segmenter's work the detector alone is served at less power.
    assert true_power_w(platform.current, {"det": STREAMS["det"]}) < true_power_w(both, {"det": STREAMS["det"]})
    decisions = drive(gov, platform, clock, 40.0)
    assert all(s.active for s in decisions[-1].streams)
    for name in STREAMS:
        viol = np.mean([next(s for s in d.streams if s.name == name).violation_rate for d in decisions[-100:]])
        assert viol < 0.05, (name, viol)


def test_streams_are_written_in_a_minute_and_mistakes_named(tmp_path):
    streams = parse_streams("[{name: detector, stats_topic: /det/inference/stats, target_latency_ms: 30}, "
                            "{name: segmenter, target_latency_ms: 100, percentile: 99}]")
    assert streams == (StreamConfig("detector", 30.0, 95.0, "/det/inference/stats"),
                       StreamConfig("segmenter", 100.0, 99.0))
    path = tmp_path / "streams.yaml"
    path.write_text("streams:\n  - {name: detector, target_latency_ms: 30}\n")
    assert parse_streams(str(path)) == (StreamConfig("detector", 30.0),)
    assert parse_streams("") == ()
    for text, problem in [("[{name: a, target_ms: 3}]", "unknown key.*target_ms"),
                          ("[{name: a, target_latency_ms: 3}, {name: a, target_latency_ms: 4}]", "used twice"),
                          ("[{name: a b, target_latency_ms: 3}]", "letters, digits"),
                          ("[{name: a, target_latency_ms: 3", "not valid YAML"),
                          ("[{name: a}]", "required"),
                          ("/no/such/file.yaml", "cannot read streams file /no/such/file.yaml: No such file"),
                          (str(tmp_path), f"cannot read streams file {tmp_path}: Is a directory"),
                          ("word", "non-empty list"),
                          # A wrong type was a traceback (a name or topic not text) or a silent value
                          # (true as a 1 ms target, a list as a model).
                          ("[{name: 5, target_latency_ms: 3}]", r"stream 5.name: expected text, got 5"),
                          ("[{name: a, target_latency_ms: 3, stats_topic: 5}]", "stats_topic: expected text"),
                          ("[{name: a, target_latency_ms: true}]", "target_latency_ms: expected a number, got True"),
                          ("[{name: a, target_latency_ms: 3, model: [m]}]", r"model: expected text, got \['m'\]")]:
        with pytest.raises(ConfigError, match=problem):
            parse_streams(text)
    binary = tmp_path / "binary.yaml"
    binary.write_bytes(b"\xff\xfe")
    extra = tmp_path / "extra.yaml"  # a key beside streams was ignored
    extra.write_text("streams: [{name: a, target_latency_ms: 3}]\ntarget_latency_ms: 10\n")
    for path, problem in [(binary, "not UTF-8 text"), (extra, "unknown key.*beside streams: target_latency_ms")]:
        with pytest.raises(ConfigError, match=problem):
            parse_streams(str(path))


@pytest.mark.parametrize("config, problem", [
    ({"mode": False}, "governor.mode: expected text, got False \\(quote it"),  # YAML's bare off
    ({"points": {"include_presets": "no"}}, "points.include_presets: expected true or false, got 'no'"),
    ({"points": {"cpu_steps": 2.5}}, "points.cpu_steps: expected an integer, got 2.5"),
    ({"points": {"core_options": 12}}, "points.core_options: expected a list, got 12"),
    ({"safety": {"stale_telemetry_s": True}}, "safety.stale_telemetry_s: expected a number, got True"),
    # Started: NaN or negative turned the rule off in silence, no window never gave a percentile.
    ({"hysteresis": float("nan")}, "hysteresis must be a finite number >= 0, got nan"),
    ({"explore_budget": -3}, "explore_budget must be a finite number >= 0, got -3"),
    ({"min_window_samples": 0}, "min_window_samples must be >= 1 and window_s > 0 s"),
])
def test_a_config_value_of_the_wrong_type_is_named_not_coerced(config, problem):
    with pytest.raises(ConfigError, match=problem):
        GovernorConfig.from_dict(config)
    points = GovernorConfig.from_dict({"points": {"core_options": "12,6", "cpu_steps": 3.0}}).points
    assert (points.core_options, points.cpu_steps) == ((12, 6), 3)


def test_a_slow_stream_still_fills_its_window(tmp_path):
    # 1 Hz: 5 samples in the 5 s window, fewer than min_window_samples (12)
    streams = {"det": STREAMS["det"], "llm": (1.0, 4.0, 200.0)}
    gov, platform, clock = make(tmp_path, streams, stream_timeout_s=3.0)
    decisions = drive(gov, platform, clock, 40.0, streams=streams)
    llm = next(s for s in decisions[-1].streams if s.name == "llm")
    assert llm.active and llm.window_samples >= gov.config.min_window_samples and llm.met
    assert gov.energy.has_energy and platform.current != platform.found


def test_each_stream_counts_its_inferences_and_misses_since_start(tmp_path):
    # The window forgets; the counters do not: 40 det inferences, 7 over its 25 ms target, and
    # an implausible reading that is neither (it is a sensor fault, not an inference).
    gov, platform, clock = make(tmp_path)
    t = clock.now_s()
    for k in range(40):
        t += 1 / 30
        gov.observe_inference(0.040 if k % 6 == 0 else 0.010, t, stream="det")
    gov.observe_inference(float("nan"), t, stream="det")
    gov.observe_inference(0.020, t, stream="seg")
    clock.advance(40 / 30)
    status = {s.name: s for s in gov.step(clock.now_s()).streams}
    assert (status["det"].inferences, status["det"].inferences_over_target) == (40, 7)
    assert (status["seg"].inferences, status["seg"].inferences_over_target) == (1, 0)
