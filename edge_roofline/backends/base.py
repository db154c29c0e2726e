"""The interface every inference backend implements (ONNX Runtime, TensorRT, the virtual
Jetson), the plain dataclasses it speaks in, and typed errors that name what went wrong.

A *layer* is the backend's unit of execution: an ONNX Runtime kernel (possibly a fusion of
several ONNX nodes), a TensorRT layer ("conv1 + bn1 + relu1"), or one ONNX node on the virtual
board. Every layer says which ONNX nodes it covers (``LayerInfo.onnx_nodes``), so measured
layer times can be joined to the cost model, which is keyed by ONNX node name.
"""

from __future__ import annotations

import abc
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Mapping

import numpy as np


# ---- errors ---------------------------------------------------------------------------

class BackendError(RuntimeError):
    """Base of every backend error."""


class ModelLoadError(BackendError):
    """The model or engine file is missing, corrupt, or not loadable by this backend."""


class EngineVersionError(ModelLoadError):
    """A serialized TensorRT engine was built by another TensorRT version (or device)."""


class TensorNameError(BackendError, KeyError):
    """A feed or fetch names a tensor the model does not have; lists the expected names."""

    def __init__(self, kind: str, wrong: list[str], expected: list[str]) -> None:
        self.kind, self.wrong, self.expected = kind, list(wrong), list(expected)
        super().__init__(str(self))

    def __str__(self) -> str:
        return (f"unknown {self.kind} tensor name(s) {', '.join(map(repr, self.wrong))}; "
                f"the model's {self.kind}s are: {', '.join(map(repr, self.expected))}")


class MissingInputError(TensorNameError):
    """Feeds lack some of the model's inputs."""

    def __str__(self) -> str:
        return (f"missing input(s) {', '.join(map(repr, self.wrong))}; the model's inputs are: "
                f"{', '.join(map(repr, self.expected))}")


class InputShapeError(BackendError, ValueError):
    """A feed has the wrong rank, a wrong static dimension, or the wrong dtype."""


class BackendUnavailableError(BackendError, ValueError):
    """The backend spec names no backend, or one this install cannot import."""


# ---- data -----------------------------------------------------------------------------

Dim = int | str | None  # a static size, or a symbolic / unknown (dynamic) dimension


@dataclass(frozen=True)
class TensorInfo:
    name: str
    shape: tuple[Dim, ...]
    dtype: str  # numpy dtype name: "float32", "float16", "int64", ...

    def concrete_shape(self, dynamic_size: int = 1) -> tuple[int, ...]:
        """The shape with dynamic dimensions replaced (for dummy feeds and buffers)."""
        return tuple(d if isinstance(d, int) and d > 0 else dynamic_size for d in self.shape)


@dataclass
class RunResult:
    outputs: dict[str, np.ndarray]
    latency_s: float
    computed: bool = True  # False: outputs are placeholders, not computed (virtual board)
    nonfinite_outputs: tuple[str, ...] = ()  # outputs holding NaN or Inf

    @property
    def has_nonfinite(self) -> bool:
        return bool(self.nonfinite_outputs)


@dataclass(frozen=True)
class LayerInfo:
    """One execution unit of a backend and the ONNX nodes it covers (empty for layers that
    exist only in the runtime, e.g. TensorRT reformats or ONNX Runtime memcpy nodes)."""

    name: str
    op_type: str
    onnx_nodes: tuple[str, ...]
    precision: str = "fp32"
    tactic: str = ""
    extra: Mapping[str, Any] = field(default_factory=dict)


@dataclass
class LayerProfile:
    """Per-layer times of one profiled inference (averaged over ``runs`` runs).

    ``total_time_s`` is the end-to-end time of one run as the runtime saw it; the sum of layer
    times is at most that (the difference is launch and scheduling overhead).
    ``folded_nodes`` are ONNX nodes that no layer executes because the runtime computed them
    ahead of time (constant folding) or removed them; they take no time.
    """

    layer_times_s: dict[str, float]
    total_time_s: float
    layer_info: list[LayerInfo]
    runs: int = 1
    backend: str = ""
    folded_nodes: tuple[str, ...] = ()

    def node_to_layer(self) -> dict[str, str]:
        """ONNX node name -> the layer covering it. Raises if a node is covered twice."""
        owner: dict[str, str] = {}
        for layer in self.layer_info:
            for node in layer.onnx_nodes:
                if node in owner:
                    raise ValueError(f"ONNX node {node!r} is covered by both {owner[node]!r} "
                                     f"and {layer.name!r}")
                owner[node] = layer.name
        return owner

    @property
    def layer_time_sum_s(self) -> float:
        return sum(self.layer_times_s.values())


# ---- the interface --------------------------------------------------------------------

ModelSource = str | Path | bytes  # a file path (ONNX or engine) or serialized bytes


class InferenceBackend(abc.ABC):
    """Load a model once, then ``run`` it on the fast path; ``profile`` measures per-layer
    times on demand (backends keep profiling machinery off the fast path)."""

    kind: str = ""

    @abc.abstractmethod
    def load(self, model: Any) -> None:
        """Load an ONNX model (path, bytes or ``onnx.ModelProto``) or, for TensorRT, an
        engine file. Raises ``ModelLoadError`` (or ``EngineVersionError``)."""

    @abc.abstractmethod
    def inputs(self) -> list[TensorInfo]: ...

    @abc.abstractmethod
    def outputs(self) -> list[TensorInfo]: ...

    @abc.abstractmethod
    def run(self, feeds: Mapping[str, np.ndarray]) -> RunResult: ...

    @abc.abstractmethod
    def profile(self, feeds: Mapping[str, np.ndarray], runs: int = 1) -> LayerProfile: ...

    @abc.abstractmethod
    def describe_layers(self) -> list[LayerInfo]: ...

    def execution_target(self) -> tuple[str | None, str]:
        """Where the loaded model runs: (catalogue device key, engine "cpu" | "gpu" | "dla");
        the key is None for this machine, whatever it is. Reports check their roofs against it."""
        return None, "cpu"

    def close(self) -> None:
        """Release sessions, engines and buffers; the default has nothing to release."""

    def __enter__(self):
        return self

    def __exit__(self, *exc) -> None:
        self.close()

    # ---- shared helpers -------------------------------------------------------------
    def check_feeds(self, feeds: Mapping[str, np.ndarray]) -> dict[str, np.ndarray]:
        """Validate feeds against ``inputs()`` by name, rank, static dims and dtype, so every
        backend fails the same clear way before touching the runtime."""
        expected = {t.name: t for t in self.inputs()}
        unknown = [n for n in feeds if n not in expected]
        if unknown:
            raise TensorNameError("input", unknown, list(expected))
        missing = [n for n in expected if n not in feeds]
        if missing:
            raise MissingInputError("input", missing, list(expected))
        checked = {}
        for name, info in expected.items():
            value = np.asarray(feeds[name])
            if value.dtype != np.dtype(info.dtype):
                raise InputShapeError(f"input {name!r} expects dtype {info.dtype}, got "
                                      f"{value.dtype} (convert with .astype(np.{info.dtype}))")
            if value.ndim != len(info.shape) or any(
                    isinstance(d, int) and d > 0 and d != s for d, s in zip(info.shape, value.shape)):
                raise InputShapeError(f"input {name!r} expects shape {list(info.shape)}, got "
                                      f"{list(value.shape)}")
            checked[name] = value
        return checked

    def dummy_feeds(self, seed: int = 0) -> dict[str, np.ndarray]:
        """Random feeds matching ``inputs()`` (integers in [0, 100) for index inputs)."""
        rng = np.random.default_rng(seed)
        feeds = {}
        for t in self.inputs():
            shape = t.concrete_shape()
            if np.issubdtype(np.dtype(t.dtype), np.integer):
                feeds[t.name] = rng.integers(0, 100, shape).astype(t.dtype)
            else:
                feeds[t.name] = rng.random(shape, dtype=np.float32).astype(t.dtype)
        return feeds


def nonfinite_outputs(outputs: Mapping[str, np.ndarray]) -> tuple[str, ...]:
    """Names of floating-point outputs that contain NaN or Inf."""
    return tuple(name for name, v in outputs.items()
                 if np.issubdtype(np.asarray(v).dtype, np.floating) and not np.isfinite(v).all())

