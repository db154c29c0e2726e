"""The per-op counting rules of the cost model (roofline/costs.py): FLOPs and MACs of each ONNX
op from its static shapes, following the convention in costs.py's docstring and
``docs/roofline.md``. An op without a rule here is reported as unknown, never guessed."""

from __future__ import annotations

import math
from typing import Callable, Sequence

Shape = tuple[int, ...]

# FLOPs per output element of unary activations and elementwise functions.
_ACTIVATION_FLOPS = {
    "Relu": 1, "Abs": 1, "Neg": 1, "Floor": 1, "Ceil": 1, "Round": 1, "Sign": 1,
    "Reciprocal": 1, "Sqrt": 1, "Exp": 1, "Log": 1, "Erf": 1, "Tanh": 1, "Sin": 1, "Cos": 1,
    "Tan": 1, "Asin": 1, "Acos": 1, "Atan": 1, "Sinh": 1, "Cosh": 1, "Asinh": 1, "Acosh": 1,
    "Atanh": 1, "ThresholdedRelu": 1, "IsNaN": 1, "IsInf": 1, "Not": 1,
    "LeakyRelu": 2,    # compare, multiply
    "PRelu": 2,        # compare, multiply
    "Clip": 2,         # max, min
    "Shrink": 2,       # compare, add
    "Sigmoid": 4,      # neg, exp, add, div
    "HardSigmoid": 4,  # mul, add, clip (2)
    "HardSwish": 5,    # HardSigmoid + mul
    "Softplus": 3,     # exp, add, log
    "Softsign": 3,     # abs, add, div
    "Elu": 4,          # compare, exp, sub, mul
    "Celu": 4,         # as Elu
    "Selu": 5,         # Elu + scale
    "Mish": 5,         # Softplus (3), tanh, mul
    "Swish": 5,        # Sigmoid (4), mul
    "QuantizeLinear": 2,    # scale, round/saturate
    "DequantizeLinear": 2,  # subtract zero point, scale
    "DynamicQuantizeLinear": 4,  # min and max reductions, scale, round
}
# Binary (broadcasting) arithmetic and comparisons: 1 FLOP per output element per operation.
_BINARY_OPS = {"Add", "Sub", "Mul", "Div", "Pow", "Mod", "BitShift", "Equal", "Less",
               "Greater", "LessOrEqual", "GreaterOrEqual", "And", "Or", "Xor", "Where",
               "BitwiseAnd", "BitwiseOr", "BitwiseXor"}
_VARIADIC_OPS = {"Sum", "Max", "Min", "Mean"}  # n inputs: n-1 operations (Mean: + divide)
# 0 FLOPs, bytes moved.
_DATA_MOVEMENT_OPS = {
    "Concat", "Split", "Slice", "Transpose", "Gather", "GatherElements", "GatherND",
    "Scatter", "ScatterND", "ScatterElements", "Pad", "Cast", "CastLike", "Expand", "Tile",
    "DepthToSpace", "SpaceToDepth", "Compress", "OneHot", "ConstantOfShape", "Range",
    "EyeLike", "ReverseSequence", "Trilu", "NonZero", "MaxUnpool"}
# Aliases of their input: 0 FLOPs and 0 bytes (runtimes do not copy).
VIEW_OPS = {"Reshape", "Flatten", "Squeeze", "Unsqueeze", "Identity", "Dropout", "Shape",
             "Size", "Constant"}
# Reductions: FLOPs per input element, plus FLOPs per output element (the final divide/log/sqrt).
_REDUCTIONS = {"ReduceSum": (1, 0), "ReduceMean": (1, 1), "ReduceMax": (1, 0),
               "ReduceMin": (1, 0), "ReduceProd": (1, 0), "ReduceL1": (2, 0),
               "ReduceL2": (2, 1), "ReduceSumSquare": (2, 0), "ReduceLogSum": (1, 1),
               "ReduceLogSumExp": (2, 1), "ArgMax": (1, 0), "ArgMin": (1, 0), "CumSum": (1, 0)}
_SOFTMAX_FLOPS = 5      # per element: max, subtract, exp, sum, divide
# Normalisations, per element: mean (1), subtract (1), square + accumulate (2), normalise (1),
# scale (1), shift (1); plus 2 per normalised group (add epsilon, reciprocal square root).
_NORM_FLOPS = 7
_NORM_GROUP_FLOPS = 2
# Recurrent cells: (gates, elementwise FLOPs per hidden unit and step).
#   LSTM: 3 sigmoids (4 each) + 2 tanh + c = f*c + i*g (3) + h = o*tanh(c) (1) = 18
#   GRU:  2 sigmoids + tanh + r*(Rh) (1) + h = (1-z)*n + z*h (4) = 14;  RNN: tanh = 1
_RNN_CELLS = {"LSTM": (4, 18), "GRU": (3, 14), "RNN": (1, 1)}


def numel(shape: Sequence[int]) -> int:
    return math.prod(shape)


def attribute(node, name: str, default=None):
    import onnx

    for a in node.attribute:
        if a.name == name:
            return onnx.helper.get_attribute_value(a)
    return default


class Node:
    """What a rule sees: the node, its attributes and the static shapes of its tensors
    (``None`` for an absent optional input)."""

    def __init__(self, proto, ins: list[Shape | None], outs: list[Shape | None]):
        self.proto, self.ins, self.outs = proto, ins, outs

    def attr(self, name: str, default=None):
        return attribute(self.proto, name, default)

    def has_input(self, i: int) -> bool:
        return i < len(self.ins) and self.ins[i] is not None

    @property
    def out_elems(self) -> int:
        return numel(self.outs[0])


# A rule returns (macs, other_flops).
Rule = Callable[[Node], tuple[float, float]]


def _conv(weight_index: int, bias_index: int | None) -> Rule:
    def rule(n: Node):
        w = n.ins[weight_index]  # (Cout, Cin / group, k1, ..., kd)
        macs = n.out_elems * numel(w[1:])
        bias = n.out_elems if bias_index is not None and n.has_input(bias_index) else 0
        return macs, bias
    return rule


def _conv_transpose(n: Node):
    # Each input element scatters into Cout / group x kernel outputs.
    w = n.ins[1]  # (Cin, Cout / group, k1, ..., kd)
    return numel(n.ins[0]) * numel(w[1:]), (n.out_elems if n.has_input(2) else 0)


def _matmul(n: Node):
    a = n.ins[0]
    k = a[-1] if a else 1
    return n.out_elems * k, 0  # every output element is a K-long dot product (any batching)


def _gemm(n: Node):
    a = n.ins[0]
    k = a[0] if n.attr("transA", 0) else a[1]
    m_n = n.out_elems
    extra = 0
    if n.has_input(2):
        extra += m_n * (1 if n.attr("beta", 1.0) == 1.0 else 2)
    if n.attr("alpha", 1.0) != 1.0:
        extra += m_n
    return m_n * k, extra


def _einsum(n: Node):
    equation = n.attr("equation").decode() if isinstance(n.attr("equation"), bytes) else n.attr("equation")
    equation = equation.replace(" ", "")
    lhs, _, rhs = equation.partition("->")
    terms = lhs.split(",")
    sizes: dict[str, int] = {}
    ellipsis_shapes = []
    for term, shape in zip(terms, n.ins):
        letters = term.replace("...", "")
        n_ellipsis = len(shape) - len(letters)
        if "..." in term:
            ellipsis_shapes.append(shape[term.index("..."):term.index("...") + n_ellipsis])
        for letter, dim in zip(term.replace("...", "." * n_ellipsis), shape):
            if letter != ".":
                sizes[letter] = max(sizes.get(letter, 1), dim)
    broadcast = 1
    if ellipsis_shapes:
        import numpy as np
        broadcast = numel(np.broadcast_shapes(*ellipsis_shapes))
    space = numel(sizes.values()) * broadcast
    if len(terms) == 1:
        out_letters = rhs if "->" in equation else "".join(
            sorted(c for c in set(lhs) if lhs.count(c) == 1 and c.isalpha()))
        summed = any(c not in out_letters for c in sizes)
        return 0, (space if summed else 0)  # a pure permutation only moves data
    return space * (len(terms) - 1), 0      # naive evaluation: one MAC per index and operand


def _attention(n: Node):
    # ONNX Attention (opset 23): Q (B, Hq, S, D) or (B, S, Hq * D); K, V likewise.
    q, k, v = n.ins[0], n.ins[1], n.ins[2]
    if len(q) == 4:
        batch, heads, s_q, d_qk = q
        s_kv, d_v = k[2], v[3]
    else:
        heads = n.attr("q_num_heads")
        kv_heads = n.attr("kv_num_heads")
        batch, s_q, d_qk = q[0], q[1], q[2] // heads
        s_kv, d_v = k[1], v[2] // kv_heads
    scores = batch * heads * s_q * s_kv
    return scores * (d_qk + d_v), scores * (_SOFTMAX_FLOPS + 1)  # + the 1/sqrt(d) scale


def _per_output(flops_per_element: float) -> Rule:
    return lambda n: (0, flops_per_element * n.out_elems)


def _variadic(n: Node):
    operations = sum(1 for s in n.ins if s is not None) - 1
    if n.proto.op_type == "Mean":
        operations += 1
    return 0, max(operations, 0) * n.out_elems


def _gelu(n: Node):
    # exact: x * 0.5 * (1 + erf(x / sqrt 2)) = 5; tanh form: x^3 (2), mul, add, mul, tanh,
    # add, mul, mul = 9
    return 0, (9 if n.attr("approximate", "none") in ("tanh", b"tanh") else 5) * n.out_elems


def _reduction(per_in: int, per_out: int) -> Rule:
    return lambda n: (0, per_in * numel(n.ins[0]) + per_out * n.out_elems)


def _topk(n: Node):
    k = max(n.outs[0][n.attr("axis", -1)], 1)
    return 0, numel(n.ins[0]) * math.ceil(math.log2(k + 1))  # a heap of size k per row


def _normalization(groups: Callable[[Node], int]) -> Rule:
    return lambda n: (0, _NORM_FLOPS * numel(n.ins[0]) + _NORM_GROUP_FLOPS * groups(n))


def _layer_norm_groups(n: Node) -> int:
    x = n.ins[0]
    axis = n.attr("axis", -1) % len(x)
    return numel(x[:axis])


def _pool(per_window_element: int) -> Rule:
    return lambda n: (0, per_window_element * n.out_elems * numel(n.attr("kernel_shape")))


def _global_pool(per_element: int) -> Rule:
    return lambda n: (0, per_element * numel(n.ins[0]))


def _interpolation(n: Node, spatial_dims: int, mode: str) -> float:
    # One multiply-add (2 FLOPs) per interpolation tap: 2^d taps (linear) or 4^d (cubic).
    taps = {"linear": 2, "bilinear": 2, "cubic": 4, "bicubic": 4}.get(mode, 0)
    return 2.0 * taps ** spatial_dims * n.out_elems if taps else 0.0


def _resize(n: Node):
    mode = n.attr("mode", "nearest")
    mode = mode.decode() if isinstance(mode, bytes) else mode
    resized = sum(1 for a, b in zip(n.ins[0], n.outs[0]) if a != b)
    return 0, _interpolation(n, resized, mode)


def _grid_sample(n: Node):
    mode = n.attr("mode", "linear")
    mode = mode.decode() if isinstance(mode, bytes) else mode
    return 0, _interpolation(n, len(n.outs[0]) - 2, mode)


def _roi_align(n: Node):
    samples = (n.attr("sampling_ratio", 0) or 2) ** 2  # adaptive sampling: assume 2 x 2
    return 0, n.out_elems * samples * (2 * 4 + 1)  # bilinear (4 multiply-adds) + average


def _rnn(n: Node):
    gates, cell_flops = _RNN_CELLS[n.proto.op_type]
    x, w = n.ins[0], n.ins[1]  # X (seq, batch, in) or (batch, seq, in) with layout=1
    seq, batch = (x[1], x[0]) if n.attr("layout", 0) else (x[0], x[1])
    directions, hidden, inputs = w[0], w[1] // gates, w[2]
    steps = directions * seq * batch
    macs = steps * gates * hidden * (inputs + hidden)
    flops = steps * hidden * (gates + cell_flops)  # + the sum of the W and R products
    if n.has_input(3):
        flops += steps * 2 * gates * hidden  # Wb and Rb
    if n.proto.op_type == "LSTM" and n.has_input(7):
        flops += steps * 6 * hidden  # peepholes: 3 multiply-adds
    return macs, flops


def _lrn(n: Node):
    return 0, (2 * n.attr("size") + 3) * n.out_elems  # window of squares + scale, pow, div


RULES: dict[str, Rule] = {
    "Conv": _conv(1, 2), "ConvInteger": _conv(1, None), "QLinearConv": _conv(3, 8),
    "ConvTranspose": _conv_transpose,
    "MatMul": _matmul, "MatMulInteger": _matmul, "QLinearMatMul": _matmul,
    "Gemm": _gemm, "Einsum": _einsum, "Attention": _attention,
    "Softmax": _per_output(_SOFTMAX_FLOPS), "LogSoftmax": _per_output(_SOFTMAX_FLOPS),
    "Hardmax": _per_output(1),
    "BatchNormalization": _per_output(2),  # inference: folded into one multiply-add
    "LayerNormalization": _normalization(_layer_norm_groups),
    "InstanceNormalization": _normalization(lambda n: n.ins[0][0] * n.ins[0][1]),
    "GroupNormalization": _normalization(lambda n: n.ins[0][0] * n.attr("num_groups")),
    "MeanVarianceNormalization": lambda n: (0, 5 * n.out_elems),
    "RMSNormalization": lambda n: (0, 4 * n.out_elems + _NORM_GROUP_FLOPS * _layer_norm_groups(n)),
    "LpNormalization": _per_output(3),
    "LRN": _lrn,
    "MaxPool": _pool(1), "AveragePool": _pool(1), "LpPool": _pool(2),
    "GlobalAveragePool": _global_pool(1), "GlobalMaxPool": _global_pool(1),
    "GlobalLpPool": _global_pool(2),
    "Resize": _resize, "Upsample": _resize, "GridSample": _grid_sample, "RoiAlign": _roi_align,
    "LSTM": _rnn, "GRU": _rnn, "RNN": _rnn,
    "Gelu": _gelu, "TopK": _topk,
}
RULES.update({op: _per_output(f) for op, f in _ACTIVATION_FLOPS.items()})
RULES.update({op: _per_output(1) for op in _BINARY_OPS})
RULES.update({op: _variadic for op in _VARIADIC_OPS})
RULES.update({op: (lambda n: (0, 0)) for op in _DATA_MOVEMENT_OPS | VIEW_OPS})
RULES.update({op: _reduction(*c) for op, c in _REDUCTIONS.items()})

MODELLED_OPS = frozenset(RULES)
# Ops whose first output has their first input's shape.
SAME_SHAPE_OPS = (set(_ACTIVATION_FLOPS) - {"DynamicQuantizeLinear"}) | {
    "Softmax", "LogSoftmax", "Hardmax", "BatchNormalization", "LayerNormalization",
    "InstanceNormalization", "GroupNormalization", "MeanVarianceNormalization",
    "RMSNormalization", "LpNormalization", "LRN", "Gelu", "Dropout", "Identity", "Cast"}
