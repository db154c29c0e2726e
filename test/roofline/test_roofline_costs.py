"""Cost model against independent counts: onnx-tool's per-node MACs on torch-exported
ResNet-18 and MobileNetV2, hand-computed layers on torch and onnx.helper graphs, and errors."""

from __future__ import annotations

import numpy as np
import pytest
from onnx import TensorProto, helper, numpy_helper

from edge_roofline.models import zoo
from edge_roofline.roofline.costs import ModelLoadError, ShapeError, analyze_model

F = TensorProto.FLOAT


def _onnx_tool_macs(path, input_shapes=None) -> dict[str, float]:
    import onnx_tool

    graph = onnx_tool.Model(str(path)).graph
    graph.graph_reorder_nodes()
    graph.shape_infer({k: np.zeros(v, np.float32) for k, v in (input_shapes or {}).items()} or None)
    graph.profile()
    return {name: node.macs[0] for name, node in graph.nodemap.items()}


def _model(nodes, inputs, outputs, inits=(), opset=17):
    graph = helper.make_graph(
        nodes, "g", [helper.make_tensor_value_info(n, t, s) for n, (s, t) in inputs.items()],
        [helper.make_tensor_value_info(n, F, None) for n in outputs],
        [numpy_helper.from_array(np.asarray(v), k) for k, v in dict(inits).items()])
    return helper.make_model(graph, opset_imports=[helper.make_opsetid("", opset)])


def _w(*shape):
    return np.zeros(shape, np.float32)


# ---- real models ------------------------------------------------------------------------

@pytest.mark.parametrize("name, min_nodes", [("resnet18", 21), ("mobilenetv2", 52)])
def test_conv_and_gemm_macs_match_onnx_tool_per_node(torch_models, name, min_nodes):
    cost = analyze_model(torch_models[name])
    reference = _onnx_tool_macs(torch_models[name])
    compared = [l for l in cost.layers if l.op_type in ("Conv", "Gemm")]
    assert len(compared) >= min_nodes
    for layer in compared:
        # onnx-tool counts a bias add as one MAC per output; we count it as one FLOP.
        bias_adds = layer.flops - 2 * layer.macs
        assert reference[layer.name] == pytest.approx(layer.macs + bias_adds, rel=1e-9), layer.name
    if name == "mobilenetv2":  # depthwise convs are among the compared nodes
        assert any(l.input_shapes[1][1] == 1 and l.input_shapes[0][1] > 1 for l in compared)


def test_resnet18_stem_conv_hand_count(torch_models):
    cost = analyze_model(torch_models["resnet18"])
    stem = next(l for l in cost.layers if l.op_type == "Conv")
    assert stem.output_shapes[0] == (1, 64, 32, 32)
    out = 64 * 32 * 32
    assert stem.macs == out * 3 * 7 * 7
    assert stem.flops == 2 * out * 3 * 7 * 7 + out  # folded BatchNorm left a bias
    assert stem.param_bytes == 4 * (64 * 3 * 7 * 7 + 64)
    assert stem.bytes_read == 4 * 3 * 64 * 64 + stem.param_bytes
    assert stem.bytes_written == 4 * out


def test_resnet50_totals_4_1_gmacs():
    cost = analyze_model(zoo.resnet50())
    assert 4.05e9 < cost.total_macs < 4.15e9
    assert 8.1e9 < cost.total_flops < 8.3e9  # Pagoda's analytical 8.21 GFLOP
    assert cost.unknown_ops == ()


def test_an_input_shape_given_for_a_static_input_resizes_every_layer():
    # The model's own shapes of the tensors after the input stayed: at 128x128 conv0 was still
    # costed at 64x64 (3.6 MFLOP), only the input's bytes grew.
    declared, given = (analyze_model(zoo.tiny_cnn(), input_shapes={"input": shape}) for shape in
                       [(1, 3, 64, 64), (1, 3, 128, 128)])
    conv0 = [next(layer for layer in cost.layers if layer.name == "conv0") for cost in (declared, given)]
    assert conv0[1].flops == pytest.approx(4 * conv0[0].flops)
    assert given.total_flops == pytest.approx(4 * declared.total_flops, rel=0.01)


def test_lstm_hand_count_and_symbolic_batch(torch_models):
    path = torch_models["lstm"]
    with pytest.raises(ShapeError, match=r"'frames' dimension 1 .*'batch'"):
        analyze_model(path)  # seq fills from batch, the batch axis is symbolic and not leading
    seq, batch, hidden = 9, 4, 32
    cost = analyze_model(path, input_shapes={"frames": (seq, batch, 20)})
    lstms = [l for l in cost.layers if l.op_type == "LSTM"]
    assert len(lstms) == 2
    for layer, inputs in zip(lstms, (20, 32)):
        steps = seq * batch
        assert layer.macs == steps * 4 * hidden * (inputs + hidden)
        # gate sums (4H) + cell (18H) + two bias vectors (8H) per step
        assert layer.flops == 2 * layer.macs + steps * hidden * (4 + 18 + 8)
    assert cost.layer("/head/MatMul").macs == seq * batch * 32 * 10


def test_transformer_encoder_attention_hand_count(torch_models):
    b, s, h, heads, d = 3, 32, 64, 4, 16
    cost = analyze_model(torch_models["encoder"], input_shapes={"tokens": (b, s, h)})
    matmuls = {l.name: l for l in cost.layers if l.op_type == "MatMul"}
    assert matmuls["/MatMul"].macs == b * heads * s * s * d       # Q K^T
    assert matmuls["/MatMul_1"].macs == b * heads * s * s * d     # softmax(.) V
    assert matmuls["/qkv/MatMul"].macs == b * s * h * 3 * h
    softmax = next(l for l in cost.layers if l.op_type == "Softmax")
    assert softmax.flops == 5 * b * heads * s * s
    norm = next(l for l in cost.layers if l.op_type == "LayerNormalization")
    assert norm.flops == 7 * b * s * h + 2 * b * s
    assert cost.unknown_ops == ()
    # Data movement and views: no FLOPs; views move no bytes either.
    for l in cost.layers:
        if l.op_type in ("Transpose", "Split", "Concat", "Gather"):
            assert l.flops == 0 and l.macs == 0
        if l.op_type in ("Reshape", "Unsqueeze", "Shape", "Constant"):
            assert l.flops == 0 and l.bytes == 0 and l.is_view
    transpose = next(l for l in cost.layers if l.op_type == "Transpose")
    assert transpose.bytes == 2 * transpose.bytes_written > 0


# ---- hand-built graphs ------------------------------------------------------------------

def _one(node, inputs, inits=(), opset=17, **kw):
    cost = analyze_model(_model([node], inputs, list(node.output[:1]), inits, opset), **kw)
    return cost.layers[0]


@pytest.mark.parametrize("x, w, attrs, out_elems", [
    ((2, 8, 50), (16, 8, 3), {"dilations": [2]}, 2 * 16 * 46),                    # 1-D, dilated
    ((1, 8, 20, 20), (8, 2, 3, 3), {"group": 4, "pads": [1] * 4}, 8 * 20 * 20),  # grouped
    ((1, 4, 6, 10, 10), (5, 4, 3, 3, 3), {"strides": [1, 2, 2]}, 5 * 4 * 4 * 4),  # 3-D, strided
])
def test_conv_variants(x, w, attrs, out_elems):
    node = helper.make_node("Conv", ["x", "w", "b"], ["y"], name="c", **attrs)
    layer = _one(node, {"x": (x, F)}, {"w": _w(*w), "b": _w(w[0])})
    assert layer.macs == out_elems * int(np.prod(w[1:]))
    assert layer.flops == 2 * layer.macs + out_elems


def test_conv_transpose_counts_scatter_per_input_element():
    node = helper.make_node("ConvTranspose", ["x", "w"], ["y"], name="up", strides=[2, 2])
    layer = _one(node, {"x": ((1, 8, 5, 5), F)}, {"w": _w(8, 4, 3, 3)})
    assert layer.output_shapes[0] == (1, 4, 11, 11)
    assert layer.macs == 8 * 5 * 5 * 4 * 3 * 3


def test_batched_broadcast_matmul_and_gemm():
    node = helper.make_node("MatMul", ["a", "b"], ["y"], name="mm")
    layer = _one(node, {"a": ((3, 1, 5, 7), F), "b": ((4, 7, 2), F)})
    assert layer.output_shapes[0] == (3, 4, 5, 2)
    assert layer.macs == 3 * 4 * 5 * 2 * 7
    gemm = helper.make_node("Gemm", ["a", "w", "c"], ["y"], name="fc", transB=1)
    layer = _one(gemm, {"a": ((6, 10), F)}, {"w": _w(3, 10), "c": _w(3)})
    assert (layer.macs, layer.flops) == (6 * 3 * 10, 2 * 6 * 3 * 10 + 6 * 3)


@pytest.mark.parametrize("equation, shapes, macs, flops", [
    ("bij,bjk->bik", [(2, 3, 4), (2, 4, 5)], 2 * 3 * 4 * 5, 2 * 2 * 3 * 4 * 5),
    ("...ij,...jk->...ik", [(6, 3, 4), (6, 4, 5)], 6 * 3 * 4 * 5, 2 * 6 * 3 * 4 * 5),
    ("ij->ji", [(3, 4)], 0, 0),        # a permutation only moves data
    ("ij->i", [(3, 4)], 0, 12),        # a sum: one add per element
])
def test_einsum(equation, shapes, macs, flops):
    names = [f"x{i}" for i in range(len(shapes))]
    node = helper.make_node("Einsum", names, ["y"], name="e", equation=equation)
    layer = _one(node, {n: (s, F) for n, s in zip(names, shapes)})
    assert (layer.macs, layer.flops) == (macs, flops)


def test_onnx_attention_op():
    b, heads, s, kv, d = 2, 4, 8, 12, 16
    node = helper.make_node("Attention", ["q", "k", "v"], ["y"], name="attn")
    layer = _one(node, {"q": ((b, heads, s, d), F), "k": ((b, heads, kv, d), F),
                        "v": ((b, heads, kv, d), F)}, opset=23)
    assert layer.macs == 2 * b * heads * s * kv * d
    assert layer.flops == 2 * layer.macs + 6 * b * heads * s * kv


def test_gru_and_rnn_hand_count():
    seq, batch, inputs, hidden = 5, 2, 6, 8
    for op, gates, cell in (("GRU", 3, 14), ("RNN", 1, 1)):
        node = helper.make_node(op, ["x", "w", "r"], ["y"], name=op, hidden_size=hidden)
        layer = _one(node, {"x": ((seq, batch, inputs), F)},
                     {"w": _w(1, gates * hidden, inputs), "r": _w(1, gates * hidden, hidden)})
        assert layer.macs == seq * batch * gates * hidden * (inputs + hidden)
        assert layer.flops == 2 * layer.macs + seq * batch * hidden * (gates + cell)


def test_elementwise_pooling_norm_reduce_resize_counts():
    x = {"x": ((2, 8, 16, 16), F)}
    n = 2 * 8 * 16 * 16
    cases = [
        (helper.make_node("Sigmoid", ["x"], ["y"]), {}, 4 * n),
        (helper.make_node("Relu", ["x"], ["y"]), {}, n),
        (helper.make_node("Add", ["x", "c"], ["y"]), {"c": _w(8, 1, 1)}, n),
        (helper.make_node("MaxPool", ["x"], ["y"], kernel_shape=[2, 2], strides=[2, 2]), {}, n),
        (helper.make_node("GlobalAveragePool", ["x"], ["y"]), {}, n),
        (helper.make_node("BatchNormalization", ["x", "s", "b", "m", "v"], ["y"]),
         {k: _w(8) for k in "sbmv"}, 2 * n),
        (helper.make_node("InstanceNormalization", ["x", "s", "b"], ["y"]),
         {"s": _w(8), "b": _w(8)}, 7 * n + 2 * 2 * 8),
        (helper.make_node("GroupNormalization", ["x", "s", "b"], ["y"], num_groups=4),
         {"s": _w(8), "b": _w(8)}, 7 * n + 2 * 2 * 4),
        (helper.make_node("ReduceMean", ["x", "ax"], ["y"], keepdims=1),
         {"ax": np.array([2, 3], np.int64)}, n + 2 * 8),
        (helper.make_node("Resize", ["x", "", "sc"], ["y"], mode="linear"),
         {"sc": np.array([1, 1, 2, 2], np.float32)}, 4 * n * 2 * 4),  # 4x outputs, 4 taps, MAC each
        (helper.make_node("Resize", ["x", "", "sc"], ["y"], mode="nearest"),
         {"sc": np.array([1, 1, 2, 2], np.float32)}, 0),
        (helper.make_node("Softmax", ["x"], ["y"], axis=1), {}, 5 * n),
    ]
    for i, (node, inits, flops) in enumerate(cases):
        node.name = f"n{i}"
        layer = _one(node, x, inits, opset=18)
        assert layer.flops == flops, (node.op_type, layer.flops, flops)
        assert layer.macs == 0 and layer.known


def test_precision_sets_float_tensor_bytes_and_keeps_integer_ones():
    nodes = [helper.make_node("Gather", ["table", "idx"], ["emb"], name="gather"),
             helper.make_node("Relu", ["emb"], ["y"], name="relu")]
    model = _model(nodes, {"idx": ((4, 10), TensorProto.INT64)}, ["y"], {"table": _w(100, 32)})
    sizes = {}
    for precision in ("fp32", "fp16", "int8", "mixed"):
        cost = analyze_model(model, precision=precision)
        gather = cost.layer("gather")
        assert gather.bytes_read - gather.param_bytes == 4 * 10 * 8  # int64 indices, any precision
        sizes[precision] = cost.layer("relu").bytes
    assert sizes == {"fp32": 2 * 4 * 4 * 10 * 32, "fp16": 2 * 2 * 4 * 10 * 32,
                     "int8": 2 * 4 * 10 * 32, "mixed": 2 * 4 * 4 * 10 * 32}
    half = helper.make_model(model.graph, opset_imports=model.opset_import)
    half.graph.initializer[0].CopyFrom(numpy_helper.from_array(np.zeros((100, 32), np.float16), "table"))
    half.graph.output[0].type.tensor_type.elem_type = TensorProto.FLOAT16
    cost = analyze_model(half, precision="mixed")
    assert cost.layer("relu").bytes == 2 * 2 * 4 * 10 * 32 and cost.layer("relu").precision == "fp16"


def test_gather_reads_the_rows_it_gathers_not_its_table():
    nodes = [helper.make_node("Gather", ["table", "idx"], ["emb"], name="lookup")]
    model = _model(nodes, {"idx": ((1, 3), TensorProto.INT64)}, ["emb"], {"table": _w(5000, 64)})
    lookup = analyze_model(model).layer("lookup")
    assert lookup.param_bytes == 4 * 3 * 64  # three rows of the 5000-row table
    assert lookup.bytes_read == 4 * 3 * 64 + 8 * 3 and lookup.bytes_written == 4 * 3 * 64


def test_weight_precision_sizes_matrices_only():
    nodes = [helper.make_node("MatMul", ["x", "w"], ["h"], name="mm"),
             helper.make_node("Add", ["h", "b"], ["y"], name="bias")]
    model = _model(nodes, {"x": ((2, 256), F)}, ["y"], {"w": _w(256, 512), "b": _w(512)})
    by_weights = {}
    for weights in ("fp16", "fp8", "int8", "int4"):
        cost = analyze_model(model, precision="fp16", weight_precision=weights)
        mm, bias = cost.layer("mm"), cost.layer("bias")
        assert mm.bytes_read == 2 * 2 * 256 + mm.weight_bytes  # fp16 activations
        assert bias.param_bytes == 2 * 512 and bias.weight_bytes == 0  # a bias keeps fp16
        by_weights[weights] = cost.total_weight_bytes
    assert by_weights == {"fp16": 2 * 256 * 512, "fp8": 256 * 512, "int8": 256 * 512,
                          "int4": 256 * 512 / 2}
    assert analyze_model(model, precision="fp16").total_weight_bytes == by_weights["fp16"]
    with pytest.raises(ValueError, match="weight precision 'int3'"):
        analyze_model(model, weight_precision="int3")


def test_shapes_computed_from_values_are_folded():
    # Key positions of a causal mask: Range(0, Shape(kv)[2]) over a KV cache of symbolic length,
    # which onnx's own inference leaves without a shape.
    nodes = [helper.make_node("Concat", ["past", "new"], ["kv"], name="append", axis=2),
             helper.make_node("Shape", ["kv"], ["kv_shape"], name="shape", start=2, end=3),
             helper.make_node("Squeeze", ["kv_shape"], ["total"], name="total"),
             helper.make_node("Range", ["zero", "total", "one"], ["positions"], name="range"),
             helper.make_node("Cast", ["positions"], ["fpos"], name="cast", to=F),
             helper.make_node("Mul", ["fpos", "fpos"], ["y"], name="square")]
    model = _model(nodes, {"past": ((1, 2, "past", 8), F), "new": ((1, 2, 1, 8), F)}, ["y", "kv"],
                   {"zero": np.array(0, np.int64), "one": np.array(1, np.int64)})
    for past in (0, 7, 300):
        cost = analyze_model(model, input_shapes={"past": (1, 2, past, 8)})
        assert cost.layer("range").output_shapes == ((past + 1,),)
        assert cost.layer("square").flops == past + 1
        assert cost.layer("append").bytes == 2 * 4 * (2 * 8) * (past + 1)  # read and write it all


def test_unknown_ops_are_reported_not_zeroed():
    nodes = [helper.make_node("Relu", ["x"], ["r"], name="relu"),
             helper.make_node("NonMaxSuppression", ["boxes", "scores"], ["sel"], name="nms"),
             helper.make_node("Relu", ["r"], ["y"], name="relu2")]
    model = _model(nodes, {"x": ((1, 4), F), "boxes": ((1, 10, 4), F), "scores": ((1, 1, 10), F)},
                   ["y", "sel"])
    model.graph.output[1].type.tensor_type.elem_type = TensorProto.INT64
    model.graph.node.insert(2, helper.make_node("FancyOp", ["r"], ["f"], name="custom", domain="acme"))
    model.opset_import.append(helper.make_opsetid("acme", 1))
    cost = analyze_model(model)
    assert set(cost.unknown_ops) == {"NonMaxSuppression", "acme.FancyOp"}
    nms = cost.layer("nms")
    assert not nms.known and nms.bytes_read == 4 * (40 + 10)
    assert cost.layer("relu").known and cost.layer("relu").flops == 4


# ---- bad input ---------------------------------------------------------------------------

def test_unreadable_files_raise_model_load_error(tmp_path):
    with pytest.raises(ModelLoadError, match="no such file"):
        analyze_model(tmp_path / "missing.onnx")
    garbage = tmp_path / "garbage.onnx"
    garbage.write_bytes(bytes(range(256)) * 8)
    text = tmp_path / "notes.onnx"
    text.write_text("this is not a model\n")
    for path in (garbage, text):
        with pytest.raises(ModelLoadError, match=path.name):
            analyze_model(path)


def test_node_without_shape_is_named():
    nodes = [helper.make_node("FancyOp", ["x"], ["f"], name="custom", domain="acme"),
             helper.make_node("Conv", ["f", "w"], ["y"], name="conv_after_custom")]
    model = _model(nodes, {"x": ((1, 3, 8, 8), F)}, ["y"], {"w": _w(4, 3, 3, 3)})
    model.opset_import.append(helper.make_opsetid("acme", 1))
    with pytest.raises(ShapeError, match=r"'conv_after_custom'.*'f' \(produced by 'custom'\)"):
        analyze_model(model)


def test_input_shape_errors_name_the_tensor():
    model = _model([helper.make_node("Relu", ["x"], ["y"], name="r")], {"x": (["N", "T", 4], F)}, ["y"])
    with pytest.raises(ShapeError, match=r"'x' dimension 1 is symbolic \('T'\)"):
        analyze_model(model)
    assert analyze_model(model, input_shapes={"x": (2, 5, 4)}).layers[0].output_shapes == ((2, 5, 4),)
    with pytest.raises(ShapeError, match="graph inputs are"):
        analyze_model(model, input_shapes={"nope": (1, 1, 4)})
    with pytest.raises(ShapeError, match="rank"):
        analyze_model(model, input_shapes={"x": (1, 4)})
    static = _model([helper.make_node("Relu", ["x"], ["y"], name="r")], {"x": ((1, 4), F)}, ["y"])
    with pytest.raises(ShapeError, match="static"):
        analyze_model(static, batch=4)


def test_batch_fills_symbolic_leading_dim_and_unnamed_nodes_get_index_names():
    model = _model([helper.make_node("Relu", ["x"], ["y"])], {"x": (["N", 4], F)}, ["y"])
    cost = analyze_model(model, batch=6)
    assert cost.input_shapes == {"x": (6, 4)} and cost.batch == 6
    assert cost.layers[0].name == "Relu_0" and cost.layers[0].flops == 24
