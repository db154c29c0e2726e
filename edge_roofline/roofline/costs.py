"""Per-node cost model of an ONNX graph: FLOPs, MACs and bytes moved.

Counting convention (also in ``docs/roofline.md``):

- A multiply-add is one MAC and **2 FLOPs**. ``macs`` counts only the multiply-adds of
  contractions (Conv, ConvTranspose, Gemm, MatMul, Einsum, attention, the LSTM/GRU/RNN gate
  matrices); ``flops = 2 * macs`` plus everything else the node computes.
- A bias add is **1 FLOP per output element** (Conv, ConvTranspose, Gemm; RNN biases per gate).
- Elementwise arithmetic is 1 FLOP per output element per operation; a transcendental
  (exp, log, sqrt, erf, tanh, sin, ...) is 1 FLOP; composite activations are the sum of their
  parts (Sigmoid = neg + exp + add + div = 4, see ``op_rules._ACTIVATION_FLOPS``).
- Data movement (Concat, Split, Slice, Transpose, Gather, Pad, Cast, nearest Resize, ...) is
  0 FLOPs but moves its bytes. View ops (Reshape, Flatten, Squeeze, Unsqueeze, Identity,
  Dropout at inference, Shape, Constant) alias their input: 0 FLOPs and 0 bytes.
- Bytes are compulsory traffic at the tensors' precision: every input (activations and
  parameters) read once, every output written once. Layers are counted unfused. A gather
  (an embedding lookup) reads the rows it gathers, not its whole table.
- Weight-only precisions (``weight_precision``, e.g. int4 weights with fp16 activations):
  float parameters of rank >= 2 (weight matrices, kernels, embedding tables) take the weight
  precision's size; biases and norm scales keep the activation precision. Quantisation scales
  and zero points are not counted (fp16 per group of 128 int4 weights would add 1.6 %).
- An op without a model here is reported in ``ModelCost.unknown_ops`` with ``known=False``;
  its bytes are still counted, its FLOPs are unknown (0 in sums), never silently "modelled".
"""

from __future__ import annotations

from dataclasses import dataclass, field
from pathlib import Path

from edge_roofline.roofline.op_rules import RULES, SAME_SHAPE_OPS, VIEW_OPS, Node, Shape, attribute, numel
from edge_roofline.roofline.shapes import MAX_VALUE_ELEMENTS, infer_shapes

PRECISIONS = ("fp32", "fp16", "int8", "fp8", "fp4", "mixed")
# Bytes per stored weight; int4 packs two weights per byte.
WEIGHT_PRECISION_BYTES = {"fp32": 4.0, "fp16": 2.0, "bf16": 2.0, "fp8": 1.0, "int8": 1.0, "int4": 0.5}
WEIGHT_PRECISIONS = tuple(WEIGHT_PRECISION_BYTES)
# The fix a bad model file's line names (models.source says the same: a room beside, not imported).
_FIX = "give an existing ONNX file, or zoo:NAME for a built-in model"


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
    precision: str       # "fp32" | "fp16" | "int8" | "fp8" | "fp4" | "mixed"
    known: bool = True   # False: op not modelled (listed in ModelCost.unknown_ops)
    is_view: bool = False  # aliases its input (Reshape...): no data moved, no kernel launched
    weight_bytes: float = 0.0  # the part of param_bytes in rank >= 2 weights (weight precision)

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
    weight_precision: str | None = None  # None: weights at ``precision`` like every tensor

    @property
    def total_flops(self) -> float:
        return sum(l.flops for l in self.layers)

    @property
    def total_weight_bytes(self) -> float:
        return sum(l.weight_bytes for l in self.layers)

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


# ---- loading and shapes ------------------------------------------------------------------

_FLOAT_TYPES = {"FLOAT", "FLOAT16", "BFLOAT16", "DOUBLE", "FLOAT8E4M3FN", "FLOAT8E4M3FNUZ",
                "FLOAT8E5M2", "FLOAT8E5M2FNUZ", "FLOAT4E2M1"}
_PRECISION_BYTES = {"fp32": 4, "fp16": 2, "int8": 1, "fp8": 1, "fp4": 0.5}
_DTYPE_PRECISION = {"FLOAT": "fp32", "FLOAT16": "fp16", "BFLOAT16": "bf16", "DOUBLE": "fp64",
                    "INT8": "int8", "UINT8": "int8", "FLOAT8E4M3FN": "fp8", "FLOAT8E5M2": "fp8",
                    "FLOAT4E2M1": "fp4"}


def load_onnx(model):
    """(a private copy of the onnx.ModelProto, its name) from a path or a ModelProto."""
    import onnx
    from google.protobuf.message import DecodeError

    if isinstance(model, onnx.ModelProto):
        proto = onnx.ModelProto()
        proto.CopyFrom(model)
        name = where = proto.graph.name or "model"
    else:
        path = Path(model)
        if not path.is_file():
            raise ModelLoadError(f"{path}: {'a directory, not a file' if path.is_dir() else 'no such file'}; {_FIX}")
        try:
            # Weights are not needed (initializers keep their dims), so external data stays out.
            proto = onnx.load(str(path), load_external_data=False)
        except (DecodeError, ValueError, RuntimeError, UnicodeDecodeError) as exc:
            raise ModelLoadError(f"{path}: not a readable ONNX model ({' '.join(str(exc).split())}); {_FIX}") from exc
        name, where = path.stem, str(path)  # the error names the file the user gave (an empty one too)
    if proto.ir_version <= 0 or not proto.opset_import or not proto.graph.node:
        raise ModelLoadError(f"{where}: not an ONNX model (no IR version, opset or nodes); {_FIX}")
    _drop_weight_data(proto)
    return proto, name


_DATA_FIELDS = ("raw_data", "float_data", "int32_data", "string_data", "int64_data", "double_data",
                "uint64_data")


def _drop_weight_data(proto) -> None:
    """Initializers too big to be shape arithmetic keep their dims and type but not their data,
    marked as external data (which the cost model never loads): costs need shapes only, and
    every analysis copies the graph and hands it to shape inference (a 500 MB decoder took 10 s
    per analysis with its weights, 0.1 s without)."""
    from onnx import TensorProto

    for t in proto.graph.initializer:
        if numel(t.dims) > MAX_VALUE_ELEMENTS and t.data_location != TensorProto.EXTERNAL:
            for f in _DATA_FIELDS:
                t.ClearField(f)
            t.data_location = TensorProto.EXTERNAL
            entry = t.external_data.add()
            entry.key, entry.value = "location", "not loaded: the cost model reads shapes only"


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
            # An empty KV cache (past length 0) is a valid input; an empty batch is not.
            if any(d < 0 for d in shape) or (shape and shape[0] == 0):
                raise ShapeError(f"input {vi.name!r}: dimensions must be >= 0 (the leading one "
                                 f">= 1), got {shape}")
            resolved[vi.name] = shape
            continue
        if dims is None:
            raise ShapeError(f"input {vi.name!r} has no shape in the model; export the model with static "
                             f"shapes, or give it (input_shapes, `edge-roofline analyze MODEL --input "
                             f"{vi.name}=1x3x224x224`)")
        shape = []
        for i, d in enumerate(dims):
            if d.HasField("dim_value") and (d.dim_value > 0 or (i > 0 and d.dim_value == 0)):
                shape.append(d.dim_value)  # a static 0 past a batch axis: an empty KV cache
            elif i == 0:
                shape.append(batch)
                batch_used = True
            else:
                label = d.dim_param or "?"
                raise ShapeError(f"input {vi.name!r} dimension {i} is symbolic ({label!r}); export the model "
                                 f"with static shapes, or give its shape (input_shapes, `edge-roofline analyze "
                                 f"MODEL --input {vi.name}=1x3x224x224`)")
        resolved[vi.name] = tuple(shape)
    if batch != 1 and not batch_used and not overrides:
        raise ShapeError(f"batch={batch} asked, but every input's leading dimension is static "
                         f"({resolved}); export the model with a dynamic batch axis or give "
                         f"the input shapes")
    return resolved


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
            value = attribute(node, "value")
            if value is not None:
                table[node.output[0]] = (tuple(value.dims), value.data_type)
    return table


class _Sizer:
    """Bytes per element of a tensor at the analysis precision: float tensors take the
    precision's size; integer tensors (indices, shapes, int8 data) keep their own;
    ``mixed`` keeps every tensor's own type."""

    def __init__(self, precision: str, weight_precision: str | None = None):
        import onnx

        self.precision = precision
        self.weight_precision = weight_precision
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

    def weight_element_bytes(self, elem_type: int, shape: Shape) -> float | None:
        """Bytes per element of a parameter that is a weight (float, rank >= 2): the weight
        precision's size, or the tensor's usual size without one; None for other tensors."""
        if len(shape) < 2 or self.type_name(elem_type) not in _FLOAT_TYPES:
            return None
        if self.weight_precision is None:
            return self.element_bytes(elem_type)
        return WEIGHT_PRECISION_BYTES[self.weight_precision]


# ---- the analysis -------------------------------------------------------------------------

def analyze_model(model, precision: str = "fp32", batch: int = 1,
                  input_shapes: dict[str, tuple[int, ...]] | None = None,
                  weight_precision: str | None = None) -> ModelCost:
    """Cost of every node of ``model`` (a path or an ``onnx.ModelProto``).

    ``precision`` sets the size of float tensors (``mixed``: every tensor its own type);
    ``weight_precision`` (``WEIGHT_PRECISIONS``) that of weights alone (weight-only quantisation).
    ``batch`` fills symbolic leading input dimensions; ``input_shapes`` gives inputs' full
    shapes. Raises ``ModelLoadError`` for a file that is not ONNX and ``ShapeError`` naming
    the input, node or tensor whose shape is unknown.
    """
    if precision not in PRECISIONS:
        raise ValueError(f"unknown precision {precision!r}; use one of {PRECISIONS}")
    if weight_precision is not None and weight_precision not in WEIGHT_PRECISION_BYTES:
        raise ValueError(f"unknown weight precision {weight_precision!r}; use one of "
                         f"{WEIGHT_PRECISIONS}")
    if batch < 1:
        raise ValueError(f"batch must be >= 1, got {batch}")
    proto, model_name = load_onnx(model)
    inputs = _resolve_inputs(proto, batch, dict(input_shapes or {}))
    inferred, inference_error = infer_shapes(proto, inputs)
    graph = inferred.graph
    context = f"; shape inference reported: {inference_error}" if inference_error else ""
    table = _tensor_table(graph)
    producers = {out: (node.name or f"{node.op_type}_{i}") for i, node in enumerate(graph.node)
                 for out in node.output}
    params = {t.name for t in graph.initializer} | {
        node.output[0] for node in graph.node if node.op_type == "Constant"}
    sizer = _Sizer(precision, weight_precision)
    layers = []
    unknown: list[str] = []
    for index, node in enumerate(graph.node):
        name = node.name or f"{node.op_type}_{index}"
        domain = node.domain if node.domain not in ("", "ai.onnx") else ""
        op_label = f"{domain}.{node.op_type}" if domain else node.op_type
        rule = RULES.get(node.op_type) if not domain else None

        def shape_of(tensor: str) -> Shape | None:
            shape = table.get(tensor, (None, 0))[0]
            if shape is None and rule is not None:
                origin = producers.get(tensor)
                origin = f" (produced by {origin!r})" if origin else ""
                raise ShapeError(f"node {name!r} ({node.op_type}): tensor {tensor!r}{origin} has "
                                 f"no static shape after shape inference{context}")
            return shape

        ins = [shape_of(t) if t else None for t in node.input]
        if (node.op_type in SAME_SHAPE_OPS and rule is not None and ins and ins[0] is not None
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
                macs, other = rule(Node(node, ins, outs))
            except (TypeError, IndexError, ZeroDivisionError) as exc:
                raise ShapeError(f"node {name!r} ({node.op_type}): unexpected input/output shapes "
                                 f"{ins} -> {outs} ({exc})") from exc
            flops = 2.0 * macs + other
        is_view = node.op_type in VIEW_OPS and rule is not None

        read, param_bytes, weight_bytes = (0.0, 0.0, 0.0) if is_view else _read_bytes(
            node, table, params, sizer)
        bytes_written = 0.0 if is_view else sum(
            _tensor_bytes(table, sizer, t) for t in node.output if t)
        layers.append(LayerCost(
            name=name, op_type=node.op_type, flops=float(flops), macs=float(macs),
            bytes_read=float(read), bytes_written=float(bytes_written),
            param_bytes=float(param_bytes), weight_bytes=float(weight_bytes),
            input_shapes=tuple(s or () for s in ins), output_shapes=tuple(s or () for s in outs),
            precision=_layer_precision(precision, sizer, table, list(node.input) + list(node.output)),
            known=rule is not None, is_view=is_view))
    return ModelCost(model=model_name, precision=precision, batch=batch, layers=tuple(layers),
                     unknown_ops=tuple(dict.fromkeys(unknown)), input_shapes=inputs,
                     weight_precision=weight_precision)


_GATHER_OPS = {"Gather", "GatherElements", "GatherND"}


def _tensor_bytes(table, sizer: _Sizer, tensor: str, weight: bool = False,
                  max_elements: int | None = None) -> float:
    shape, elem_type = table.get(tensor, (None, 0))
    if shape is None:
        return 0.0
    size = sizer.weight_element_bytes(elem_type, shape) if weight else None
    elements = numel(shape) if max_elements is None else min(numel(shape), max_elements)
    return elements * (size if size is not None else sizer.element_bytes(elem_type))


def _read_bytes(node, table, params: set[str], sizer: _Sizer) -> tuple[float, float, float]:
    """(bytes read, of which parameters, of which rank >= 2 weights) of one node: every
    distinct input once; a gather's data input only as far as the elements it gathers."""
    read = param = weight = 0.0
    gathered = None
    if node.op_type in _GATHER_OPS and node.output:
        out_shape = table.get(node.output[0], (None, 0))[0]
        gathered = None if out_shape is None else numel(out_shape)
    for i, tensor in enumerate(dict.fromkeys(t for t in node.input if t)):
        nbytes = _tensor_bytes(table, sizer, tensor, weight=tensor in params,
                               max_elements=gathered if i == 0 else None)
        read += nbytes
        if tensor in params:
            param += nbytes
            shape, elem_type = table[tensor]
            if shape is not None and sizer.weight_element_bytes(elem_type, shape) is not None:
                weight += nbytes
    return read, param, weight


def _layer_precision(precision: str, sizer: _Sizer, table, tensors: list[str]) -> str:
    if precision != "mixed":
        return precision
    kinds = {_DTYPE_PRECISION.get(sizer.type_name(table[t][1])) for t in tensors if t in table}
    kinds.discard(None)
    return kinds.pop() if len(kinds) == 1 else "mixed"
