"""Real rclpy (issue 23, finding 1): 640x480 bgr8 frames at 30 Hz into the inference node while
`model` is switched 22 times between zoo:mobilenetv2 and zoo:tiny_cnn, with a corrupt model in
between. Every good switch replies true and `param get` names the model that then serves every
frame sent after the reply; the corrupt one is refused; stats keep coming, the worker never dies,
every frame lands in one counter, and each model gets a roofline report after each switch."""

import time

from rcl_interfaces.msg import Parameter, ParameterType, ParameterValue
from rcl_interfaces.srv import GetParameters, SetParameters
from sensor_msgs.msg import Image

from edge_roofline.msg import InferenceStats, RooflineReport
from edge_roofline.ros import topics
from edge_roofline.ros.stamps import stamp_s
from test.nodes.rosutil import log_text, start_node, stop_node, watcher
from test.nodes.test_inference_switch import _call

SWITCHES = 22
QUEUE_DEPTH = 2


def test_switching_models_under_load_keeps_serving_and_tells_the_truth(ros_env, tmp_path):
    corrupt = tmp_path / "corrupt.onnx"
    corrupt.write_bytes(b"this is not protobuf")
    log = tmp_path / "inference.log"
    stats: list[tuple[float, InferenceStats]] = []
    reports: list[RooflineReport] = []
    proc = start_node("inference", ros_env, {"model": "zoo:tiny_cnn", "device": "agx_orin_64gb", "engine": "cpu",
                                             "profile_every_frames": 0, "profile_every_s": 0.0,
                                             "queue_depth": QUEUE_DEPTH, "publish_chart": False,
                                             "publish_outputs": False}, log)
    with watcher(ros_env) as (node, spin_until):
        node.create_subscription(InferenceStats, topics.INFERENCE_STATS, lambda m: stats.append((time.monotonic(), m)),
                                 100)
        node.create_subscription(RooflineReport, topics.ROOFLINE_REPORT, reports.append, 10)
        camera = node.create_publisher(Image, "image", 5)
        image = Image(height=480, width=640, encoding="bgr8", step=640 * 3, data=bytes(640 * 480 * 3))

        def publish_frame():
            image.header.stamp = node.get_clock().now().to_msg()
            camera.publish(image)

        node.create_timer(1.0 / 30.0, publish_frame)
        set_client = node.create_client(SetParameters, "/inference/set_parameters")
        get_client = node.create_client(GetParameters, "/inference/get_parameters")

        def switch(model: str):
            value = ParameterValue(type=ParameterType.PARAMETER_STRING, string_value=model)
            result = _call(node, spin_until, set_client,
                           SetParameters.Request(parameters=[Parameter(name="model", value=value)])).results[0]
            return result, stamp_s(node.get_clock().now())

        def model_parameter() -> str:
            return _call(node, spin_until, get_client, GetParameters.Request(names=["model"])).values[0].string_value

        try:
            assert spin_until(lambda: len(stats) >= 10 and reports, timeout_s=90, procs=[proc]), log_text(log)
            served_models = []
            for i in range(SWITCHES):
                if i == SWITCHES // 2:
                    result, _ = switch(str(corrupt))
                    assert not result.successful and "not a valid ONNX model" in result.reason, result.reason
                    assert model_parameter() == served_models[-1]
                model = "zoo:mobilenetv2" if i % 2 == 0 else "zoo:tiny_cnn"
                reports_before = len(reports)
                result, replied_s = switch(model)
                assert result.successful, f"switch {i} to {model}: {result.reason}\n{log_text(log)}"
                assert model_parameter() == model
                served_models.append(model)

                def sent_after_reply():
                    return [m for _, m in stats if stamp_s(m.header.stamp) > replied_s]

                assert spin_until(lambda: len(sent_after_reply()) >= 5, timeout_s=60, procs=[proc]), \
                    f"no stats after switch {i}\n{log_text(log)}"
                assert {m.model_id for m in sent_after_reply()} == {model}, f"switch {i}: param get says {model}"
                assert spin_until(lambda: any(r.model_id == model for r in reports[reports_before:]),
                                  timeout_s=60, procs=[proc]), f"no report for {model} after switch {i}"
            gaps = [b - a for (a, _), (b, _) in zip(stats, stats[1:])]
        finally:
            code = stop_node(proc)
    assert code == 0, log_text(log)
    assert max(gaps) < 15.0, f"stats stopped for {max(gaps):.1f} s"
    last = stats[-1][1]
    assert last.worker_restarts == 0 and last.errors == 0, last.last_error
    for _, m in stats:
        settled = m.frames_processed + m.frames_dropped + m.frames_rejected + m.frames_failed
        assert 0 <= m.frames_received - settled <= QUEUE_DEPTH + 1, m
    assert "Traceback" not in log_text(log) and "died" not in log_text(log)
