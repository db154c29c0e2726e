"""ONNX Runtime backend: the CPU path everywhere, CUDA when the GPU build is installed.

Fast path and profiling path are separate sessions. The fast session never has profiling
enabled. ``profile()`` uses a second session with ``enable_profiling`` on; ONNX Runtime writes
its trace only when profiling *ends*, and a session cannot restart profiling, so each profiling
session serves one ``profile()`` call and the next one is prepared in a background thread
(created from the already-optimized model, then warmed up) so that ``profile()`` itself costs
about one run.

Joining kernel times to ONNX nodes. ONNX Runtime fuses nodes (Conv+BatchNormalization at
"basic", Conv+Relu -> FusedConv, Erf-GELU -> Gelu, MatMul+Add -> Gemm at "extended") and
renames some kernels. Instead of guessing from names, the profiling session saves its optimized
graph (``optimized_model_filepath``) and :func:`group_kernels` compares it with the original by
dataflow: a tensor that survives optimisation keeps its name, so every original node between
surviving tensors belongs to the kernel(s) that now produce them. The result partitions the
ONNX nodes: each node is covered by exactly one layer, or is listed as folded (computed at load
time). Layouts that rename every tensor (the NCHWc transformer of "all" on x86) defeat this, so
the profiling session runs at most at "extended"; the fast session may use "all". The default
is "extended" for both, so the profile measures the very graph that serves requests.
"""

from __future__ import annotations

import concurrent.futures
import json
import tempfile
from dataclasses import dataclass
from pathlib import Path
from typing import Any, Mapping

import numpy as np

from edge_roofline.backends.base import (
    BackendError, InferenceBackend, LayerInfo, LayerProfile, ModelLoadError, RunResult, TensorInfo,
    nonfinite_outputs,
)
from edge_roofline.clock import Clock

OPTIMIZATION_LEVELS = ("disable", "basic", "extended", "all")
PROFILE_MAX_LEVEL = "extended"
KERNEL_EVENT_SUFFIX = "_kernel_time"
MODEL_FIX = "give an existing ONNX file, or zoo:NAME for a built-in model"
# Preferred execution providers, best first; the TensorRT EP is opt-in (``providers=``)
# because it compiles the whole graph into one kernel, which hides per-node times: use the
# tensorrt backend for per-layer TensorRT data.
DEFAULT_PROVIDERS = ("CUDAExecutionProvider", "CPUExecutionProvider")

_ORT_DTYPES = {"tensor(float)": "float32", "tensor(float16)": "float16",
               "tensor(double)": "float64", "tensor(int64)": "int64", "tensor(int32)": "int32",
               "tensor(int8)": "int8", "tensor(uint8)": "uint8", "tensor(bool)": "bool"}


# ---- pure logic: optimized graph -> layers, trace -> kernel times ---------------------

@dataclass(frozen=True)
class KernelGroup:
    """Kernels of the optimized graph that together replace a set of original ONNX nodes."""

    kernels: tuple[str, ...]  # optimized node names, in execution order
    op_types: tuple[str, ...]
    onnx_nodes: tuple[str, ...]

    @property
    def name(self) -> str:
        return " + ".join(self.kernels)


def _tensors(graph) -> set[str]:
    names = {i.name for i in graph.initializer} | {i.name for i in graph.input}
    for node in graph.node:
        names.update(t for t in (*node.input, *node.output) if t)
    return names


def group_kernels(original, optimized) -> tuple[list[KernelGroup], tuple[str, ...]]:
    """Partition original ONNX nodes among the kernels of the optimized graph.

    Union-find over both node sets: original nodes sharing a tensor that vanished are one
    fused region; optimized nodes sharing a tensor that did not exist before belong together
    (e.g. ORT's Reshape-Gemm-Reshape for a 3-D MatMul+Add); and the kernel that produces a
    surviving tensor covers that tensor's original producer. Returns the groups that have
    kernels (in execution order) and the original nodes no kernel covers (folded).
    """
    parent: dict[tuple[str, str], tuple[str, str]] = {}

    def find(x):
        parent.setdefault(x, x)
        while parent[x] != x:
            parent[x] = parent[parent[x]]
            x = parent[x]
        return x

    def union(a, b):
        parent[find(a)] = find(b)

    before, after = _tensors(original), _tensors(optimized)
    orig_touch: dict[str, list[str]] = {}
    producer: dict[str, str] = {}
    for node in original.node:
        find(("onnx", node.name))
        for t in (*node.input, *node.output):
            if t:
                orig_touch.setdefault(t, []).append(node.name)
        for t in node.output:
            producer[t] = node.name
    # Only intermediate activations link nodes: two nodes sharing a weight that was
    # rewritten (e.g. folded into a Conv) are not thereby fused.
    for t, nodes in orig_touch.items():
        if t not in after and t in producer:
            for n in nodes[1:]:
                union(("onnx", nodes[0]), ("onnx", n))
    new_touch: dict[str, list[str]] = {}
    new_produced: set[str] = set()
    for node in optimized.node:
        find(("kernel", node.name))
        for t in (*node.input, *node.output):
            if t and t not in before:
                new_touch.setdefault(t, []).append(node.name)
        for t in node.output:
            new_produced.add(t)
            if t in producer:
                union(("kernel", node.name), ("onnx", producer[t]))
    for t, nodes in new_touch.items():
        if t in new_produced:
            for n in nodes[1:]:
                union(("kernel", nodes[0]), ("kernel", n))

    members: dict[tuple[str, str], dict[str, list]] = {}
    for node in optimized.node:
        g = members.setdefault(find(("kernel", node.name)), {"kernels": [], "ops": [], "onnx": []})
        g["kernels"].append(node.name)
        g["ops"].append(node.op_type)
    folded = []
    for node in original.node:
        root = find(("onnx", node.name))
        if root in members:
            members[root]["onnx"].append(node.name)
        else:
            folded.append(node.name)
    groups = [KernelGroup(tuple(g["kernels"]), tuple(g["ops"]), tuple(g["onnx"]))
              for g in members.values()]
    return groups, tuple(folded)


def kernel_times_from_trace(events: list[dict], skip_runs: int = 0) -> tuple[dict[str, float], list[float]]:
    """Per-kernel time (s, summed over runs) and per-run wall time (s) from an ONNX Runtime
    profile trace: Chrome-trace events where ``cat == "Node"`` and ``name`` is
    ``<node>_kernel_time`` (``dur`` in microseconds), inside ``cat == "Session"`` events named
    ``model_run``. The first ``skip_runs`` runs (warm-up) are ignored."""
    runs = sorted((e["ts"], e["ts"] + e["dur"]) for e in events
                  if e.get("cat") == "Session" and e.get("name") == "model_run")[skip_runs:]
    kept_from = runs[0][0] if runs else float("inf")
    times: dict[str, float] = {}
    for e in events:
        if e.get("cat") == "Node" and e["name"].endswith(KERNEL_EVENT_SUFFIX) and e["ts"] >= kept_from:
            node = e["name"][: -len(KERNEL_EVENT_SUFFIX)]
            times[node] = times.get(node, 0.0) + e["dur"] * 1e-6
    return times, [(end - start) * 1e-6 for start, end in runs]


# ---- the backend ----------------------------------------------------------------------

class OnnxRuntimeBackend(InferenceBackend):
    kind = "ort"

    def __init__(self, providers: list | None = None, optimization: str = "extended",
                 intra_op_threads: int = 0, check_finite: bool = True,
                 prepare_next_profiler: bool = True, clock: Clock | None = None) -> None:
        if optimization not in OPTIMIZATION_LEVELS:
            raise ValueError(f"optimization must be one of {OPTIMIZATION_LEVELS}")
        self.providers, self.optimization = providers, optimization
        self.intra_op_threads, self.check_finite = intra_op_threads, check_finite
        self.prepare_next_profiler = prepare_next_profiler
        self.clock = clock or Clock()
        self.session = None
        self.model = None  # onnx.ModelProto of the loaded model
        self._model_bytes = b""
        self._optimized_bytes: bytes | None = None
        self._groups: list[KernelGroup] = []
        self._folded: tuple[str, ...] = ()
        self._tmp = tempfile.TemporaryDirectory(prefix="edge_roofline_ort_")
        self._executor = concurrent.futures.ThreadPoolExecutor(max_workers=1)
        self._next_profiler: concurrent.futures.Future | None = None
        self._traces = 0  # profiling sessions made: each gets its own trace file prefix
        self.profiler_prepare_s = 0.0  # time the last profiling session took to prepare

    # ---- loading ----------------------------------------------------------------------
    def load(self, model: Any) -> None:
        import onnx
        import onnxruntime as ort

        try:
            if isinstance(model, onnx.ModelProto):
                proto, data = model, model.SerializeToString()
            else:
                data = model if isinstance(model, bytes) else Path(model).read_bytes()
                proto = onnx.load_from_string(data)
        except OSError as e:
            raise ModelLoadError(f"cannot read model {model}: {e}; {MODEL_FIX}") from e
        except Exception as e:  # protobuf's DecodeError and friends
            raise ModelLoadError(f"{_describe(model)} is not a valid ONNX model ({e}); {MODEL_FIX}") from e
        try:
            self.session = ort.InferenceSession(data, self._options(self.optimization),
                                                providers=self._providers())
        except Exception as e:  # ORT raises its own Fail/InvalidGraph/InvalidProtobuf types
            raise ModelLoadError(f"ONNX Runtime cannot load {_describe(model)}: {e}") from e
        self.model, self._model_bytes = proto, data
        self._optimized_bytes, self._groups, self._folded = None, [], ()
        self._next_profiler = None
        # Names the join relies on: a node without a name cannot be attributed.
        unnamed = [i for i, n in enumerate(proto.graph.node) if not n.name]
        if unnamed:
            raise ModelLoadError(f"{_describe(model)} has {len(unnamed)} unnamed node(s) (first "
                                 f"at index {unnamed[0]}); name every node, e.g. with "
                                 "onnx-graphsurgeon or by re-exporting")

    def _providers(self) -> list:
        import onnxruntime as ort
        if self.providers is not None:
            return list(self.providers)
        available = set(ort.get_available_providers())
        return [p for p in DEFAULT_PROVIDERS if p in available]

    def _options(self, level: str, profile_prefix: str | None = None,
                 save_optimized: str | None = None):
        import onnxruntime as ort
        so = ort.SessionOptions()
        so.graph_optimization_level = {
            "disable": ort.GraphOptimizationLevel.ORT_DISABLE_ALL,
            "basic": ort.GraphOptimizationLevel.ORT_ENABLE_BASIC,
            "extended": ort.GraphOptimizationLevel.ORT_ENABLE_EXTENDED,
            "all": ort.GraphOptimizationLevel.ORT_ENABLE_ALL}[level]
        so.intra_op_num_threads = self.intra_op_threads
        so.log_severity_level = 3  # the NCHWc "hardware specific" warning is expected noise
        if profile_prefix:
            so.enable_profiling = True
            so.profile_file_prefix = profile_prefix
        if save_optimized:
            so.optimized_model_filepath = save_optimized
        return so

    def _require(self):
        if self.session is None:
            raise ModelLoadError("no model loaded; call load() first")
        return self.session

    # ---- introspection ----------------------------------------------------------------
    def inputs(self) -> list[TensorInfo]:
        return [_info(a) for a in self._require().get_inputs()]

    def outputs(self) -> list[TensorInfo]:
        return [_info(a) for a in self._require().get_outputs()]

    def describe_layers(self) -> list[LayerInfo]:
        """Layers of the profiled (optimized) graph; prepares the optimized graph on first
        use."""
        self._ensure_grouping()
        precision = self._precision()
        return [LayerInfo(g.name, "+".join(g.op_types), g.onnx_nodes, precision,
                          extra={"kernels": g.kernels}) for g in self._groups]

    def execution_target(self) -> tuple[str | None, str]:
        gpu = {"CUDAExecutionProvider", "TensorrtExecutionProvider"} & set(self._require().get_providers())
        return None, "gpu" if gpu else "cpu"

    def _precision(self) -> str:
        floats = [t.dtype for t in self.inputs() if t.dtype.startswith("float")]
        return "fp16" if floats and floats[0] == "float16" else "fp32"

    # ---- fast path --------------------------------------------------------------------
    def run(self, feeds: Mapping[str, np.ndarray]) -> RunResult:
        session = self._require()
        checked = self.check_feeds(feeds)
        start_s = self.clock.now_s()
        try:
            values = session.run(None, checked)
        except Exception as exc:  # ORT's Fail/RuntimeException/... are not BackendError
            raise BackendError(f"ONNX Runtime failed to run the model: {type(exc).__name__}: {exc}") from exc
        latency_s = self.clock.now_s() - start_s
        outputs = {o.name: v for o, v in zip(session.get_outputs(), values)}
        return RunResult(outputs, latency_s, True,
                         nonfinite_outputs(outputs) if self.check_finite else ())

    # ---- profiling --------------------------------------------------------------------
    def _profile_level(self) -> str:
        order = OPTIMIZATION_LEVELS
        return order[min(order.index(self.optimization), order.index(PROFILE_MAX_LEVEL))]

    def _ensure_grouping(self) -> None:
        """The first profiling session optimizes the original model and saves the result,
        which gives the kernel grouping; it is kept as the next profiler."""
        if self._optimized_bytes is not None:
            return
        import onnx
        import onnxruntime as ort
        path = str(Path(self._tmp.name) / "optimized.onnx")
        session = ort.InferenceSession(self._model_bytes, self._options(
            self._profile_level(), self._trace_prefix(), save_optimized=path),
            providers=self._providers())
        self._optimized_bytes = Path(path).read_bytes()
        self._groups, self._folded = group_kernels(
            self.model.graph, onnx.load_from_string(self._optimized_bytes).graph)
        self._next_profiler = concurrent.futures.Future()
        self._next_profiler.set_result((session, False))

    def _trace_prefix(self) -> str:
        """A prefix per profiling session: ONNX Runtime names the trace by prefix and the second
        it started, so two sessions of one prefix could write one file."""
        self._traces += 1
        return str(Path(self._tmp.name) / f"profile{self._traces}")

    def _new_profiler(self, warmup_feeds: Mapping[str, np.ndarray] | None):
        """A profiling session from the optimized model (no optimisation to redo), warmed up
        when feeds are given so its first measured run does not pay for allocations.
        Returns (session, warmed)."""
        import onnxruntime as ort
        start_s = self.clock.now_s()
        session = ort.InferenceSession(self._optimized_bytes,
                                       self._options("disable", self._trace_prefix()),
                                       providers=self._providers())
        if warmup_feeds is not None:
            session.run(None, dict(warmup_feeds))
        self.profiler_prepare_s = self.clock.now_s() - start_s
        return session, warmup_feeds is not None

    def profile(self, feeds: Mapping[str, np.ndarray], runs: int = 1) -> LayerProfile:
        """Per-layer times averaged over ``runs`` profiled runs (after one unmeasured
        warm-up run in the same session)."""
        if runs < 1:
            raise ValueError("runs must be >= 1")
        self._require()
        checked = self.check_feeds(feeds)
        self._ensure_grouping()
        pending, self._next_profiler = self._next_profiler, None
        try:
            session, warmed = pending.result() if pending else self._new_profiler(None)
            if not warmed:
                session.run(None, checked)
            for _ in range(runs):
                session.run(None, checked)
            trace = Path(session.end_profiling())
        except Exception as exc:  # ORT's own exception types
            raise BackendError(f"ONNX Runtime failed to profile the model: {type(exc).__name__}: {exc}") from exc
        try:
            events = json.loads(trace.read_text())
        except (OSError, ValueError) as exc:
            raise BackendError(f"ONNX Runtime's profile trace {trace.name} is unreadable ({exc}); the next "
                               f"profiled run tries again") from exc
        finally:
            trace.unlink(missing_ok=True)
        if self.prepare_next_profiler:
            warm = {k: v.copy() for k, v in checked.items()}
            self._next_profiler = self._executor.submit(self._new_profiler, warm)
        kernel_s, run_s = kernel_times_from_trace(events, skip_runs=1)
        return self._layer_profile(kernel_s, run_s, runs)

    def _layer_profile(self, kernel_s: dict[str, float], run_s: list[float], runs: int) -> LayerProfile:
        layers = self.describe_layers()
        times = {}
        seen = set()
        for layer in layers:
            times[layer.name] = sum(kernel_s.get(k, 0.0) for k in layer.extra["kernels"]) / runs
            seen.update(layer.extra["kernels"])
        # Kernels the runtime added after saving the optimized graph (e.g. device copies)
        # cover no ONNX node; they are reported so their time is not silently lost.
        for kernel, t in kernel_s.items():
            if kernel not in seen:
                layers.append(LayerInfo(kernel, "runtime", (), self._precision()))
                times[kernel] = t / runs
        total_s = sum(run_s) / len(run_s) if run_s else sum(times.values())
        return LayerProfile(times, total_s, layers, runs, self.kind, self._folded)

    def close(self) -> None:
        self._executor.shutdown(wait=True)
        self._next_profiler = None
        self.session = None
        self._tmp.cleanup()


def _info(arg) -> TensorInfo:
    shape = tuple(d if isinstance(d, int) else (d or None) for d in arg.shape)
    return TensorInfo(arg.name, shape, _ORT_DTYPES.get(arg.type, arg.type))


def _describe(model: Any) -> str:
    return "the model bytes" if isinstance(model, bytes) else (
        "the model" if not isinstance(model, (str, Path)) else f"'{model}'")
