"""The inference pipeline without ROS: queue policy, bad input, NaN outputs, model switch."""

import numpy as np
import onnx
import pytest
from onnx import TensorProto, helper

from edge_roofline.backends.base import ModelLoadError
from edge_roofline.clock import SimClock
from edge_roofline.roofline.ceilings import spec_ceilings
from edge_roofline.inference.pipeline import Frame, InferenceConfig, InferencePipeline
from edge_roofline.inference.synthetic import frame as synthetic_frame

CEILINGS = spec_ceilings("agx_orin_64gb", "fp32", engine="cpu")


def nan_model(path):
    x = helper.make_tensor_value_info("x", TensorProto.FLOAT, [1, 3, 8, 8])
    y = helper.make_tensor_value_info("y", TensorProto.FLOAT, [1, 3, 8, 8])
    graph = helper.make_graph([helper.make_node("Neg", ["x"], ["n"], name="neg"),
                               helper.make_node("Sqrt", ["n"], ["y"], name="sqrt")], "nan", [x], [y])
    onnx.save(helper.make_model(graph, opset_imports=[helper.make_opsetid("", 17)]), str(path))
    return str(path)


def image_frame(arrival_s, width=32, height=24, encoding="rgb8", index=0):
    pixels = synthetic_frame(index, width, height, encoding)
    return Frame(arrival_s=arrival_s, encoding=encoding, width=width, height=height,
                 step=pixels.shape[1] * pixels.shape[2] * pixels.itemsize, data=pixels.tobytes())


def pipeline(model="zoo:tiny_cnn", **kwargs):
    return InferencePipeline(InferenceConfig(model=model, **kwargs), lambda: CEILINGS, clock=SimClock())


def test_first_frame_gives_a_report_covering_every_node():
    p = pipeline(profile_every_frames=0, profile_every_s=0)
    p.submit(image_frame(0.0))
    result = p.process_next()
    assert result.error == "" and result.outputs and result.report is not None
    assert {l.name for l in result.report.analysis.layers} == {l.name for l in p.loaded.cost.layers}
    assert result.report.reason == "start"
    p.submit(image_frame(0.0))
    assert p.process_next().report is None  # profiling is not on the fast path
    p.close()


def test_overload_drops_the_oldest_and_counts_it():
    p = pipeline(queue_depth=2, profile_every_frames=0, profile_every_s=0)
    for i in range(5):
        p.submit(image_frame(float(i), index=i))
    first = p.process_next()
    assert first.frame.arrival_s == 3.0  # frames 0..2 were dropped, 3 and 4 kept
    assert first.counters.dropped == 3 and first.counters.received == 5
    p.close()


@pytest.mark.parametrize("bad,message", [
    (dict(encoding="yuv422"), "unsupported image encoding"),
    (dict(width=0, height=0), "empty image"),
    (dict(data=b"\0" * 10), "needs"),
])
def test_bad_frames_are_rejected_and_the_pipeline_keeps_serving(bad, message):
    p = pipeline(profile_every_frames=0, profile_every_s=0)
    good = image_frame(0.0)
    p.submit(Frame(**(good.__dict__ | bad)))
    rejected = p.process_next()
    assert message in rejected.error and rejected.counters.rejected == 1 and not rejected.outputs
    p.submit(good)
    served = p.process_next()
    assert served.error == "" and served.outputs
    p.close()


def test_nan_outputs_are_flagged(tmp_path):
    p = pipeline(model=nan_model(tmp_path / "nan.onnx"), profile_every_frames=0, profile_every_s=0)
    p.submit(Frame(arrival_s=0.0, tensors={"x": np.ones((1, 3, 8, 8), np.float32)}))
    result = p.process_next()
    assert result.counters.nan_outputs == 1 and "output(s) y hold NaN/Inf" in result.error
    p.close()


def test_failed_model_switch_keeps_the_old_model(tmp_path):
    p = pipeline(profile_every_frames=0, profile_every_s=0)
    corrupt = tmp_path / "corrupt.onnx"
    corrupt.write_bytes(b"this is not protobuf")
    with pytest.raises(ModelLoadError, match="not a valid ONNX model"):
        p.switch(InferenceConfig(model=str(corrupt)))
    p.submit(image_frame(0.0))
    assert p.process_next().outputs
    p.switch(InferenceConfig(model=nan_model(tmp_path / "nan.onnx")))
    assert p.config.model == "zoo:tiny_cnn"  # handed over: the worker swaps before its next frame
    p.process_next(timeout_s=0.0)
    assert p.config.model.endswith("nan.onnx")
    p.close()


def test_wrong_tensor_name_names_the_expected_ones():
    p = pipeline(profile_every_frames=0, profile_every_s=0)
    p.submit(Frame(arrival_s=0.0, tensors={"images": np.zeros((1, 3, 64, 64), np.float32)}))
    result = p.process_next()
    # The input cannot feed the model: rejected, like a bad image (the backend did not fail).
    assert "unknown input tensor name(s) 'images'" in result.error and result.counters.rejected == 1
    assert result.counters.failed == 0
    p.close()


def test_invalid_config_lists_all_problems():
    with pytest.raises(ValueError, match="queue_depth must be >= 1.*precision must be"):
        InferenceConfig(model="zoo:tiny_cnn", queue_depth=0, precision="fp64").validate()


def test_an_input_that_cannot_become_a_frame_is_rejected_in_a_result_of_its_own():
    """An undecodable tensor message: its own result (the node's stats message), not only a count
    that waits for the next good frame (with nothing but bad input, nothing was published)."""
    p = pipeline()
    p.submit(Frame(arrival_s=0.0, problem="bad tensor input: tensor 'x': 7 bytes of data, shape [2] of float32 "
                                          "needs 8"))
    result = p.process_next()
    assert result.counters.received == 1 and result.counters.rejected == 1 and result.counters.processed == 0
    assert result.error == ("frame 1 rejected: bad tensor input: tensor 'x': 7 bytes of data, shape [2] of float32 "
                            "needs 8")
    p.submit(image_frame(0.0))
    assert p.process_next().counters.processed == 1
