"""TensorRT backend (TRT 8.6 and 10.x): builds an engine from ONNX (fp16 / int8 from a
calibration cache / a DLA core; ProfilingVerbosity.DETAILED so layers can be mapped back), keeps
it in an on-disk cache keyed by model hash + TRT version + device + flags, or loads a prebuilt
engine. I/O by tensor name through pycuda buffers on one stream (the name-based API,
set_tensor_address + execute_async_v3, exists from TRT 8.5 on, so 8.6 and 10.x share one
path). Per-layer times from an IProfiler during synchronous ``execute_v2`` runs (the call the
profiler is documented for in both versions), layer -> ONNX node mapping from the engine
inspector (``tensorrt_layers``).

CUDA context: a CUDA context is current per *thread*. The backend retains the device's primary
context (the one TensorRT's CUDA runtime calls use) and pushes it around every call that touches
the GPU, popping it after, so it can be built on one thread (a parameter callback) and run and
closed on another (the inference worker). ``pycuda.autoinit`` is not used: it makes a new context
current on the importing thread only, and the worker then failed with "invalid device context".

``tensorrt`` and ``pycuda`` are imported when the backend is created, with a clear error on a
machine without them.
"""

from __future__ import annotations

import contextlib
import functools
import hashlib
import json
import os
import sys
from pathlib import Path
from typing import Any, Mapping

import numpy as np

from edge_roofline.backends.base import (
    BackendError, InferenceBackend, LayerInfo, LayerProfile, ModelLoadError, RunResult,
    TensorInfo, nonfinite_outputs,
)
from edge_roofline.backends.tensorrt_layers import (
    LayerTimeAccumulator, check_engine_metadata, deserialize_failure, engine_cache_key,
    engine_metadata, parse_layer_information,
)
from edge_roofline.clock import Clock
from edge_roofline.models.source import is_engine


def default_engine_cache_dir() -> Path:
    return Path(os.environ.get("XDG_CACHE_HOME", Path.home() / ".cache")) / "edge_roofline" / "engines"


def calibration_problem(precision: str, calibration_cache, *, cache: str = "calibration_cache=FILE",
                        fp16: str = "precision fp16") -> str | None:
    """Why a build at ``precision`` cannot run (None: it can): an int8 build replays a calibration
    cache, TensorRT here does not calibrate. ``cache``, ``fp16``: how the caller's user sets them."""
    if precision == "int8" and not calibration_cache:
        return (f"TensorRT builds int8 from a calibration cache (it replays one, it does not calibrate) and none is "
                f"given: set {cache} (a TensorRT calibration cache of the model), or {fp16}")
    return None


def calibration_sha256(path: str | Path) -> str:
    """What a calibration cache holds, as an engine built from it (its cache key) and a sweep
    resumed with it (its settings) tell it from another: a file rewritten in place is another."""
    return hashlib.sha256(Path(path).read_bytes()).hexdigest()


def _import_runtime():
    try:
        import tensorrt as trt
        import pycuda.driver as cuda
    except ImportError as e:
        raise BackendError(
            f"the TensorRT backend needs the tensorrt and pycuda Python packages ({e}); on a "
            "Jetson they come with JetPack (python3-libnvinfer, pip install pycuda); elsewhere "
            "use the ort or virtual backend") from e
    cuda.init()
    return trt, cuda


def _in_context(method):
    """Run ``method`` with the backend's CUDA context current on the calling thread."""
    @functools.wraps(method)
    def wrapper(self, *args, **kwargs):
        with self.cuda_context():
            return method(self, *args, **kwargs)
    return wrapper


class TensorRTBackend(InferenceBackend):
    kind = "tensorrt"

    def __init__(self, precision: str = "fp16", calibration_cache: str | Path | None = None,
                 dla_core: int | None = None, cache_dir_path: str | Path | None = None,
                 workspace_bytes: int = 1 << 30, check_finite: bool = True,
                 mapping_onnx: Any = None, clock: Clock | None = None) -> None:
        """``mapping_onnx``: the ONNX model a prebuilt engine was built from (path or
        ModelProto), so its layers can be mapped to ONNX nodes."""
        if precision not in ("fp32", "fp16", "int8"):
            raise ValueError("precision must be fp32, fp16 or int8")
        self.trt, self.cuda = _import_runtime()
        self.precision, self.dla_core = precision, dla_core
        self.engine_dla_core = dla_core  # the loaded engine's DLA core (None: the GPU)
        # Only an int8 build reads the cache (checked there: a prebuilt int8 engine needs none); at fp32 / fp16
        # it is no build flag (nor part of the cache key).
        self.calibration_cache = Path(calibration_cache) if precision == "int8" and calibration_cache else None
        self.cache_dir = Path(cache_dir_path) if cache_dir_path else default_engine_cache_dir()
        self.workspace_bytes, self.check_finite = workspace_bytes, check_finite
        self.clock = clock or Clock()
        self.mapping_onnx = mapping_onnx
        self.logger = _capturing_logger(self.trt)
        self.engine = self.context = None
        self._cuda_context = self.cuda.Device(0).retain_primary_context()
        with self.cuda_context():
            self.stream = self.cuda.Stream()
        self.onnx_nodes: list[str] = []
        self.engine_path: Path | None = None
        self.built = False  # True when load() built the engine rather than reading it
        self._host: dict[str, np.ndarray] = {}
        self._device: dict[str, Any] = {}

    @contextlib.contextmanager
    def cuda_context(self):
        """The backend's context pushed on this thread for the block, popped after."""
        if self._cuda_context is None:
            raise ModelLoadError("the TensorRT backend is closed")
        self._cuda_context.push()
        try:
            yield
        finally:
            self.cuda.Context.pop()

    # ---- loading ----------------------------------------------------------------------
    def _flags(self) -> dict:
        return {"precision": self.precision, "dla_core": self.dla_core,
                "calibration_sha256": calibration_sha256(self.calibration_cache) if self.calibration_cache else None}

    @_in_context
    def load(self, model: Any) -> None:
        """An ONNX model (path, bytes, ModelProto) is built or taken from the engine cache; a
        path ending in .engine/.plan is a prebuilt engine."""
        if isinstance(model, (str, Path)) and is_engine(str(model)):
            path = Path(model)
            if not path.exists():
                raise ModelLoadError(f"engine file '{path}' does not exist")
            self.onnx_nodes = ([n.name for n in _read_onnx(self.mapping_onnx).graph.node]
                               if self.mapping_onnx is not None else [])
            self.engine_path, self.built = path, False
        else:
            self._check_calibration_cache()
            proto = _read_onnx(model)
            data = proto.SerializeToString()
            self.onnx_nodes = [n.name for n in proto.graph.node]
            device = self.cuda.Device(0)
            sm = device.compute_capability()
            key = engine_cache_key(data, self.trt.__version__, device.name(), self._flags(), sm)
            self.engine_path = self.cache_dir / f"{key}.engine"
            self.built = not self.engine_path.exists()
            if self.built:
                self.cache_dir.mkdir(parents=True, exist_ok=True)
                tmp = self.engine_path.with_suffix(".tmp")
                tmp.write_bytes(self._build(data))
                meta = engine_metadata(self.trt.__version__, device.name(), sm, self._flags(), data)
                _sidecar(self.engine_path).write_text(json.dumps(meta, indent=1))
                tmp.replace(self.engine_path)  # atomic: a crash never leaves half an engine
        self._deserialize(self.engine_path)
        self._allocate()

    def _check_calibration_cache(self) -> None:
        """An int8 build replays a calibration cache (before it is hashed for the engine cache key)."""
        if (problem := calibration_problem(self.precision, self.calibration_cache)) is not None:
            raise ValueError(problem)
        if self.calibration_cache is not None and not self.calibration_cache.is_file():
            raise ValueError(f"calibration cache '{self.calibration_cache}' does not exist: set calibration_cache to "
                             f"an existing file (a TensorRT calibration cache of the model)")

    def _build(self, onnx_bytes: bytes) -> bytes:
        trt = self.trt
        builder = trt.Builder(self.logger)
        explicit = getattr(trt.NetworkDefinitionCreationFlag, "EXPLICIT_BATCH", None)
        major = int(trt.__version__.split(".")[0])  # 10.x: explicit batch is the only mode
        network = builder.create_network(0 if explicit is None or major >= 10 else 1 << int(explicit))
        parser = trt.OnnxParser(network, self.logger)
        if not parser.parse(onnx_bytes):
            errors = "; ".join(str(parser.get_error(i)) for i in range(parser.num_errors))
            raise ModelLoadError(f"TensorRT cannot parse the ONNX model: {errors}")
        config = builder.create_builder_config()
        config.set_memory_pool_limit(trt.MemoryPoolType.WORKSPACE, self.workspace_bytes)
        config.profiling_verbosity = trt.ProfilingVerbosity.DETAILED
        if self.precision in ("fp16", "int8"):
            config.set_flag(trt.BuilderFlag.FP16)
        if self.precision == "int8":
            config.set_flag(trt.BuilderFlag.INT8)
            config.int8_calibrator = _cache_calibrator(trt, self.calibration_cache)
        if self.dla_core is not None:
            config.default_device_type = trt.DeviceType.DLA
            config.DLA_core = self.dla_core
            config.set_flag(trt.BuilderFlag.GPU_FALLBACK)
        serialized = builder.build_serialized_network(network, config)
        if serialized is None:
            raise ModelLoadError("TensorRT failed to build the engine (see the log above)")
        return bytes(serialized)

    def _deserialize(self, path: Path) -> None:
        where = f"'{path}'"
        meta = json.loads(_sidecar(path).read_text()) if _sidecar(path).exists() else None
        if meta is not None:  # engines this backend built say what built them
            check_engine_metadata(meta, self.trt.__version__, self.cuda.Device(0).compute_capability(), where,
                                  self.precision)
        # Where an engine runs was fixed when it was built: a prebuilt one's sidecar says (without one, as asked).
        self.engine_dla_core = (meta.get("flags") or {}).get("dla_core") if meta is not None else self.dla_core
        self.logger.messages.clear()
        runtime = self.trt.Runtime(self.logger)
        if self.engine_dla_core is not None:  # else it runs on the runtime's default core, not the one built for
            runtime.DLA_core = self.engine_dla_core
        engine = runtime.deserialize_cuda_engine(path.read_bytes())
        if engine is None:
            raise deserialize_failure(self.logger.messages, self.trt.__version__, where)
        self.engine, self.context = engine, engine.create_execution_context()

    def _names(self) -> list[str]:
        return [self.engine.get_tensor_name(i) for i in range(self.engine.num_io_tensors)]

    def _is_input(self, name: str) -> bool:
        return self.engine.get_tensor_mode(name) == self.trt.TensorIOMode.INPUT

    def _info(self, name: str) -> TensorInfo:
        shape = tuple(d if d >= 0 else None for d in self.engine.get_tensor_shape(name))
        return TensorInfo(name, shape, np.dtype(self.trt.nptype(self.engine.get_tensor_dtype(name))).name)

    def _allocate(self) -> None:
        self._host, self._device = {}, {}
        for name in self._names():
            info = self._info(name)
            if None in info.shape:
                raise ModelLoadError(f"tensor {name!r} has a dynamic shape {list(info.shape)}; "
                                     "export the ONNX model with static shapes for TensorRT")
            host = self.cuda.pagelocked_empty(info.concrete_shape(), np.dtype(info.dtype))
            self._host[name], self._device[name] = host, self.cuda.mem_alloc(host.nbytes)
            self.context.set_tensor_address(name, int(self._device[name]))

    # ---- introspection ----------------------------------------------------------------
    def _require(self):
        if self.engine is None:
            raise ModelLoadError("no engine loaded; call load() first")
        return self.engine

    def inputs(self) -> list[TensorInfo]:
        self._require()
        return [self._info(n) for n in self._names() if self._is_input(n)]

    def outputs(self) -> list[TensorInfo]:
        self._require()
        return [self._info(n) for n in self._names() if not self._is_input(n)]

    @_in_context
    def describe_layers(self) -> list[LayerInfo]:
        inspector = self._require().create_engine_inspector()
        inspector.execution_context = self.context
        info = inspector.get_engine_information(self.trt.LayerInformationFormat.JSON)
        return parse_layer_information(info, self.onnx_nodes, self.precision)

    def execution_target(self) -> tuple[str | None, str]:
        return None, "gpu" if self.engine_dla_core is None else "dla"

    # ---- execution --------------------------------------------------------------------
    def _execute(self, feeds: Mapping[str, np.ndarray], synchronous: bool = False) -> float:
        """Copy in, execute, copy out; ``synchronous`` uses execute_v2 (for the profiler)."""
        checked = self.check_feeds(feeds)
        start_s = self.clock.now_s()
        for name, value in checked.items():
            np.copyto(self._host[name], value)
            self.cuda.memcpy_htod_async(self._device[name], self._host[name], self.stream)
        if synchronous:
            self.stream.synchronize()
            ok = self.context.execute_v2([int(self._device[n]) for n in self._names()])
        else:
            ok = self.context.execute_async_v3(self.stream.handle)
        if not ok:
            raise BackendError("TensorRT execution failed: " + "; ".join(self.logger.messages[-3:]))
        for t in self.outputs():
            self.cuda.memcpy_dtoh_async(self._host[t.name], self._device[t.name], self.stream)
        self.stream.synchronize()
        return self.clock.now_s() - start_s

    @_in_context
    def run(self, feeds: Mapping[str, np.ndarray]) -> RunResult:
        latency_s = self._execute(feeds)
        outputs = {t.name: self._host[t.name].copy() for t in self.outputs()}
        return RunResult(outputs, latency_s, True,
                         nonfinite_outputs(outputs) if self.check_finite else ())

    @_in_context
    def profile(self, feeds: Mapping[str, np.ndarray], runs: int = 1) -> LayerProfile:
        runs = max(1, runs)
        sink = LayerTimeAccumulator()
        self.context.profiler = _profiler(self.trt, sink)
        try:
            total_s = sum(self._execute(feeds, synchronous=True) for _ in range(runs)) / runs
        finally:
            self.context.profiler = None
        return LayerProfile(sink.mean_times_s(runs), total_s, self.describe_layers(), runs, self.kind)

    def close(self) -> None:
        """Free the buffers and drop the engine with the context current (on whatever thread
        closes), then release the retained context."""
        if self._cuda_context is None:
            return
        with self.cuda_context():
            for allocation in self._device.values():
                allocation.free()
            self.context = self.engine = self.stream = None
            self._host, self._device = {}, {}
        self._cuda_context.detach()
        self._cuda_context = None


def _read_onnx(model: Any):
    import onnx
    try:
        if isinstance(model, onnx.ModelProto):
            return model
        return onnx.load_from_string(model if isinstance(model, bytes) else Path(model).read_bytes())
    except Exception as e:  # OSError, protobuf DecodeError
        raise ModelLoadError(f"cannot read ONNX model {model!r}: {e}") from e


def _sidecar(engine_path: Path) -> Path:
    return engine_path.with_suffix(".json")


def _capturing_logger(trt, print_up_to: int = 2):
    """A TensorRT logger that keeps recent messages (to explain a failed deserialize) and
    prints errors and warnings (severity <= WARNING)."""
    class _Logger(trt.ILogger):
        def __init__(self) -> None:
            trt.ILogger.__init__(self)
            self.messages: list[str] = []

        def log(self, severity, msg: str) -> None:
            self.messages.append(msg)
            del self.messages[:-50]
            if int(severity) <= print_up_to:
                print(f"[TensorRT] {msg}", file=sys.stderr)

    return _Logger()


def _profiler(trt, sink: LayerTimeAccumulator):
    class _Profiler(trt.IProfiler):
        def __init__(self) -> None:
            trt.IProfiler.__init__(self)

        def report_layer_time(self, layer_name: str, ms: float) -> None:
            sink.add(layer_name, ms)

    return _Profiler()


def _cache_calibrator(trt, path: Path):
    """A calibrator that only replays an existing calibration cache (no calibration data)."""
    class _CacheCalibrator(trt.IInt8EntropyCalibrator2):
        def __init__(self) -> None:
            trt.IInt8EntropyCalibrator2.__init__(self)

        def get_batch_size(self) -> int:
            return 1

        def get_batch(self, names):
            return None

        def read_calibration_cache(self):
            return path.read_bytes()

        def write_calibration_cache(self, cache) -> None:
            path.write_bytes(bytes(cache))

    return _CacheCalibrator()
