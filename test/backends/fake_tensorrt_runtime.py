"""A stand-in for the ``tensorrt`` and ``pycuda`` modules that follows the parts of their
documented Python APIs the TensorRT backend uses, so the backend's own control flow (engine
build and cache, sidecar checks, deserialize errors, I/O by tensor name, IProfiler callbacks,
inspector mapping) runs on a machine without a GPU.

It is NOT TensorRT: a "serialized engine" is a tagged header plus the ONNX bytes, execution is
ONNX Runtime, "device memory" is host memory. The inspector JSON and the deserialize error
messages follow the documented / commonly reported formats (see fixtures/README.md); nothing
here was recorded on hardware. The real path is checked by scripts/trt_smoke.py on a GPU.

CUDA contexts are bound to threads as in the CUDA driver API that pycuda wraps: each thread has
its own stack of current contexts; ``import pycuda.autoinit`` creates a context and makes it
current *on the importing thread only*; every pycuda call that needs a context raises pycuda's
``LogicError ... invalid device context`` on a thread where none is current; memory belongs to
the context it was allocated in; TensorRT (the CUDA runtime API) uses the thread's current
context, or the device's primary context where none is current, and an engine runs only in the
context it was deserialized in, with buffers of that context (TensorRT logs the error and
``execute`` returns False, as the real one does).
"""

from __future__ import annotations

import importlib.abc
import importlib.machinery
import json
import sys
import threading
import types
from dataclasses import dataclass, field

import numpy as np
import onnx
import onnxruntime as ort

MAGIC = b"FAKETRT\n"
# Serialization tags per fake version, as TensorRT logs them ("Current Version: N").
_SERIAL = {"8.6.1": 232, "10.3.0": 237, "10.4.0": 239}


@dataclass
class FakeState:
    version: str
    device: str
    compute_capability: tuple[int, int]
    builds: int = 0
    last_config: dict = field(default_factory=dict)
    memory: dict = field(default_factory=dict)
    owner: dict = field(default_factory=dict)  # device pointer -> the context it was allocated in
    threads: threading.local = field(default_factory=threading.local)
    contexts: list = field(default_factory=list)  # every context made, primary first when retained
    primary_retains: int = 0
    deserialized_dla_cores: list = field(default_factory=list)  # the runtime's DLA_core at each deserialize

    def stack(self) -> list:
        if not hasattr(self.threads, "stack"):
            self.threads.stack = []
        return self.threads.stack

    def current(self):
        stack = self.stack()
        return stack[-1] if stack else None


def install(monkeypatch, version: str = "10.3.0", device: str = "Orin (fake)",
            compute_capability: tuple[int, int] = (8, 7)) -> FakeState:
    state = FakeState(version, device, compute_capability)
    trt = types.ModuleType("tensorrt")
    trt.__version__ = version

    class ILogger:
        def __init__(self):
            pass

    class _Enum:
        def __init__(self, **members):
            self.__dict__.update(members)

    trt.ILogger = ILogger
    trt.IProfiler = type("IProfiler", (), {"__init__": lambda self: None})
    trt.IInt8EntropyCalibrator2 = type("IInt8EntropyCalibrator2", (), {"__init__": lambda self: None})
    trt.NetworkDefinitionCreationFlag = _Enum(EXPLICIT_BATCH=0)
    trt.MemoryPoolType = _Enum(WORKSPACE="workspace")
    trt.ProfilingVerbosity = _Enum(DETAILED="detailed", LAYER_NAMES_ONLY="names")
    trt.BuilderFlag = _Enum(FP16="fp16", INT8="int8", GPU_FALLBACK="gpu_fallback")
    trt.DeviceType = _Enum(DLA="dla", GPU="gpu")
    trt.TensorIOMode = _Enum(INPUT="input", OUTPUT="output")
    trt.LayerInformationFormat = _Enum(JSON="json", ONELINE="oneline")
    trt.nptype = lambda dtype: dtype

    class Network:
        onnx_bytes = b""

    class OnnxParser:
        def __init__(self, network, logger):
            self.network, self.errors = network, []

        def parse(self, data):
            try:
                onnx.load_from_string(data)
            except Exception as e:  # noqa: BLE001 - mirrors the parser's error list
                self.errors.append(f"ModelImporter: failed to parse ONNX ({e})")
                return False
            self.network.onnx_bytes = data
            return True

        @property
        def num_errors(self):
            return len(self.errors)

        def get_error(self, i):
            return self.errors[i]

    class Config:
        def __init__(self):
            self.flags, self.pools = set(), {}

        def set_memory_pool_limit(self, pool, size):
            self.pools[pool] = size

        def set_flag(self, flag):
            self.flags.add(flag)

    class Builder:
        def __init__(self, logger):
            self.logger = logger

        def create_network(self, flags=0):
            return Network()

        def create_builder_config(self):
            return Config()

        def build_serialized_network(self, network, config):
            state.builds += 1
            state.last_config = dict(vars(config))
            header = json.dumps({"version": trt.__version__}).encode()
            return MAGIC + header + b"\n" + network.onnx_bytes

    class Runtime:
        def __init__(self, logger):
            self.logger = logger
            self.DLA_core = -1  # IRuntime's default: none set

        def deserialize_cuda_engine(self, data):
            state.deserialized_dla_cores.append(self.DLA_core)
            if not data.startswith(MAGIC):
                self.logger.log(1, "1: [stdArchiveReader.cpp::StdArchiveReader::54] Error Code 1: "
                                   "Serialization (Serialization assertion magicTagRead == "
                                   "kMAGIC_TAG failed.Magic tag does not match)")
                self.logger.log(1, "4: [runtime.cpp::deserializeCudaEngine::66] Error Code 4: "
                                   "Internal Error (Engine deserialization failed.)")
                return None
            header, _, onnx_bytes = data[len(MAGIC):].partition(b"\n")
            built = json.loads(header)["version"]
            if built != trt.__version__:
                self.logger.log(1, "1: [stdArchiveReader.cpp::StdArchiveReader::42] Error Code 1: "
                                   "Serialization (Serialization assertion stdVersionRead == "
                                   "kSERIALIZATION_VERSION failed.Version tag does not match. Note: "
                                   f"Current Version: {_SERIAL[trt.__version__]}, Serialized Engine "
                                   f"Version: {_SERIAL[built]})")
                return None
            return Engine(onnx_bytes, self.logger)

    def runtime_context():
        """The CUDA runtime API's context on this thread: the current one, else the primary."""
        return state.current() or primary()

    class Engine:
        def __init__(self, onnx_bytes, logger):
            self.cuda_context, self.logger = runtime_context(), logger
            self.model = onnx.load_from_string(onnx_bytes)
            self.session = ort.InferenceSession(onnx_bytes, providers=["CPUExecutionProvider"])
            dtypes = {"tensor(float)": np.float32, "tensor(int64)": np.int64}
            self.io = [(a.name, "input", tuple(a.shape), dtypes[a.type]) for a in self.session.get_inputs()]
            self.io += [(a.name, "output", tuple(a.shape), dtypes[a.type]) for a in self.session.get_outputs()]
            self.layers = _fuse(self.model)

        num_io_tensors = property(lambda self: len(self.io))

        def _io(self, name):
            return next(t for t in self.io if t[0] == name)

        def get_tensor_name(self, i):
            return self.io[i][0]

        def get_tensor_mode(self, name):
            return self._io(name)[1]

        def get_tensor_shape(self, name):
            return self._io(name)[2]

        def get_tensor_dtype(self, name):
            return self._io(name)[3]

        def create_execution_context(self):
            return Context(self)

        def create_engine_inspector(self):
            return Inspector(self)

    class Inspector:
        def __init__(self, engine):
            self.engine, self.execution_context = engine, None

        def get_engine_information(self, fmt):
            return json.dumps({"Layers": self.engine.layers,
                               "Bindings": [t[0] for t in self.engine.io]})

    class Context:
        def __init__(self, engine):
            self.engine, self.addresses, self.profiler = engine, {}, None

        def set_tensor_address(self, name, ptr):
            self.addresses[name] = ptr

        def _run(self, addresses):
            here = runtime_context()
            foreign = [n for n, ptr in addresses.items() if state.owner.get(ptr) is not here]
            if here is not self.engine.cuda_context or foreign:
                self.engine.logger.log(1, "1: [executionContext.cpp::enqueueInternal::795] Error Code 1: Cuda "
                                          "Runtime (invalid resource handle)")
                return False
            feeds = {}
            for name, mode, shape, dtype in self.engine.io:
                if mode == "input":
                    feeds[name] = state.memory[addresses[name]].view(dtype).reshape(shape).copy()
            for (name, *_), value in zip([t for t in self.engine.io if t[1] == "output"],
                                         self.engine.session.run(None, feeds)):
                state.memory[addresses[name]][:] = np.ascontiguousarray(value).view(np.uint8).ravel()
            return True

        def execute_async_v3(self, stream_handle):
            return self._run(self.addresses)

        def execute_v2(self, bindings):
            ok = self._run({t[0]: ptr for t, ptr in zip(self.engine.io, bindings)})
            if self.profiler is not None:  # once per layer per synchronous execution
                for i, layer in enumerate(self.engine.layers):
                    self.profiler.report_layer_time(layer["Name"], 0.01 * (i + 1))
            return ok

    trt.Builder, trt.Runtime, trt.OnnxParser = Builder, Runtime, OnnxParser

    # ---- pycuda ------------------------------------------------------------------------
    pycuda = types.ModuleType("pycuda")
    driver = types.ModuleType("pycuda.driver")
    pycuda.__path__ = []  # a package, so "import pycuda.autoinit" goes through the finder below

    class LogicError(RuntimeError):
        """pycuda._driver.LogicError"""

    def need_context(call: str):
        ctx = state.current()
        if ctx is None:
            raise LogicError(f"{call} failed: invalid device context - no currently active context?")
        return ctx

    class CudaContext:
        def __init__(self, is_primary=False):
            self.is_primary, self.detached = is_primary, False
            state.contexts.append(self)

        def push(self):
            if self.detached:
                raise LogicError("cuCtxPushCurrent failed: invalid device context")
            state.stack().append(self)

        @staticmethod
        def pop():
            need_context("cuCtxPopCurrent")
            state.stack().pop()

        def detach(self):
            if self in state.stack():
                raise LogicError("detaching a context that is current on this thread (pop it first)")
            if self.is_primary:  # reference counted: reset (and made anew by the next retain) at zero
                state.primary_retains -= 1
                if state.primary_retains:
                    return
                _primary.clear()
            self.detached = True

        @staticmethod
        def get_current():
            return state.current()

    _primary: list = []

    def primary():
        if not _primary:
            _primary.append(CudaContext(is_primary=True))
        return _primary[0]

    class Device:
        def __init__(self, index):
            pass

        def name(self):
            return state.device

        def compute_capability(self):
            return state.compute_capability

        def make_context(self):
            ctx = CudaContext()
            ctx.push()
            return ctx

        def retain_primary_context(self):
            state.primary_retains += 1
            return primary()  # not made current (as the driver's cuDevicePrimaryCtxRetain)

    class Allocation:
        def __init__(self, nbytes):
            ctx = need_context("cuMemAlloc")
            self.ptr = 0x1000 + 0x100 * len(state.memory)
            state.memory[self.ptr] = np.zeros(nbytes, np.uint8)
            state.owner[self.ptr] = ctx

        def __int__(self):
            return self.ptr

        def free(self):
            need_context("cuMemFree")
            state.owner.pop(self.ptr, None)

    class Stream:
        def __init__(self):
            self.context = need_context("cuStreamCreate")
            self.handle = id(self)

        def synchronize(self):
            if need_context("cuStreamSynchronize") is not self.context:
                raise LogicError("cuStreamSynchronize failed: invalid resource handle")

    def pagelocked_empty(shape, dtype):
        need_context("cuMemHostAlloc")
        return np.empty(shape, dtype)

    def check_same(call, dev, stream):
        ctx = need_context(call)
        if state.owner.get(int(dev)) is not ctx or (stream is not None and stream.context is not ctx):
            raise LogicError(f"{call} failed: invalid argument (memory or stream of another context)")

    def htod(dev, host, stream=None):
        check_same("cuMemcpyHtoDAsync", dev, stream)
        state.memory[int(dev)][:] = np.ascontiguousarray(host).view(np.uint8).ravel()

    def dtoh(host, dev, stream=None):
        check_same("cuMemcpyDtoHAsync", dev, stream)
        host.reshape(-1).view(np.uint8)[:] = state.memory[int(dev)]

    driver.Device, driver.Stream, driver.Context, driver.LogicError = Device, Stream, CudaContext, LogicError
    driver.init = lambda flags=0: None
    driver.mem_alloc, driver.pagelocked_empty = Allocation, pagelocked_empty
    driver.memcpy_htod_async, driver.memcpy_dtoh_async = htod, dtoh
    pycuda.driver = driver

    class AutoinitLoader(importlib.abc.Loader):
        """``import pycuda.autoinit``: a new context made current on the importing thread only."""

        def create_module(self, spec):
            return None

        def exec_module(self, module):
            module.device = Device(0)
            module.context = module.device.make_context()

    class AutoinitFinder(importlib.abc.MetaPathFinder):
        def find_spec(self, name, path=None, target=None):
            if name == "pycuda.autoinit":
                return importlib.machinery.ModuleSpec(name, AutoinitLoader())
            return None

    monkeypatch.setattr(sys, "meta_path", [AutoinitFinder(), *sys.meta_path])
    monkeypatch.delitem(sys.modules, "pycuda.autoinit", raising=False)
    for name, module in (("tensorrt", trt), ("pycuda", pycuda), ("pycuda.driver", driver)):
        monkeypatch.setitem(sys.modules, name, module)
    return state


def _fuse(model: onnx.ModelProto) -> list[dict]:
    """Inspector layers as TensorRT would fuse a small CNN: a reformat for the input, each
    Conv with the Relu that follows it ("conv0 + relu0", listed in Metadata), pooling and the
    classifier tail as a Myelin region named by its first and last node."""
    nodes, layers, i = list(model.graph.node), [], 0
    layers.append({"Name": f"Reformatting CopyNode for Input Tensor 0 to {nodes[0].name}",
                   "LayerType": "Reformat", "Metadata": ""})
    while i < len(nodes):
        node = nodes[i]
        if node.op_type == "Conv" and i + 1 < len(nodes) and nodes[i + 1].op_type == "Relu":
            names = [node.name, nodes[i + 1].name]
            layers.append({"Name": " + ".join(names), "LayerType": "CaskConvolution",
                           "TacticName": "sm87_xmma_fprop_implicit_gemm",
                           "Metadata": "\x1e".join(f"[ONNX Layer: {n}]" for n in names)})
            i += 2
        elif node.op_type == "GlobalAveragePool":
            layers.append({"Name": f"{{ForeignNode[{node.name}...{nodes[-1].name}]}}",
                           "LayerType": "Myelin", "Metadata": ""})
            break
        else:
            layers.append({"Name": node.name, "LayerType": node.op_type, "Metadata": ""})
            i += 1
    return layers
