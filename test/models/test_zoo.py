"""The model zoo: every model is a valid ONNX graph with unique node names, runs in ONNX
Runtime (the big ones only through the checker and shape inference, to keep the suite fast),
and has the compute scale of the network it imitates."""

from __future__ import annotations

import numpy as np
import onnx
import onnxruntime as ort
import pytest
from onnx import numpy_helper

from edge_roofline.models import zoo

SMALL = ("tiny_cnn", "mobilenetv2", "resnet18", "lstm", "transformer")
SMALL_OPTS = {"transformer": {"seq_len": 32, "layers": 2, "vocab": 1000},
              "lstm": {"seq_len": 20}, "resnet18": {"resolution": 96}}


def _shapes(model: onnx.ModelProto) -> dict[str, list[int]]:
    infos = [*model.graph.input, *model.graph.value_info, *model.graph.output]
    return {v.name: [d.dim_value for d in v.type.tensor_type.shape.dim] for v in infos}


def conv_gemm_macs(model: onnx.ModelProto) -> int:
    """Multiply-accumulates of Conv and Gemm nodes: out elements x (Cin/groups x Kh x Kw)."""
    shapes = _shapes(model)
    weights = {i.name: i.dims for i in model.graph.initializer}
    macs = 0
    for node in model.graph.node:
        if node.op_type in ("Conv", "Gemm"):
            w = weights[node.input[1]]
            per_out = int(np.prod(w[1:]))
            macs += int(np.prod(shapes[node.output[0]])) * per_out
    return macs


def _feeds(session: ort.InferenceSession) -> dict[str, np.ndarray]:
    rng = np.random.default_rng(1)
    return {i.name: (rng.integers(0, 1000, i.shape) if i.type == "tensor(int64)"
                     else rng.random(i.shape, dtype=np.float32)) for i in session.get_inputs()}


@pytest.mark.parametrize("name", zoo.NAMES)
def test_every_model_is_valid_with_unique_node_names(name):
    opts = SMALL_OPTS.get(name, {})
    model = zoo.build(name, **opts)
    onnx.checker.check_model(model, full_check=True)
    names = [n.name for n in model.graph.node]
    assert all(names) and len(set(names)) == len(names)
    assert model.opset_import[0].version == zoo.OPSET and model.ir_version == zoo.IR_VERSION
    for out in model.graph.output:  # shape inference reached the outputs
        dims = out.type.tensor_type.shape.dim
        # The language model's lengths stay symbolic (one graph for prefill and decode).
        assert dims and all(d.dim_value > 0 or (name == "tiny_decoder" and d.dim_param)
                            for d in dims), out


@pytest.mark.parametrize("name", SMALL)
def test_small_models_run_in_onnxruntime_with_finite_outputs(name):
    model = zoo.build(name, batch=2, **SMALL_OPTS.get(name, {}))
    session = ort.InferenceSession(model.SerializeToString(), providers=["CPUExecutionProvider"])
    outputs = session.run(None, _feeds(session))
    inferred = _shapes(model)
    for info, value in zip(session.get_outputs(), outputs):
        assert list(value.shape) == inferred[info.name]
        assert value.shape[0 if name != "lstm" else 1] == 2  # batch is honoured
        assert np.isfinite(value).all()


def test_resnet50_has_the_reference_compute():
    # torchvision ResNet-50 at 224x224: 4.09 GMACs (convs + fc)
    assert conv_gemm_macs(zoo.build("resnet50")) / 1e9 == pytest.approx(4.09, rel=0.01)
    assert conv_gemm_macs(zoo.build("resnet18")) / 1e9 == pytest.approx(1.81, rel=0.01)
    assert conv_gemm_macs(zoo.build("mobilenetv2")) / 1e9 == pytest.approx(0.30, rel=0.02)


def test_yolo_tiny_is_yolov8n_scale():
    model = zoo.build("yolo_tiny")
    # YOLOv8n at 640x640: 8.7 GFLOPs (2 x MACs), 8400 anchors of 64 box + 80 class channels
    assert 2 * conv_gemm_macs(model) / 1e9 == pytest.approx(8.7, rel=0.03)
    assert _shapes(model)["detections"] == [1, 144, 8400]


def test_yolo_tiny_runs_at_small_resolution():
    model = zoo.build("yolo_tiny", resolution=128)
    session = ort.InferenceSession(model.SerializeToString(), providers=["CPUExecutionProvider"])
    (out,) = session.run(None, _feeds(session))
    assert out.shape == (1, 144, (16 * 16 + 8 * 8 + 4 * 4)) and np.isfinite(out).all()


def test_transformer_has_attention_layernorm_and_gelu():
    model = zoo.build("transformer", seq_len=64, layers=2)
    ops = [n.op_type for n in model.graph.node]
    assert ops.count("Softmax") == 2 and ops.count("Erf") == 2
    assert ops.count("LayerNormalization") == 1 + 2 * 2
    assert _shapes(model)["layer0.scores"] == [1, 4, 64, 64]
    with pytest.raises(ValueError, match="divisible"):
        zoo.build("transformer", hidden=100, heads=3)


def test_lstm_uses_two_onnx_lstm_layers():
    ops = [n.op_type for n in zoo.build("lstm").graph.node]
    assert ops.count("LSTM") == 2


def test_builds_are_deterministic_and_seeded():
    a, b = zoo.build("tiny_cnn"), zoo.build("tiny_cnn")
    assert a.SerializeToString() == b.SerializeToString()
    w = lambda m: numpy_helper.to_array(m.graph.initializer[0])  # noqa: E731
    assert not np.array_equal(w(a), w(zoo.build("tiny_cnn", seed=1)))


def test_save_writes_a_loadable_file(tmp_path):
    path = zoo.save("tiny_cnn", tmp_path / "sub" / "tiny.onnx", batch=3)
    model = onnx.load(str(path))
    assert model.graph.input[0].type.tensor_type.shape.dim[0].dim_value == 3


def test_unknown_name_lists_the_zoo():
    with pytest.raises(KeyError, match="resnet18"):
        zoo.build("vgg16")
