"""The governor follows the model a stream serves: a switch reported in InferenceStats.model_id
is analysed off the caller's thread and re-plans the governor; a model it cannot analyse leaves
it learning by measuring, with the reason, never a crash."""

import threading
import time

import pytest

from edge_roofline.governor.model_follow import ModelFollower
from edge_roofline.governor.pointwise import PointwisePredictor
from edge_roofline.governor.predictor import Predictor

from .fake_law import drive
from .test_governor import analysis, make


def wait_change(follower, timeout_s=5.0):
    deadline = time.monotonic() + timeout_s
    while time.monotonic() < deadline:
        change = follower.poll()
        if change is not None:
            return change
        time.sleep(0.01)
    raise AssertionError("no model change within the timeout")


def test_follows_a_new_model_once_and_ignores_repeats():
    calls = []
    follower = ModelFollower(lambda m: calls.append(m) or f"analysis of {m}")
    follower.observe("zoo:a")
    change = wait_change(follower)
    assert (change.model_id, change.analysis, change.note) == ("zoo:a", "analysis of zoo:a", "")
    follower.observe("zoo:a")
    follower.observe("")
    assert follower.poll() is None and calls == ["zoo:a"]
    follower.close()


def test_an_override_is_never_replaced_by_what_the_stream_reports():
    follower = ModelFollower(lambda m: m, override="/models/net.onnx")
    follower.observe("/models/net.engine")
    assert follower.poll() is None and follower.wanted == "/models/net.onnx"
    follower.close()


def test_unloadable_model_gives_the_reason():
    def analyze(model):
        raise FileNotFoundError(f"{model} does not exist")
    follower = ModelFollower(analyze)
    follower.observe("/gone.onnx")
    change = wait_change(follower)
    assert change.analysis is None
    assert "FileNotFoundError: /gone.onnx does not exist" in change.note and "measuring" in change.note
    follower.close()


def test_a_newer_switch_supersedes_one_still_loading():
    release = threading.Event()

    def analyze(model):
        if model == "slow":
            release.wait(5.0)
        return model
    follower = ModelFollower(analyze)
    follower.observe("slow")
    follower.observe("fast")  # queued behind the slow one on the loader thread
    release.set()
    assert wait_change(follower).model_id == "fast"
    assert follower.poll() is None
    follower.close()


def test_governor_degrades_to_measuring_and_back_to_the_roofline(tmp_path):
    gov, platform, clock = make(tmp_path)
    assert isinstance(gov.predictor, Predictor)
    gov.set_model(None, "/models/net.engine", "no roofline for /models/net.engine (a TensorRT engine)")
    assert isinstance(gov.predictor, PointwisePredictor)
    assert gov.model_id == "/models/net.engine" and "TensorRT engine" in gov.model_note
    decisions = drive(gov, platform, clock, 20.0)  # keeps deciding on measurements alone
    assert decisions[-1].state != "waiting" and all(d.state != "fallback" for d in decisions)
    gov.set_model(analysis(), "zoo:toy")
    assert isinstance(gov.predictor, Predictor) and gov.model_id == "zoo:toy" and gov.model_note == ""


def test_a_model_switch_measures_the_new_models_input_rate(tmp_path):
    """A switch may bring another input rate (a 50 Hz model, then a 10 Hz one four times as
    slow): the old model's rate is not the new one's (at 50 Hz no point would sustain it, and
    the governor would hold the fastest point until a window filled)."""
    from dataclasses import replace
    gov, platform, clock = make(tmp_path)
    drive(gov, platform, clock, 10.0, rate_hz=50.0)
    stream = next(iter(gov.streams.values()))
    assert stream.rate_hz() == pytest.approx(50.0, rel=0.05)
    gov.set_target(80.0, 95.0)
    gov.set_model(replace(analysis(), model="big"), "zoo:big")
    platform.scale = 4.0
    drive(gov, platform, clock, 0.35, rate_hz=10.0)  # a few inferences: no window yet
    assert stream.rate_hz() == pytest.approx(10.0, rel=0.05)
