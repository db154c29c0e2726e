"""Real rclpy: the synthetic camera feeds the inference node (ONNX Runtime, a small CNN built
at test time); its outputs match a direct onnxruntime run on the same image, and stats and
roofline reports arrive with every layer present and consistent totals."""

import math

import numpy as np
import onnx
import onnxruntime as ort
import pytest
from sensor_msgs.msg import CompressedImage, Image

from edge_roofline.models import zoo

from edge_roofline.ros import topics
from edge_roofline.msg import InferenceStats, RooflineReport, Tensor, TensorArray
from edge_roofline.nodes.convert import tensors_from_msg
from edge_roofline.inference.preprocess import PreprocessConfig, image_to_array, preprocess
from test.nodes.rosutil import log_text, start_node, stop_node, watcher


@pytest.fixture(scope="module")
def model_path(tmp_path_factory):
    return zoo.save("tiny_cnn", tmp_path_factory.mktemp("model") / "tiny_cnn.onnx")


def test_camera_to_inference_outputs_match_onnxruntime(model_path, ros_env, tmp_path):
    proto = onnx.load(str(model_path))
    input_name = proto.graph.input[0].name
    dims = [d.dim_value for d in proto.graph.input[0].type.tensor_type.shape.dim]
    height, width = dims[2], dims[3]
    reference = ort.InferenceSession(str(model_path), providers=["CPUExecutionProvider"])
    cfg = PreprocessConfig(width=width, height=height)

    images, outputs, stats, reports, charts = {}, [], [], [], []
    log = tmp_path / "inference.log"
    with watcher(ros_env) as (node, spin_until):
        node.create_subscription(Image, "image", lambda m: images.__setitem__(
            (m.header.stamp.sec, m.header.stamp.nanosec), m), 50)
        node.create_subscription(TensorArray, topics.INFERENCE_OUTPUT, outputs.append, 50)
        node.create_subscription(InferenceStats, topics.INFERENCE_STATS, stats.append, 50)
        node.create_subscription(RooflineReport, topics.ROOFLINE_REPORT, reports.append, 5)
        node.create_subscription(CompressedImage, topics.ROOFLINE_CHART, charts.append, 2)
        procs = [
            start_node("inference", ros_env, {"model": str(model_path), "profile_every_frames": 20,
                                              "profile_every_s": 0.0}, log),
            start_node("synthetic_camera", ros_env, {"width": 96, "height": 80, "rate_hz": 30.0, "encoding": "bgr8"}),
        ]
        try:
            ok = spin_until(lambda: len(outputs) >= 10 and reports and charts, timeout_s=60, procs=procs)
            assert ok, f"outputs={len(outputs)} reports={len(reports)}\n{log_text(log)}"
        finally:
            for p in procs:
                stop_node(p)

    matched = 0
    for out in outputs:
        key = (out.header.stamp.sec, out.header.stamp.nanosec)
        if key not in images:
            continue
        img = images[key]
        array, order = image_to_array(img.encoding, img.width, img.height, img.step, bytes(img.data))
        want = reference.run(None, {input_name: preprocess(array, order, cfg)})[0]
        got = tensors_from_msg(out)
        np.testing.assert_allclose(next(iter(got.values())), want, rtol=1e-4, atol=1e-5)
        matched += 1
    assert matched >= 5

    last = stats[-1]
    assert last.model_id == str(model_path) and last.backend == "ort" and not last.simulated
    assert last.errors == 0 and last.frames_rejected == 0 and last.latency_ms > 0
    assert last.frames_received >= last.frame_index - last.frames_dropped

    report = reports[-1]
    node_names = {n.name for n in proto.graph.node}
    assert {l.name for l in report.layers} == node_names  # every ONNX node, once
    assert len(report.layers) == len(node_names)
    assert math.isclose(report.total_flops, sum(l.flops for l in report.layers), rel_tol=1e-9)
    assert report.total_flops > 0 and report.ceilings_source == "measured" and report.ceilings_engine == "cpu"
    measured = [l.measured_time_s for l in report.layers if not math.isnan(l.measured_time_s)]
    assert measured and 0 < sum(measured) <= report.total_measured_time_s * 1.001
    for layer in report.layers:
        assert layer.bound in ("compute", "memory", "latency")
    assert charts[0].format == "png" and bytes(charts[0].data[:8]) == b"\x89PNG\r\n\x1a\n"


@pytest.mark.parametrize("dtype, shape, size, words", [
    ("floaty", [2], 8, "not a numeric numpy dtype"),  # was numpy's TypeError: the node died on it
    ("object", [1], 8, "not a numeric numpy dtype"),  # was numpy's 'cannot create an OBJECT array'
    ("float32", [2], 7, "7 bytes of data"),
    ("float32", [2**31] * 3, 0, "needs 39614081257132168796771975168"),  # numpy's product wraps to 0
])
def test_an_unreadable_tensor_message_is_a_value_error_naming_the_problem(dtype, shape, size, words):
    """The inference node rejects and counts what raises ValueError here; anything else killed it."""
    bad = TensorArray(tensors=[Tensor(name="input", dtype=dtype, shape=shape, data=bytes(size))])
    with pytest.raises(ValueError, match=words):
        tensors_from_msg(bad)


def test_a_tensor_given_twice_is_refused():
    # The second one fed the model in silence (the frame counted as processed).
    one = Tensor(name="input", dtype="float32", shape=[2], data=bytes(8))
    with pytest.raises(ValueError, match="tensor 'input' given twice; give each input once"):
        tensors_from_msg(TensorArray(tensors=[one, one]))
