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
  parameters) read once, every output written once. Layers are counted unfused.
- An op without a model here is reported in ``ModelCost.unknown_ops`` with ``known=False``;
  its bytes are still counted, its FLOPs are unknown (0 in sums), never silently "modelled".
"""

from __future__ import annotations

from dataclasses import dataclass, field
from pathlib import Path

from edge_roofline.roofline.op_rules import RULES, SAME_SHAPE_OPS, VIEW_OPS, Node, Shape, attribute, numel

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
            raise ShapeError(f"input {vi.name!r} has no shape in the model; export the model with static "
                             f"shapes, or give it (input_shapes, `edge-roofline analyze MODEL --input "
                             f"{vi.name}=1x3x224x224`)")
        shape = []
        for i, d in enumerate(dims):
            if d.HasField("dim_value") and d.dim_value > 0:
                shape.append(d.dim_value)
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
            value = attribute(node, "value")
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

        def tensor_bytes(tensor: str) -> float:
            shape, elem_type = table.get(tensor, (None, 0))
            return 0.0 if shape is None else numel(shape) * sizer.element_bytes(elem_type)

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
