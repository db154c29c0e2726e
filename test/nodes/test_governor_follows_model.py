"""Real rclpy on a live virtual AGX Orin 64GB (SIMULATION): the governor is not told the model.
It follows what the stream publishes (InferenceStats.model_id): a model switch on the inference
node (SetParameters, as `ros2 param set` does) re-plans it within 2 s; a stream whose model it
cannot load leaves it deciding on measurements, with the reason in GovernorState. Each runs with
the one stream of old and as a named stream beside another (``streams``: GovernorState.streams
carries the per-stream model, and the other stream's is left alone)."""

import time

import pytest
from rcl_interfaces.msg import Parameter, ParameterType, ParameterValue
from rcl_interfaces.srv import SetParameters

from edge_roofline.ros import topics
from edge_roofline.msg import GovernorState, InferenceStats
from test.nodes.rosutil import log_text, start_node, stop_node, watcher
from test.nodes.virtual_rig import DEVICE, governor_params

# The stream under test is "det" in /det; "other" is a second stream the test plays itself.
SEVERAL = "[{name: det, stats_topic: /det/inference/stats, target_latency_ms: 20}, " \
          "{name: other, stats_topic: /other/inference/stats, target_latency_ms: 50}]"
OTHER_MODEL = "zoo:resnet18"


def stream_view(several: bool):
    """The GovernorState fields of the stream under test: the message itself for the only stream,
    its entry in ``streams`` with several."""
    def view(msg):
        return next((s for s in msg.streams if s.name == "det"), None) if several else msg
    return view


def play_other_stream(node, model_id: str):
    """InferenceStats of a second serving node at 20 Hz, as /other/inference/stats."""
    pub = node.create_publisher(InferenceStats, f"/other/{topics.INFERENCE_STATS}", 10)
    node.create_timer(1 / 20, lambda: pub.publish(InferenceStats(model_id=model_id, latency_ms=3.0, simulated=True)))


@pytest.mark.parametrize("several", [False, True], ids=["one_stream", "named_stream"])
def test_governor_follows_a_model_switch_on_the_serving_node(board, ros_env, tmp_path, several):
    platform = {"platform": f"virtual:{DEVICE}", "sysfs_root": str(board)}
    logs = {name: tmp_path / f"{name}.log" for name in ("inference", "power_monitor", "governor")}
    ns = "/det" if several else ""
    view = stream_view(several)
    stats, states = [], []
    with watcher(ros_env) as (node, spin_until):
        now = time.monotonic
        node.create_subscription(InferenceStats, f"{ns}/{topics.INFERENCE_STATS}", lambda m: stats.append((now(), m)),
                                 100)
        node.create_subscription(GovernorState, topics.GOVERNOR_STATE, lambda m: states.append((now(), m)), 50)
        if several:
            play_other_stream(node, OTHER_MODEL)
        procs = [
            start_node("power_monitor", ros_env, platform, logs["power_monitor"]),
            start_node("inference", ros_env, {**platform, "model": "zoo:tiny_cnn", "backend": "virtual",
                                              "precision": "fp16", "device": DEVICE, "publish_outputs": False,
                                              "publish_chart": False, "profile_every_frames": 0,
                                              "profile_every_s": 0.0}, logs["inference"], namespace=ns),
            start_node("synthetic_camera", ros_env, {"width": 64, "height": 64, "rate_hz": 30.0}, namespace=ns),
            start_node("governor", ros_env, governor_params(board, tmp_path / "state.json", model="", mode="advise",
                                                            streams=SEVERAL if several else ""), logs["governor"]),
        ]
        try:
            assert spin_until(lambda: states and view(states[-1][1]) and view(states[-1][1]).model_id == "zoo:tiny_cnn",
                              timeout_s=120, procs=procs), log_text(logs["governor"])
            assert view(states[-1][1]).model_note == ""
            assert spin_until(lambda: view(states[-1][1]).predicted_latency_ms > 0, timeout_s=30, procs=procs), \
                [(m.state, m.reason) for _, m in states[-3:]]
            if several:
                assert spin_until(lambda: {s.name: s.model_id for s in states[-1][1].streams}.get("other") ==
                                  OTHER_MODEL, timeout_s=30, procs=procs), log_text(logs["governor"])
            client = node.create_client(SetParameters, f"{ns}/inference/set_parameters")
            assert client.wait_for_service(timeout_sec=10)
            request = SetParameters.Request(parameters=[Parameter(name="model", value=ParameterValue(
                type=ParameterType.PARAMETER_STRING, string_value="zoo:yolo_tiny"))])
            future = client.call_async(request)
            assert spin_until(future.done, timeout_s=60) and future.result().results[0].successful

            def first(items, predicate):
                return next((t for t, m in items if predicate(m)), None)
            def switched(msg):
                return view(msg).model_id == "zoo:yolo_tiny"
            assert spin_until(lambda: first(states, switched), timeout_s=30, procs=procs), log_text(logs["governor"])
            served_s = first(stats, lambda m: m.model_id == "zoo:yolo_tiny")
            named_s = first(states, switched)
            assert served_s is not None and named_s - served_s <= 2.0, (served_s, named_s)
            named = "det: " if several else ""
            assert f"{named}following zoo:yolo_tiny: re-planning with its roofline" in log_text(logs["governor"])
            if several:  # the other stream's model is its own
                assert {s.name: s.model_id for s in states[-1][1].streams}["other"] == OTHER_MODEL
            # Re-planned: the prediction is now the bigger model's.
            before = [view(m).predicted_latency_ms for t, m in states
                      if t < served_s and view(m).predicted_latency_ms > 0]

            def predicted_since():  # NaN while a fallback or a calibration withholds a prediction
                return [view(m).predicted_latency_ms for t, m in states
                        if t > named_s and view(m).predicted_latency_ms > 0]
            spin_until(predicted_since, timeout_s=15, procs=procs)
            after = predicted_since()
            assert before and after and after[-1] > 1.5 * before[-1], (before[-1:], after[-1:])
        finally:
            for p in reversed(procs):
                stop_node(p)


@pytest.mark.parametrize("several", [False, True], ids=["one_stream", "named_stream"])
def test_a_model_the_governor_cannot_load_leaves_it_measuring(board, ros_env, tmp_path, several):
    platform = {"platform": f"virtual:{DEVICE}", "sysfs_root": str(board)}
    log = tmp_path / "governor.log"
    view = stream_view(several)
    states = []
    with watcher(ros_env) as (node, spin_until):
        node.create_subscription(GovernorState, topics.GOVERNOR_STATE, states.append, 50)
        pub = node.create_publisher(InferenceStats, f"{'/det' if several else ''}/{topics.INFERENCE_STATS}", 10)
        if several:
            play_other_stream(node, OTHER_MODEL)
        procs = [start_node("power_monitor", ros_env, platform),
                 start_node("governor", ros_env, governor_params(board, tmp_path / "state.json", model="",
                                                                 mode="advise", streams=SEVERAL if several else ""),
                            log)]
        # A serving node that is not ours, reporting a model this machine does not have.
        node.create_timer(1 / 30, lambda: pub.publish(InferenceStats(model_id="/robot/models/detector.onnx",
                                                                      backend="external:/det", latency_ms=5.0)))
        try:
            assert spin_until(lambda: states and view(states[-1]) and "no roofline for /robot/models/detector.onnx"
                              in view(states[-1]).model_note, timeout_s=120, procs=procs), log_text(log)
            assert spin_until(lambda: view(states[-1]).measured_latency_ms > 0 and states[-1].state != "waiting",
                              timeout_s=30, procs=procs), [(s.state, s.reason) for s in states[-3:]]
            last = view(states[-1])
            assert last.model_id == "/robot/models/detector.onnx" and "measuring" in last.model_note
            assert abs(last.measured_latency_ms - 5.0) < 1e-6
            if several:  # the other stream gets its roofline (loaded in the background, a second or so)
                def other():
                    return next(s for s in states[-1].streams if s.name == "other")
                assert spin_until(lambda: other().model_id == OTHER_MODEL, timeout_s=30, procs=procs), log_text(log)
                assert other().model_note == "" and "measuring" in view(states[-1]).model_note
        finally:
            for p in reversed(procs):
                stop_node(p)
