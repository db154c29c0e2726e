"""Language-model decoders: which phase a graph runs, and its cost per phase at any context.

A decoder-only transformer with a KV cache runs in two phases with opposite rooflines:

- **prefill**: the prompt's tokens at once (many new tokens), compute-bound;
- **decode**: one new token per step, reading every weight and the whole KV cache, far left of
  the ridge (memory-bound).

*Context* is the number of tokens already in the KV cache before a step: a decode step at
context C takes 1 new token, attends over C + 1 keys and leaves C + 1 in the cache; a prefill
of P tokens runs at context 0 (a chunked prefill at C > 0).

The roles of a graph's inputs are told from their names and ranks, as torch and Hugging Face
exporters write them:

- tokens: an integer ``[batch, new]`` input (``input_ids``), or ``inputs_embeds``
  ``[batch, new, hidden]``;
- the KV cache: float inputs of rank >= 3 named ``past*``, ``*cache*``, ``*key_values*``
  (length axis: the symbolic non-batch axis, else the second to last);
- ``position_ids`` ``[batch, new]``; an ``attention_mask`` ``[batch, past + new]`` (rank 4:
  ``[batch, 1, new, past + new]``).

A graph with KV-cache inputs, or with KV-cache outputs (``present*``: a prefill graph), is a
decoder. One graph with symbolic lengths serves every phase and context: its inputs are bound
to the lengths and shape inference runs again (``cost``). Over a length every number of the
cost (per-layer FLOPs, bytes, shapes) is a polynomial of degree <= 2 (attention is linear in
the context of a decode step, quadratic in a prompt's length), so three analyses fit it
exactly and a fourth checks the fit; ``decode_cost`` and ``prefill_cost`` then cost any length
without shape inference (the virtual Jetson asks once per token). A graph whose costs are not
polynomial (sliding-window attention) fails the check and is analysed at every length.
"""

from __future__ import annotations

import re
from dataclasses import dataclass, replace
from functools import lru_cache
from typing import Callable

import numpy as np

from edge_roofline.roofline.costs import CostModelError, ModelCost, analyze_model, load_onnx

PHASES = ("prefill", "decode")
_PAST = re.compile(r"past|cache|key_values", re.IGNORECASE)
_PRESENT = re.compile(r"present|cache|key_values", re.IGNORECASE)
_MASK = re.compile(r"mask", re.IGNORECASE)
_POSITION = re.compile(r"position", re.IGNORECASE)
_EMBEDS = re.compile(r"embed", re.IGNORECASE)
# Lengths the polynomial is fitted through (three) and checked at (the fourth).
_FIT_LENGTHS = (8, 32, 128)
_CHECK_LENGTH = 512
_FIT_RTOL = 1e-6
_ELEMENT_BYTES = {"fp32": 4, "fp16": 2, "int8": 1}


class DecoderError(CostModelError):
    """The graph is not a decoder with a KV cache, or cannot run the asked phase or length."""


def is_kv_output(name: str) -> bool:
    """An output that holds the KV cache after a step (``present.0.key``, ``*cache*``)."""
    return bool(_PRESENT.search(name))


def phase_of(new_tokens: int, has_kv_cache: bool) -> str:
    """``decode`` for one new token appended to a KV cache, else ``prefill``."""
    return "decode" if new_tokens == 1 and has_kv_cache else "prefill"


@dataclass(frozen=True)
class DecoderSignature:
    """The inputs of a decoder graph and which of their axes carry which length."""

    token_input: str
    past_inputs: tuple[str, ...]
    # input name -> declared dims: (static value or None, symbolic name or "")
    declared: dict[str, tuple[tuple[int | None, str], ...]]
    # (input name, axis) -> "new" | "past" | "total"
    roles: dict[tuple[str, int], str]
    # input name -> ONNX element type (the KV cache's own type for precision "mixed")
    elem_types: dict[str, int]

    @property
    def has_kv_cache(self) -> bool:
        return bool(self.past_inputs)

    def fixed_length(self, role: str) -> int | None:
        """The length a graph with static dims fixes for ``role`` ("new" or "past")."""
        for (name, axis), r in self.roles.items():
            if r == role and self.declared[name][axis][0] is not None:
                return self.declared[name][axis][0]
        return None

    def input_shapes(self, new_tokens: int, context: int, batch: int = 1,
                     given: dict[str, tuple[int, ...]] | None = None) -> dict[str, tuple[int, ...]]:
        """Every input's shape for ``new_tokens`` at ``context`` (see the module docstring);
        ``given`` shapes are taken as they are."""
        given = given or {}
        if new_tokens < 1 or context < 0:
            raise DecoderError(f"new tokens must be >= 1 and context >= 0, got {new_tokens} "
                               f"and {context}")
        if context and not self.has_kv_cache:
            raise DecoderError("the graph has no KV-cache inputs: it runs a prompt from an empty "
                               f"cache only, not at context {context}")
        values = {"new": new_tokens, "past": context, "total": context + new_tokens}
        by_name = {self.declared[n][a][1]: values[r] for (n, a), r in self.roles.items()
                   if self.declared[n][a][1]}
        shapes = {}
        for name, dims in self.declared.items():
            if name in given:
                shapes[name] = tuple(given[name])
                continue
            shape = []
            for axis, (static, symbol) in enumerate(dims):
                role = self.roles.get((name, axis))
                if role is not None:
                    if static is not None and static != values[role]:
                        raise DecoderError(
                            f"input {name!r} fixes the {_ROLE_TEXT[role]} at {static} (axis "
                            f"{axis}); export the graph with a dynamic axis there to cost "
                            f"{values[role]}")
                    shape.append(values[role])
                elif static is not None:
                    shape.append(static)
                elif axis == 0:
                    shape.append(batch)
                elif symbol in by_name:
                    shape.append(by_name[symbol])
                else:
                    raise DecoderError(f"input {name!r} dimension {axis} ({symbol or '?'!r}) is "
                                       f"symbolic and no length names it; give its shape (input_shapes, "
                                       f"`edge-roofline analyze MODEL --input {name}=D0xD1...`)")
            shapes[name] = tuple(shape)
        return shapes


_ROLE_TEXT = {"new": "number of new tokens", "past": "past (context) length",
              "total": "total length"}


def decoder_signature(model) -> DecoderSignature | None:
    """The decoder signature of a graph (path or ModelProto), or None if it has no KV cache
    (neither past inputs nor present outputs) or no token input."""
    import onnx

    proto = model if isinstance(model, onnx.ModelProto) else load_onnx(model)[0]
    graph = proto.graph
    inits = {t.name for t in graph.initializer}
    inputs = [vi for vi in graph.input if vi.name not in inits]
    declared, elem_types = {}, {}
    for vi in inputs:
        tt = vi.type.tensor_type
        declared[vi.name] = tuple(
            (d.dim_value if d.HasField("dim_value") and (d.dim_value > 0 or axis > 0) else None,
             d.dim_param) for axis, d in enumerate(tt.shape.dim))
        elem_types[vi.name] = tt.elem_type
    is_float = {n: onnx.TensorProto.DataType.Name(t).startswith(("FLOAT", "BFLOAT", "DOUBLE"))
                for n, t in elem_types.items()}
    past = tuple(n for n in declared if _PAST.search(n) and is_float[n] and len(declared[n]) >= 3)
    kv_outputs = [o.name for o in graph.output if is_kv_output(o.name)]
    if not past and not kv_outputs:
        return None
    others = [n for n in declared if n not in past and not _MASK.search(n) and not _POSITION.search(n)]
    token = next((n for n in others if not is_float[n] and len(declared[n]) == 2), None)
    token = token or next((n for n in others if is_float[n] and len(declared[n]) == 3
                           and _EMBEDS.search(n)), None)
    if token is None:
        return None
    roles = {(token, 1): "new"}
    for name in past:
        dims = declared[name]
        # The length axis: [batch, heads, past, head_dim] (and [batch, past, hidden]) put it
        # second to last; a cache laid out otherwise says where by its one symbolic axis.
        symbolic = [a for a, (v, _) in enumerate(dims) if a > 0 and v is None]
        axis = len(dims) - 2
        roles[(name, axis if axis in symbolic or not symbolic else symbolic[0])] = "past"
    for name in declared:
        rank = len(declared[name])
        if name in past or name == token:
            continue
        if _MASK.search(name) and rank in (2, 4):
            roles[(name, rank - 1)] = "total"
            if rank == 4:
                roles[(name, 2)] = "new"
        elif _POSITION.search(name) and rank >= 2:
            roles[(name, rank - 1)] = "new"
    return DecoderSignature(token_input=token, past_inputs=past, declared=declared, roles=roles,
                            elem_types=elem_types)


@dataclass(frozen=True)
class PhaseCost:
    """The cost of one step of a decoder: a prefill of ``new_tokens`` or one decode token."""

    phase: str               # "prefill" | "decode"
    new_tokens: int
    context: int             # tokens in the KV cache before the step
    cost: ModelCost          # per layer, as analyze_model gives it (drop-in for the physics)
    kv_cache_bytes: float    # the KV cache the step reads: past tensors at ``context``

    @property
    def flops(self) -> float:
        return self.cost.total_flops

    @property
    def bytes(self) -> float:
        return self.cost.total_bytes

    @property
    def weight_bytes(self) -> float:
        return self.cost.total_weight_bytes

    @property
    def arithmetic_intensity(self) -> float:
        return self.cost.arithmetic_intensity


class DecoderCostModel:
    """Costs of one decoder graph in either phase at any context, from that one graph.

    ``cost(new_tokens, context)`` analyses the graph with its inputs bound (exact);
    ``decode_cost(context)`` and ``prefill_cost(tokens)`` evaluate the fitted polynomials
    (exact where the check passed, else they analyse). ``step`` wraps a cost as a PhaseCost.
    """

    def __init__(self, model, precision: str = "fp16", weight_precision: str | None = None,
                 batch: int = 1, input_shapes: dict[str, tuple[int, ...]] | None = None):
        self.proto, self.name = load_onnx(model)
        signature = decoder_signature(self.proto)
        if signature is None:
            raise DecoderError(f"{self.name}: not a decoder with a KV cache (no past_* inputs or "
                               f"present_* outputs, or no input_ids-like token input)")
        self.signature = signature
        self.precision, self.weight_precision, self.batch = precision, weight_precision, batch
        self.overrides = dict(input_shapes or {})
        if batch != 1 and all(dims and dims[0][0] is not None for name, dims in signature.declared.items()
                              if name not in self.overrides):
            raise DecoderError(f"batch={batch} asked, but every input's leading dimension is static; "
                               f"export the model with a dynamic batch axis or give the input shapes")
        self._curves: dict[str, _Curve | None] = {}
        self.decode_cost = lru_cache(maxsize=4096)(self._decode_cost)

    def cost(self, new_tokens: int, context: int) -> ModelCost:
        shapes = self.signature.input_shapes(new_tokens, context, self.batch, self.overrides)
        cost = analyze_model(self.proto, precision=self.precision, batch=self.batch,
                             input_shapes=shapes, weight_precision=self.weight_precision)
        return replace(cost, model=self.name)

    def _decode_cost(self, context: int) -> ModelCost:
        """One decode step (one new token) at ``context``."""
        return self._fitted("decode", context, lambda n: self.cost(1, n))

    def prefill_cost(self, tokens: int, context: int = 0) -> ModelCost:
        """A prefill of ``tokens`` new tokens (from an empty cache unless ``context``)."""
        if context:
            return self.cost(tokens, context)
        return self._fitted("prefill", tokens, lambda n: self.cost(n, 0))

    def step(self, new_tokens: int, context: int) -> PhaseCost:
        phase = phase_of(new_tokens, self.signature.has_kv_cache)
        cost = self.decode_cost(context) if phase == "decode" else self.prefill_cost(new_tokens, context)
        return PhaseCost(phase=phase, new_tokens=new_tokens, context=context, cost=cost,
                         kv_cache_bytes=self.kv_cache_bytes(context, new_tokens))

    def kv_cache_bytes(self, context: int, new_tokens: int = 1) -> float:
        """Bytes of the KV cache holding ``context`` tokens, at the activation precision
        (``new_tokens``: for a graph that fixes it)."""
        shapes = self.signature.input_shapes(new_tokens, context, self.batch, self.overrides)
        total = 0.0
        for name in self.signature.past_inputs:
            size = _ELEMENT_BYTES.get(self.precision)
            if size is None:  # "mixed": the tensor's own type
                size = _dtype_bytes(self.signature.elem_types[name])
            total += float(np.prod(shapes[name])) * size
        return total

    def _fitted(self, phase: str, length: int, analyse: Callable[[int], ModelCost]) -> ModelCost:
        if phase not in self._curves:
            try:
                self._curves[phase] = _Curve.fit(analyse)
            except CostModelError:  # fixed lengths, or a length the graph refuses: analyse each
                self._curves[phase] = None
        curve = self._curves[phase]
        if curve is None:
            return analyse(length)
        new_tokens, context = (1, length) if phase == "decode" else (length, 0)
        shapes = self.signature.input_shapes(new_tokens, context, self.batch, self.overrides)
        return replace(curve.at(length), input_shapes=shapes)

    def is_projected(self, phase: str) -> bool | None:
        """True if ``phase``'s costs come from the fitted polynomial, False if the fit failed
        its check (every length is analysed), None before the first use."""
        return None if phase not in self._curves else self._curves[phase] is not None


def _dtype_bytes(elem_type: int) -> int:
    import onnx
    return onnx.helper.tensor_dtype_to_np_dtype(elem_type).itemsize


_LAYER_FIELDS = ("flops", "macs", "bytes_read", "bytes_written", "param_bytes", "weight_bytes")


class _Curve:
    """Every number of a ModelCost (per-layer fields and shape dims) as a polynomial of degree
    <= 2 in one length, fitted through three analyses and checked at a fourth. Layers whose
    numbers do not depend on the length (the weight matmuls of a decode step) are the sample's
    own objects; only the others are rebuilt per length."""

    def __init__(self, template: ModelCost, coefficients: np.ndarray, spans: list[tuple[int, int]]):
        self.template, self.coefficients = template, coefficients
        varies = np.abs(coefficients[1:]).max(axis=0) > 0 if coefficients.size else np.zeros(0, bool)
        self._varying = [(i, start, end) for i, (start, end) in enumerate(spans)
                         if varies[start:end].any()]

    @staticmethod
    def _vector(cost: ModelCost) -> tuple[tuple, np.ndarray, list[tuple[int, int]]]:
        layout, values, spans = [], [], []
        for layer in cost.layers:
            shapes = layer.input_shapes + layer.output_shapes
            layout.append((layer.name, tuple(len(s) for s in shapes)))
            start = len(values)
            values.extend(getattr(layer, f) for f in _LAYER_FIELDS)
            values.extend(d for s in shapes for d in s)
            spans.append((start, len(values)))
        return tuple(layout), np.array(values, dtype=float), spans

    @classmethod
    def fit(cls, analyse: Callable[[int], ModelCost]) -> "_Curve | None":
        samples = [analyse(n) for n in (*_FIT_LENGTHS, _CHECK_LENGTH)]
        vectors = [cls._vector(c) for c in samples]
        if any(layout != vectors[0][0] for layout, _, _ in vectors):
            return None  # the graph's structure changes with the length: no single polynomial
        x = np.array(_FIT_LENGTHS, dtype=float)
        ys = np.stack([v for _, v, _ in vectors[:3]])
        coefficients = np.linalg.solve(np.vander(x, 3, increasing=True), ys)
        # The solve's noise on a constant is not a dependence on the length.
        scale = np.maximum(np.abs(ys).max(axis=0), 1.0)
        coefficients[1:][np.abs(coefficients[1:]) * _CHECK_LENGTH ** 2 < 1e-9 * scale] = 0.0
        curve = cls(samples[0], coefficients, vectors[0][2])
        if not np.allclose(curve._values(_CHECK_LENGTH), vectors[3][1], rtol=_FIT_RTOL, atol=1e-6):
            return None
        return curve

    def _values(self, length: int) -> np.ndarray:
        return np.array([1.0, length, float(length) ** 2]) @ self.coefficients

    def at(self, length: int) -> ModelCost:
        values = self._values(length)
        layers = list(self.template.layers)
        n_fields = len(_LAYER_FIELDS)
        for i, start, end in self._varying:
            layer, own = layers[i], values[start:end].tolist()
            # Counts are whole numbers, bytes whole or half (int4): round off the solve's noise.
            fields = {f: max(round(2.0 * v) / 2.0, 0.0) for f, v in zip(_LAYER_FIELDS, own)}
            dims = iter(int(round(v)) for v in own[n_fields:])
            shapes = [tuple(next(dims) for _ in s) for s in layer.input_shapes + layer.output_shapes]
            n_in = len(layer.input_shapes)
            layers[i] = replace(layer, **fields, input_shapes=tuple(shapes[:n_in]),
                                output_shapes=tuple(shapes[n_in:]))
        return replace(self.template, layers=tuple(layers))
