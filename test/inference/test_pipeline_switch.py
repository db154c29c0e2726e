"""The pipeline's model switch and backend boundary, without ROS (issue 23, finding 1):
- a model is never closed while the worker runs or profiles it: the worker swaps between frames;
- whatever a backend raises (ONNX Runtime's own types, a FileNotFoundError from its profiler)
  is caught at the boundary, counted and reported, and serving goes on;
- with a worker thread serving and 20+ switches both ways (a corrupt model in between), every
  model gets its report and every frame lands in exactly one counter."""

import threading
import time

import pytest

from edge_roofline.backends import create_backend
from edge_roofline.backends.base import ModelLoadError
from edge_roofline.backends.onnxruntime_backend import OnnxRuntimeBackend
from edge_roofline.inference.pipeline import InferenceConfig, InferencePipeline
from test.inference.test_pipeline import CEILINGS, image_frame


class WatchedBackend(OnnxRuntimeBackend):
    """ONNX Runtime, recording every close that lands while a call is in progress."""

    violations: list[str] = []
    gate: threading.Event | None = None  # run() waits for it, to hold a frame in the backend
    entered = threading.Event()

    def __init__(self, **opts) -> None:
        super().__init__(**opts)
        self.busy = 0
        self.closed = False

    def _call(self, name, fn, *args, **kwargs):
        if self.closed:
            WatchedBackend.violations.append(f"{name} after close")
        self.busy += 1
        try:
            if name == "run" and WatchedBackend.gate is not None:
                WatchedBackend.entered.set()
                WatchedBackend.gate.wait(10)
            return fn(*args, **kwargs)
        finally:
            self.busy -= 1

    def run(self, feeds):
        return self._call("run", super().run, feeds)

    def profile(self, feeds, runs=1):
        return self._call("profile", super().profile, feeds, runs)

    def close(self):
        if self.busy:
            WatchedBackend.violations.append("closed while in use")
        self.closed = True
        super().close()


def watched_factory(kind, **opts):
    return WatchedBackend(**opts) if kind == "ort" else create_backend(kind, **opts)


@pytest.fixture(autouse=True)
def _reset():
    WatchedBackend.violations, WatchedBackend.gate = [], None
    WatchedBackend.entered.clear()


def test_a_switch_never_closes_the_model_a_frame_is_running_on():
    p = InferencePipeline(InferenceConfig(model="zoo:tiny_cnn", profile_every_frames=0, profile_every_s=0),
                          lambda: CEILINGS, backend_factory=watched_factory)
    old = p.loaded.backend
    WatchedBackend.gate = threading.Event()
    p.submit(image_frame(0.0))
    results = []
    worker = threading.Thread(target=lambda: results.append(p.process_next(timeout_s=1.0)))
    worker.start()
    assert WatchedBackend.entered.wait(10), "the frame never reached the backend"
    p.switch(InferenceConfig(model="zoo:mobilenetv2", profile_every_frames=0, profile_every_s=0))
    assert not old.closed, "the switch closed the model a frame is running on"
    WatchedBackend.gate.set()
    worker.join(10)
    assert results[0].outputs and results[0].model_id == "zoo:tiny_cnn"
    p.submit(image_frame(0.1))
    after = p.process_next(timeout_s=1.0)
    assert after.model_id == "zoo:mobilenetv2" and old.closed and not WatchedBackend.violations
    assert after.report is not None and after.report.reason == "model switch"
    p.close()


class Fail(Exception):
    """Stands for onnxruntime.capi.onnxruntime_pybind11_state.Fail: not a BackendError."""


@pytest.mark.parametrize("method,exc,counter", [
    ("run", Fail("[ONNXRuntimeError] : 1 : FAIL : Non-zero status code"), "failed"),
    ("run", MemoryError("out of memory"), "failed"),
    ("profile", FileNotFoundError(2, "No such file", "/tmp/edge_roofline_ort_x/profile_1.json"), "errors"),
])
def test_whatever_a_backend_raises_is_counted_and_serving_goes_on(monkeypatch, method, exc, counter):
    p = InferencePipeline(InferenceConfig(model="zoo:tiny_cnn", profile_every_frames=1, profile_every_s=0,
                                          profile_budget_fraction=1.0), lambda: CEILINGS)
    original = getattr(p.loaded.backend, method)
    calls = []

    def flaky(*args, **kwargs):
        calls.append(1)
        if len(calls) == 1:
            raise exc
        return original(*args, **kwargs)

    monkeypatch.setattr(p.loaded.backend, method, flaky)
    p.submit(image_frame(0.0))
    broken = p.process_next(timeout_s=1.0)
    assert getattr(broken.counters, counter) == 1 and broken.counters.errors == 1
    assert type(exc).__name__ in broken.counters.last_error and "\n" not in broken.counters.last_error
    p.submit(image_frame(0.1))
    served = p.process_next(timeout_s=1.0)
    assert served.outputs and served.counters.processed == 1 + (method == "profile")
    p.close()


def test_switching_under_load_both_ways_with_a_bad_model_between(tmp_path):
    """A worker thread serves a stream of frames while the caller switches 24 times."""
    corrupt = tmp_path / "corrupt.onnx"
    corrupt.write_bytes(b"this is not protobuf")
    cfg = dict(profile_every_frames=0, profile_every_s=0)
    p = InferencePipeline(InferenceConfig(model="zoo:tiny_cnn", **cfg), lambda: CEILINGS,
                          backend_factory=watched_factory)
    stop = threading.Event()
    results, dead = [], []

    def serve():
        try:
            while not stop.is_set():
                result = p.process_next(timeout_s=0.05)
                if result is not None:
                    results.append(result)
        except BaseException as exc:  # noqa: BLE001 - a dead worker is what this test looks for
            dead.append(exc)

    worker = threading.Thread(target=serve)
    worker.start()
    feeder_stop = threading.Event()

    def feed():
        i = 0
        while not feeder_stop.is_set():
            p.submit(image_frame(float(i), index=i))
            i += 1
            feeder_stop.wait(0.01)

    feeder = threading.Thread(target=feed)
    feeder.start()
    try:
        for i in range(24):
            if i == 12:
                with pytest.raises(ModelLoadError):
                    p.switch(InferenceConfig(model=str(corrupt), **cfg))
            model = "zoo:mobilenetv2" if i % 2 == 0 else "zoo:tiny_cnn"
            before = len(results)
            assert p.switch(InferenceConfig(model=model, **cfg), wait_s=10.0), f"switch {i} never served"
            assert p.config.model == model
            deadline = time.monotonic() + 30
            while not any(r.report is not None and r.model_id == model for r in results[before:]):
                assert time.monotonic() < deadline and not dead, f"no report for {model} after switch {i}"
                time.sleep(0.01)
    finally:
        feeder_stop.set()
        feeder.join()
        stop.set()
        worker.join(10)
    while p.process_next(timeout_s=0.0) is not None:  # what is still queued
        pass
    p.close()
    assert not dead, f"the worker died: {dead}"
    assert not WatchedBackend.violations, WatchedBackend.violations
    c = p.counters
    assert c.errors == 0, c.last_error
    assert c.received == c.processed + c.dropped + c.rejected + c.failed
    reports = [r.report for r in results if r.report is not None]
    assert sum(r.reason == "model switch" for r in reports) == 24  # each model, after each switch
