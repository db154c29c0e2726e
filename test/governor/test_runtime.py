"""The governor's runtime (what the node wraps) on a GPU outside the device catalogue, through a
fake pynvml: no roofline prior, each power limit learned by measuring it, the limit found at
start put back on close. No ROS."""

import sys
import time

import pytest

from edge_roofline.clock import SimClock
from edge_roofline.governor.config import ConfigError
from edge_roofline.governor.node_parameters import PARAMETERS
from edge_roofline.governor.pointwise import PointwisePredictor
from edge_roofline.governor.runtime import GovernorRuntime
from test.platforms.test_nvml_platform import fake_pynvml


def params(tmp_path):
    return {**{name: default for name, (default, _) in PARAMETERS.items()}, "mode": "active",
            "target_latency_ms": 20.0, "platform": "nvml", "model": "zoo:tiny_cnn", "stream_timeout_s": 3.0,
            "state_path": str(tmp_path / "state.json")}


def test_runtime_governs_an_nvml_gpu_by_measuring_each_point(monkeypatch, tmp_path):
    fake = fake_pynvml()
    monkeypatch.setitem(sys.modules, "pynvml", fake)
    logs = []
    runtime = GovernorRuntime(params(tmp_path), SimClock(0.0), log=logs.append)
    gov = runtime.governor
    assert isinstance(gov.predictor, PointwisePredictor)
    assert any("not in the device catalogue" in line for line in logs)
    assert {p.power_limit_w for p in gov.candidates} == {100.0, 200.0, 250.0, 300.0, 400.0}
    runtime.platform.apply(next(p for p in gov.candidates if p.power_limit_w == 100.0))
    assert fake.state["limit_mw"] == 100_000
    runtime.close()
    assert fake.state["limit_mw"] == 250_000  # the limit found at start


STREAMS = "[{name: det, target_latency_ms: 30}, {name: seg, target_latency_ms: 80, percentile: 90}]"


def test_runtime_with_streams_sets_targets_by_name_and_refuses_with_the_names(monkeypatch, tmp_path):
    monkeypatch.setitem(sys.modules, "pynvml", fake_pynvml())
    runtime = GovernorRuntime({**params(tmp_path), "model": "", "streams": STREAMS}, SimClock(0.0), log=list().append)
    try:
        assert [s.name for s in runtime.streams] == ["det", "seg"] and set(runtime.models) == {"det", "seg"}
        assert runtime.set_target(60.0, 0.0, "seg") == (True, "seg: target p90 <= 60 ms")
        assert runtime.governor.config.stream("seg").target_latency_ms == 60.0
        assert runtime.governor.config.stream("det").target_latency_ms == 30.0
        ok, message = runtime.set_target(60.0, 0.0, "")
        assert not ok and message.startswith("target refused:") and "det, seg" in message
        ok, message = runtime.set_target(60.0, 0.0, "tracker")
        assert not ok and "'tracker'" in message and "det, seg" in message
        ok, message = runtime.set_target(-1.0, 0.0, "det")
        assert not ok and message.startswith("target refused:")
        assert runtime.governor.config.stream("det").target_latency_ms == 30.0
    finally:
        runtime.close()


def test_one_stream_keeps_the_unnamed_target(monkeypatch, tmp_path):
    monkeypatch.setitem(sys.modules, "pynvml", fake_pynvml())
    runtime = GovernorRuntime(params(tmp_path), SimClock(0.0), log=list().append)
    try:
        assert [s.name for s in runtime.streams] == ["default"]
        assert runtime.set_target(25.0, 0.0) == (True, "target p95 <= 25 ms")
        assert runtime.governor.config.target_latency_ms == 25.0
    finally:
        runtime.close()


def test_each_stream_follows_its_own_model(monkeypatch, tmp_path):
    monkeypatch.setitem(sys.modules, "pynvml", fake_pynvml())
    runtime = GovernorRuntime({**params(tmp_path), "model": "", "streams": STREAMS}, SimClock(0.0), log=list().append)
    try:
        # True: over its stream's target (the node steps at once); a frame that never ran is not.
        seg_target_s = runtime.governor.streams["seg"].config.target_latency_s
        assert not runtime.observe_stats("seg", "zoo:tiny_cnn", 0.5 * seg_target_s, 0.0)
        assert runtime.observe_stats("seg", "zoo:tiny_cnn", 2.0 * seg_target_s, 0.0)
        assert not runtime.observe_stats("det", "", None, 0.0)  # a frame that never ran, from a node naming no model
        lines, deadline = [], time.monotonic() + 30
        while not lines and time.monotonic() < deadline:
            lines = runtime.follow_models()
            time.sleep(0.01)
        # Outside the device catalogue there is no roofline: the stream is learned by measuring.
        assert lines == ["seg: no roofline for zoo:tiny_cnn on this device; learning by measuring"]
        assert runtime.governor.streams["seg"].model_id == "zoo:tiny_cnn"
        assert runtime.governor.streams["det"].model_id == ""
    finally:
        runtime.close()


def test_a_flat_model_with_streams_is_refused(monkeypatch, tmp_path):
    monkeypatch.setitem(sys.modules, "pynvml", fake_pynvml())
    with pytest.raises(ConfigError, match="model 'zoo:tiny_cnn' names no stream.*name: det, model: zoo:tiny_cnn"):
        GovernorRuntime({**params(tmp_path), "streams": STREAMS}, SimClock(0.0), log=list().append)


@pytest.mark.parametrize("bad, problem", [({"safe_point": "NOPE"}, "safe_point 'NOPE' is not reachable"),
                                          ({"prior_table": "table.json"}, "prior_table needs a catalogued device")])
def test_a_start_refused_leaves_no_crash_record(monkeypatch, tmp_path, bad, problem):
    # The record written before the refusal stayed: the next start said a previous governor
    # had not shut down and "restored" a board nothing had touched.
    monkeypatch.setitem(sys.modules, "pynvml", fake_pynvml())
    with pytest.raises(ConfigError, match=problem):
        GovernorRuntime({**params(tmp_path), **bad}, SimClock(0.0), log=list().append)
    assert not (tmp_path / "state.json").exists()
    logs = []
    GovernorRuntime(params(tmp_path), SimClock(0.0), log=logs.append).close()
    assert not any("did not shut down" in line for line in logs), logs


@pytest.mark.parametrize("timeout_s", [0.0, -1.0, float("nan")])
def test_a_stream_timeout_that_would_silence_every_stream_is_refused(monkeypatch, tmp_path, timeout_s):
    monkeypatch.setitem(sys.modules, "pynvml", fake_pynvml())
    with pytest.raises(ConfigError, match="stream_timeout_s must be > 0 s"):
        GovernorRuntime({**params(tmp_path), "stream_timeout_s": timeout_s}, SimClock(0.0), log=list().append)


def test_a_stream_judged_end_to_end_counts_the_queue_wait(monkeypatch, tmp_path):
    # det's frame ran 10 ms but answered 45 ms after it arrived: over its 30 ms target end to end
    # (its `latency` key), under it by execution time (seg, the default).
    monkeypatch.setitem(sys.modules, "pynvml", fake_pynvml())
    streams = ("[{name: det, target_latency_ms: 30, latency: end_to_end},"
               " {name: seg, target_latency_ms: 30}]")
    runtime = GovernorRuntime({**params(tmp_path), "model": "", "streams": streams}, SimClock(0.0), log=list().append)
    try:
        assert runtime.observe_stats("det", "zoo:tiny_cnn", 0.010, 0.0, "", 0.045)
        assert not runtime.observe_stats("seg", "zoo:tiny_cnn", 0.010, 0.0, "", 0.045)
        assert not runtime.observe_stats("det", "zoo:tiny_cnn", 0.010, 0.1, "", 0.020)
        assert runtime.governor.streams["det"].late == 1 and runtime.governor.streams["seg"].late == 0
    finally:
        runtime.close()
    with pytest.raises(ConfigError, match="stream det: latency must be execution or end_to_end.*got 'e2e'"):
        bad = "[{name: det, target_latency_ms: 30, latency: e2e}]"
        GovernorRuntime({**params(tmp_path), "model": "", "streams": bad}, SimClock(0.0), log=list().append)
