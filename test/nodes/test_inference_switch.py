"""Real rclpy: a model switch through SetParameters tells the caller the truth. A corrupt file,
a missing file or an unknown zoo name is refused (successful=False, one line saying what failed
and the fix), the parameter keeps the model actually served, and the old model keeps serving;
a good switch succeeds and the new model serves from then on."""

import pytest
from rcl_interfaces.msg import Parameter, ParameterType, ParameterValue
from rcl_interfaces.srv import GetParameters, SetParameters
from sensor_msgs.msg import Image

from edge_roofline.ros import topics
from edge_roofline.msg import InferenceStats
from test.nodes.rosutil import log_text, start_node, stop_node, watcher


@pytest.fixture(scope="module")
def models(tmp_path_factory):
    folder = tmp_path_factory.mktemp("models")
    corrupt = folder / "corrupt.onnx"
    corrupt.write_bytes(b"this is not protobuf")
    return {"corrupt": str(corrupt), "missing": str(folder / "missing.onnx")}


def _call(node, spin_until, client, request):
    assert spin_until(client.service_is_ready, timeout_s=30), f"{client.srv_name} not available"
    future = client.call_async(request)
    assert spin_until(future.done, timeout_s=30), f"{client.srv_name} did not answer"
    return future.result()


def test_model_switch_answers_the_truth(models, ros_env, tmp_path):
    log = tmp_path / "inference.log"
    stats: list[InferenceStats] = []
    # The catalogue device's roofs: the test does not depend on measuring this host's CPU.
    proc = start_node("inference", ros_env, {"model": "zoo:tiny_cnn", "device": "agx_orin_64gb",
                                             "profile_every_frames": 0, "profile_every_s": 0.0,
                                             "publish_chart": False}, log)
    with watcher(ros_env) as (node, spin_until):
        node.create_subscription(InferenceStats, topics.INFERENCE_STATS, stats.append, 50)
        camera = node.create_publisher(Image, "image", 5)
        image = Image(height=32, width=32, encoding="rgb8", step=96, data=bytes(32 * 32 * 3))
        node.create_timer(0.05, lambda: camera.publish(image))
        set_client = node.create_client(SetParameters, "/inference/set_parameters")
        get_client = node.create_client(GetParameters, "/inference/get_parameters")

        def switch(model: str):
            value = ParameterValue(type=ParameterType.PARAMETER_STRING, string_value=model)
            return _call(node, spin_until, set_client,
                         SetParameters.Request(parameters=[Parameter(name="model", value=value)])).results[0]

        def model_parameter() -> str:
            return _call(node, spin_until, get_client, GetParameters.Request(names=["model"])).values[0].string_value

        def served_after_now() -> str:
            stats.clear()
            assert spin_until(lambda: len(stats) >= 3, timeout_s=60, procs=[proc]), log_text(log)
            return stats[-1].model_id

        try:
            assert served_after_now() == "zoo:tiny_cnn"
            for bad, why, fix in (("corrupt", "not a valid ONNX model", "zoo:NAME"),
                                  ("missing", "cannot read model", "give an existing ONNX file"),
                                  ("zoo:no_such_net", "unknown zoo model", "known: resnet18")):
                result = switch(models.get(bad, bad))
                assert not result.successful, f"switch to {bad} reported success"
                assert why in result.reason and fix in result.reason and "\n" not in result.reason, result.reason
                assert model_parameter() == "zoo:tiny_cnn"
                assert served_after_now() == "zoo:tiny_cnn"
            result = switch("zoo:mobilenetv2")
            assert result.successful, result.reason
            assert model_parameter() == "zoo:mobilenetv2"
            assert served_after_now() == "zoo:mobilenetv2"  # the new model serves as soon as the call returned
        finally:
            assert stop_node(proc) == 0, log_text(log)
