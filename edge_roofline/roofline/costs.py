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

from dataclasses import dataclass, field

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


def analyze_model(model, precision: str = "fp32", batch: int = 1,
                  input_shapes: dict[str, tuple[int, ...]] | None = None) -> ModelCost:
    """Cost of every node of ``model`` (a path or an ``onnx.ModelProto``)."""
    raise NotImplementedError("filled in next commit")
