"""Per-node cost model of an ONNX graph: FLOPs, MACs and bytes moved.

Counting convention (also in ``docs/roofline.md``):

- A multiply-add is one MAC and **2 FLOPs**. ``macs`` counts only the multiply-adds of
  contractions (Conv, ConvTranspose, Gemm, MatMul, Einsum, attention, the LSTM/GRU/RNN gate
  matrices); ``flops = 2 * macs`` plus everything else the node computes.
- A bias add is **1 FLOP per output element** (Conv, ConvTranspose, Gemm; RNN biases per gate).
- Elementwise arithmetic is 1 FLOP per output element per operation; a transcendental
  (exp, log, sqrt, erf, tanh, sin, ...) is 1 FLOP; composite activations are the sum of their
  parts (Sigmoid = neg + exp + add + div = 4, see ``_ACTIVATION_FLOPS``).
- Data movement (Concat, Split, Slice, Transpose, Gather, Pad, Cast, nearest Resize, ...) is
  0 FLOPs but moves its bytes. View ops (Reshape, Flatten, Squeeze, Unsqueeze, Identity,
  Dropout at inference, Shape, Constant) alias their input: 0 FLOPs and 0 bytes.
- Bytes are compulsory traffic at the tensors' precision: every input (activations and
  parameters) read once, every output written once. Layers are counted unfused.
- An op without a model here is reported in ``ModelCost.unknown_ops`` with ``known=False``;
  its bytes are still counted, its FLOPs are unknown (0 in sums), never silently "modelled".
"""

from __future__ import annotations

import math
from dataclasses import dataclass, field
from pathlib import Path
from typing import Callable, Sequence

PRECISIONS = ("fp32", "fp16", "int8", "mixed")


class CostModelError(Exception):
    """Base class of the cost model's errors."""


class ModelLoadError(CostModelError):
    """The file is missing, corrupt or not an ONNX model."""


class ShapeError(CostModelError):
    """A tensor's shape is unknown or invalid; the message names the node and tensor."""


@dataclass(frozen=True)
class LayerCost:
    name: str            # ONNX node name exactly; nodes without a name get f"{op_type}_{index}"
    op_type: str
    flops: float         # documented convention; MAC = 2 FLOPs
    macs: float
    bytes_read: float    # activations in + weights/params, at the tensors' precision
    bytes_written: float # outputs
    param_bytes: float
    input_shapes: tuple[tuple[int, ...], ...]
    output_shapes: tuple[tuple[int, ...], ...]
    precision: str       # "fp32" | "fp16" | "int8" | "mixed"
    known: bool = True   # False: op not modelled (listed in ModelCost.unknown_ops)
    is_view: bool = False  # aliases its input (Reshape...): no data moved, no kernel launched

    @property
    def bytes(self) -> float:
        return self.bytes_read + self.bytes_written

    @property
    def arithmetic_intensity(self) -> float:
        """FLOP per byte; 0 for a layer that moves no bytes."""
        return self.flops / self.bytes if self.bytes > 0 else 0.0


@dataclass(frozen=True)
class ModelCost:
    model: str
    precision: str
    batch: int
    layers: tuple[LayerCost, ...]
    unknown_ops: tuple[str, ...]
    input_shapes: dict[str, tuple[int, ...]] = field(default_factory=dict)

    @property
    def total_flops(self) -> float:
        return sum(l.flops for l in self.layers)

    @property
    def total_macs(self) -> float:
        return sum(l.macs for l in self.layers)

    @property
    def total_bytes(self) -> float:
        return sum(l.bytes for l in self.layers)

    @property
    def arithmetic_intensity(self) -> float:
        return self.total_flops / self.total_bytes if self.total_bytes > 0 else 0.0

    def layer(self, name: str) -> LayerCost:
        for l in self.layers:
            if l.name == name:
                return l
        raise KeyError(f"no layer named {name!r} in {self.model}")


# ---- per-op counting rules ----------------------------------------------------------------

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
_VIEW_OPS = {"Reshape", "Flatten", "Squeeze", "Unsqueeze", "Identity", "Dropout", "Shape",
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


def _numel(shape: Sequence[int]) -> int:
    return math.prod(shape)


def _attr(node, name: str, default=None):
    import onnx

    for a in node.attribute:
        if a.name == name:
            return onnx.helper.get_attribute_value(a)
    return default


class _Node:
    """What a rule sees: the node, its attributes and the static shapes of its tensors
    (``None`` for an absent optional input)."""

    def __init__(self, proto, ins: list[Shape | None], outs: list[Shape | None]):
        self.proto, self.ins, self.outs = proto, ins, outs

    def attr(self, name: str, default=None):
        return _attr(self.proto, name, default)

    def has_input(self, i: int) -> bool:
        return i < len(self.ins) and self.ins[i] is not None

    @property
    def out_elems(self) -> int:
        return _numel(self.outs[0])


# A rule returns (macs, other_flops).
Rule = Callable[[_Node], tuple[float, float]]


def _conv(weight_index: int, bias_index: int | None) -> Rule:
    def rule(n: _Node):
        w = n.ins[weight_index]  # (Cout, Cin / group, k1, ..., kd)
        macs = n.out_elems * _numel(w[1:])
        bias = n.out_elems if bias_index is not None and n.has_input(bias_index) else 0
        return macs, bias
    return rule


def _conv_transpose(n: _Node):
    # Each input element scatters into Cout / group x kernel outputs.
    w = n.ins[1]  # (Cin, Cout / group, k1, ..., kd)
    return _numel(n.ins[0]) * _numel(w[1:]), (n.out_elems if n.has_input(2) else 0)


def _matmul(n: _Node):
    a = n.ins[0]
    k = a[-1] if a else 1
    return n.out_elems * k, 0  # every output element is a K-long dot product (any batching)


def _gemm(n: _Node):
    a = n.ins[0]
    k = a[0] if n.attr("transA", 0) else a[1]
    m_n = n.out_elems
    extra = 0
    if n.has_input(2):
        extra += m_n * (1 if n.attr("beta", 1.0) == 1.0 else 2)
    if n.attr("alpha", 1.0) != 1.0:
        extra += m_n
    return m_n * k, extra


def _einsum(n: _Node):
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
        broadcast = _numel(np.broadcast_shapes(*ellipsis_shapes))
    space = _numel(sizes.values()) * broadcast
    if len(terms) == 1:
        out_letters = rhs if "->" in equation else "".join(
            sorted(c for c in set(lhs) if lhs.count(c) == 1 and c.isalpha()))
        summed = any(c not in out_letters for c in sizes)
        return 0, (space if summed else 0)  # a pure permutation only moves data
    return space * (len(terms) - 1), 0      # naive evaluation: one MAC per index and operand


def _attention(n: _Node):
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


def _variadic(n: _Node):
    operations = sum(1 for s in n.ins if s is not None) - 1
    if n.proto.op_type == "Mean":
        operations += 1
    return 0, max(operations, 0) * n.out_elems


def _gelu(n: _Node):
    # exact: x * 0.5 * (1 + erf(x / sqrt 2)) = 5; tanh form: x^3 (2), mul, add, mul, tanh,
    # add, mul, mul = 9
    return 0, (9 if n.attr("approximate", "none") in ("tanh", b"tanh") else 5) * n.out_elems


def _reduction(per_in: int, per_out: int) -> Rule:
    return lambda n: (0, per_in * _numel(n.ins[0]) + per_out * n.out_elems)


def _topk(n: _Node):
    k = max(n.outs[0][n.attr("axis", -1)], 1)
    return 0, _numel(n.ins[0]) * math.ceil(math.log2(k + 1))  # a heap of size k per row


def _normalization(groups: Callable[[_Node], int]) -> Rule:
    return lambda n: (0, _NORM_FLOPS * _numel(n.ins[0]) + _NORM_GROUP_FLOPS * groups(n))


def _layer_norm_groups(n: _Node) -> int:
    x = n.ins[0]
    axis = n.attr("axis", -1) % len(x)
    return _numel(x[:axis])


def _pool(per_window_element: int) -> Rule:
    return lambda n: (0, per_window_element * n.out_elems * _numel(n.attr("kernel_shape")))


def _global_pool(per_element: int) -> Rule:
    return lambda n: (0, per_element * _numel(n.ins[0]))


def _interpolation(n: _Node, spatial_dims: int, mode: str) -> float:
    # One multiply-add (2 FLOPs) per interpolation tap: 2^d taps (linear) or 4^d (cubic).
    taps = {"linear": 2, "bilinear": 2, "cubic": 4, "bicubic": 4}.get(mode, 0)
    return 2.0 * taps ** spatial_dims * n.out_elems if taps else 0.0


def _resize(n: _Node):
    mode = n.attr("mode", "nearest")
    mode = mode.decode() if isinstance(mode, bytes) else mode
    resized = sum(1 for a, b in zip(n.ins[0], n.outs[0]) if a != b)
    return 0, _interpolation(n, resized, mode)


def _grid_sample(n: _Node):
    mode = n.attr("mode", "linear")
    mode = mode.decode() if isinstance(mode, bytes) else mode
    return 0, _interpolation(n, len(n.outs[0]) - 2, mode)


def _roi_align(n: _Node):
    samples = (n.attr("sampling_ratio", 0) or 2) ** 2  # adaptive sampling: assume 2 x 2
    return 0, n.out_elems * samples * (2 * 4 + 1)  # bilinear (4 multiply-adds) + average


def _rnn(n: _Node):
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


def _lrn(n: _Node):
    return 0, (2 * n.attr("size") + 3) * n.out_elems  # window of squares + scale, pow, div


_RULES: dict[str, Rule] = {
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
_RULES.update({op: _per_output(f) for op, f in _ACTIVATION_FLOPS.items()})
_RULES.update({op: _per_output(1) for op in _BINARY_OPS})
_RULES.update({op: _variadic for op in _VARIADIC_OPS})
_RULES.update({op: (lambda n: (0, 0)) for op in _DATA_MOVEMENT_OPS | _VIEW_OPS})
_RULES.update({op: _reduction(*c) for op, c in _REDUCTIONS.items()})

MODELLED_OPS = frozenset(_RULES)
# Ops whose first output has their first input's shape.
_SAME_SHAPE_OPS = (set(_ACTIVATION_FLOPS) - {"DynamicQuantizeLinear"}) | {
    "Softmax", "LogSoftmax", "Hardmax", "BatchNormalization", "LayerNormalization",
    "InstanceNormalization", "GroupNormalization", "MeanVarianceNormalization",
    "RMSNormalization", "LpNormalization", "LRN", "Gelu", "Dropout", "Identity", "Cast"}


# ---- loading and shapes ------------------------------------------------------------------

_FLOAT_TYPES = {"FLOAT", "FLOAT16", "BFLOAT16", "DOUBLE", "FLOAT8E4M3FN", "FLOAT8E4M3FNUZ",
                "FLOAT8E5M2", "FLOAT8E5M2FNUZ"}
_PRECISION_BYTES = {"fp32": 4, "fp16": 2, "int8": 1}
_DTYPE_PRECISION = {"FLOAT": "fp32", "FLOAT16": "fp16", "BFLOAT16": "bf16", "DOUBLE": "fp64",
                    "INT8": "int8", "UINT8": "int8"}


def _load(model):
    import onnx
    from google.protobuf.message import DecodeError

    if isinstance(model, onnx.ModelProto):
        proto = onnx.ModelProto()
        proto.CopyFrom(model)
        name = proto.graph.name or "model"
    else:
        path = Path(model)
        if not path.is_file():
            raise ModelLoadError(f"{path}: no such file")
        try:
            # Weights are not needed (initializers keep their dims), so external data stays out.
            proto = onnx.load(str(path), load_external_data=False)
        except (DecodeError, ValueError, RuntimeError, UnicodeDecodeError) as exc:
            raise ModelLoadError(f"{path}: not a readable ONNX model ({exc})") from exc
        name = path.stem
    if proto.ir_version <= 0 or not proto.opset_import or not proto.graph.node:
        raise ModelLoadError(f"{name}: not an ONNX model (no IR version, opset or nodes)")
    return proto, name


def _resolve_inputs(proto, batch: int, overrides: dict) -> dict[str, Shape]:
    """Static shape of every graph input: overrides first, symbolic leading dims = batch."""
    init_names = {t.name for t in proto.graph.initializer}
    graph_inputs = [vi for vi in proto.graph.input if vi.name not in init_names]
    names = [vi.name for vi in graph_inputs]
    unknown = set(overrides) - set(names)
    if unknown:
        raise ShapeError(f"input_shapes names {sorted(unknown)}, but the graph inputs are {names}")
    resolved: dict[str, Shape] = {}
    batch_used = False
    for vi in graph_inputs:
        tt = vi.type.tensor_type
        dims = list(tt.shape.dim) if tt.HasField("shape") else None
        if vi.name in overrides:
            shape = tuple(int(d) for d in overrides[vi.name])
            if dims is not None and len(dims) != len(shape):
                raise ShapeError(f"input {vi.name!r} has rank {len(dims)}, but the given shape "
                                 f"{shape} has rank {len(shape)}")
            if any(d <= 0 for d in shape):
                raise ShapeError(f"input {vi.name!r}: dimensions must be positive, got {shape}")
            resolved[vi.name] = shape
            continue
        if dims is None:
            raise ShapeError(f"input {vi.name!r} has no shape in the model; give it with "
                             f"input_shapes / --input {vi.name}=D0,D1,...")
        shape = []
        for i, d in enumerate(dims):
            if d.HasField("dim_value") and d.dim_value > 0:
                shape.append(d.dim_value)
            elif i == 0:
                shape.append(batch)
                batch_used = True
            else:
                label = d.dim_param or "?"
                raise ShapeError(f"input {vi.name!r} dimension {i} is symbolic ({label!r}); give "
                                 f"its shape with input_shapes / --input {vi.name}=D0,D1,...")
        resolved[vi.name] = tuple(shape)
    if batch != 1 and not batch_used and not overrides:
        raise ShapeError(f"batch={batch} asked, but every input's leading dimension is static "
                         f"({resolved}); export the model with a dynamic batch axis or give "
                         f"the input shapes")
    return resolved


def _infer_shapes(proto, inputs: dict[str, Shape]):
    """(model with inferred shapes, the strict inference's error or None)."""
    import onnx

    for vi in proto.graph.input:
        if vi.name in inputs:
            shape = vi.type.tensor_type.shape
            shape.ClearField("dim")
            for d in inputs[vi.name]:
                shape.dim.add().dim_value = d
    try:
        return onnx.shape_inference.infer_shapes(proto, check_type=False, strict_mode=True,
                                                 data_prop=True), None
    except (onnx.shape_inference.InferenceError, onnx.checker.ValidationError) as exc:
        # Exported models are not always self-consistent (a declared output type that
        # disagrees with the op): infer what can be inferred, and let a node that is left
        # without a shape fail with this message attached.
        lenient = onnx.shape_inference.infer_shapes(proto, check_type=False, strict_mode=False,
                                                    data_prop=True)
        return lenient, str(exc).strip()


def _tensor_table(graph) -> dict[str, tuple[Shape | None, int]]:
    """name -> (static shape or None if any dim is unknown, element type)."""
    table: dict[str, tuple[Shape | None, int]] = {}
    for vi in list(graph.input) + list(graph.value_info) + list(graph.output):
        tt = vi.type.tensor_type
        if not tt.HasField("shape"):
            table.setdefault(vi.name, (None, tt.elem_type))
            continue
        dims = tt.shape.dim
        static = all(d.HasField("dim_value") for d in dims)
        table[vi.name] = (tuple(d.dim_value for d in dims) if static else None, tt.elem_type)
    for t in graph.initializer:
        table[t.name] = (tuple(t.dims), t.data_type)
    for node in graph.node:
        if node.op_type == "Constant" and node.output[0] not in table:
            value = _attr(node, "value")
            if value is not None:
                table[node.output[0]] = (tuple(value.dims), value.data_type)
    return table


class _Sizer:
    """Bytes per element of a tensor at the analysis precision: float tensors take the
    precision's size; integer tensors (indices, shapes, int8 data) keep their own;
    ``mixed`` keeps every tensor's own type."""

    def __init__(self, precision: str):
        import onnx

        self.precision = precision
        self._name = onnx.TensorProto.DataType.Name
        self._itemsize = {}

    def type_name(self, elem_type: int) -> str:
        return self._name(elem_type) if elem_type else "UNDEFINED"

    def element_bytes(self, elem_type: int) -> float:
        name = self.type_name(elem_type)
        if self.precision != "mixed" and (name in _FLOAT_TYPES or name == "UNDEFINED"):
            return _PRECISION_BYTES[self.precision]
        if elem_type not in self._itemsize:
            import onnx
            try:
                size = onnx.helper.tensor_dtype_to_np_dtype(elem_type).itemsize
            except (KeyError, TypeError, ValueError):
                size = 4  # undefined or string: no better guess
            self._itemsize[elem_type] = size or 4
        return self._itemsize[elem_type]


# ---- the analysis -------------------------------------------------------------------------

def analyze_model(model, precision: str = "fp32", batch: int = 1,
                  input_shapes: dict[str, tuple[int, ...]] | None = None) -> ModelCost:
    """Cost of every node of ``model`` (a path or an ``onnx.ModelProto``).

    ``precision`` sets the size of float tensors (``mixed``: every tensor its own type).
    ``batch`` fills symbolic leading input dimensions; ``input_shapes`` gives inputs' full
    shapes. Raises ``ModelLoadError`` for a file that is not ONNX and ``ShapeError`` naming
    the input, node or tensor whose shape is unknown.
    """
    if precision not in PRECISIONS:
        raise ValueError(f"unknown precision {precision!r}; use one of {PRECISIONS}")
    if batch < 1:
        raise ValueError(f"batch must be >= 1, got {batch}")
    proto, model_name = _load(model)
    inputs = _resolve_inputs(proto, batch, dict(input_shapes or {}))
    inferred, inference_error = _infer_shapes(proto, inputs)
    graph = inferred.graph
    context = f"; shape inference reported: {inference_error}" if inference_error else ""
    table = _tensor_table(graph)
    producers = {out: (node.name or f"{node.op_type}_{i}") for i, node in enumerate(graph.node)
                 for out in node.output}
    params = {t.name for t in graph.initializer} | {
        node.output[0] for node in graph.node if node.op_type == "Constant"}
    sizer = _Sizer(precision)
    layers = []
    unknown: list[str] = []
    for index, node in enumerate(graph.node):
        name = node.name or f"{node.op_type}_{index}"
        domain = node.domain if node.domain not in ("", "ai.onnx") else ""
        op_label = f"{domain}.{node.op_type}" if domain else node.op_type
        rule = _RULES.get(node.op_type) if not domain else None

        def shape_of(tensor: str) -> Shape | None:
            shape = table.get(tensor, (None, 0))[0]
            if shape is None and rule is not None:
                origin = producers.get(tensor)
                origin = f" (produced by {origin!r})" if origin else ""
                raise ShapeError(f"node {name!r} ({node.op_type}): tensor {tensor!r}{origin} has "
                                 f"no static shape after shape inference{context}")
            return shape

        ins = [shape_of(t) if t else None for t in node.input]
        if (node.op_type in _SAME_SHAPE_OPS and rule is not None and ins and ins[0] is not None
                and node.output and table.get(node.output[0], (None, 0))[0] is None):
            # onnx infers no shape for some function ops (GroupNormalization, ...): these keep
            # their input's shape, so give it to them and to their consumers.
            table[node.output[0]] = (ins[0], table.get(node.input[0], (None, 0))[1])
        outs = [shape_of(t) if t else None for t in node.output]
        if rule is None:
            unknown.append(op_label)
            macs, flops = 0.0, 0.0
        else:
            try:
                macs, other = rule(_Node(node, ins, outs))
            except (TypeError, IndexError, ZeroDivisionError) as exc:
                raise ShapeError(f"node {name!r} ({node.op_type}): unexpected input/output shapes "
                                 f"{ins} -> {outs} ({exc})") from exc
            flops = 2.0 * macs + other
        is_view = node.op_type in _VIEW_OPS and rule is not None

        def tensor_bytes(tensor: str) -> float:
            shape, elem_type = table.get(tensor, (None, 0))
            return 0.0 if shape is None else _numel(shape) * sizer.element_bytes(elem_type)

        read_names = dict.fromkeys(t for t in node.input if t)  # an input read twice is read once
        bytes_read = 0.0 if is_view else sum(tensor_bytes(t) for t in read_names)
        bytes_written = 0.0 if is_view else sum(tensor_bytes(t) for t in node.output if t)
        param_bytes = sum(tensor_bytes(t) for t in read_names if t in params)
        layers.append(LayerCost(
            name=name, op_type=node.op_type, flops=float(flops), macs=float(macs),
            bytes_read=float(bytes_read), bytes_written=float(bytes_written),
            param_bytes=0.0 if is_view else float(param_bytes),
            input_shapes=tuple(s or () for s in ins), output_shapes=tuple(s or () for s in outs),
            precision=_layer_precision(precision, sizer, table, list(node.input) + list(node.output)),
            known=rule is not None, is_view=is_view))
    return ModelCost(model=model_name, precision=precision, batch=batch, layers=tuple(layers),
                     unknown_ops=tuple(dict.fromkeys(unknown)), input_shapes=inputs)


def _layer_precision(precision: str, sizer: _Sizer, table, tensors: list[str]) -> str:
    if precision != "mixed":
        return precision
    kinds = {_DTYPE_PRECISION.get(sizer.type_name(table[t][1])) for t in tensors if t in table}
    kinds.discard(None)
    return kinds.pop() if len(kinds) == 1 else "mixed"
