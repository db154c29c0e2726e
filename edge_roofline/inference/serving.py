"""What the pipeline serves: its configuration, one input frame, and a model ready to serve (a
backend with the model loaded, its cost model, the input binding, the preprocessing and the
roofs its reports are drawn against); and the one-line form of anything a backend raises."""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any, Callable

import numpy as np

from edge_roofline.backends import BACKENDS
from edge_roofline.backends.base import BackendError, InferenceBackend
from edge_roofline.backends.tensorrt_backend import calibration_problem
from edge_roofline.inference.preprocess import PreprocessConfig, image_to_array, preprocess
from edge_roofline.models.source import is_engine, load_model, load_model_source
from edge_roofline.roofline.ceilings import Ceilings
from edge_roofline.roofline.costs import ModelCost, analyze_model


def is_tensorrt(backend: str) -> bool:
    """'tensorrt' or its alias 'trt' (create_backend's names)."""
    return BACKENDS.get(backend) == BACKENDS["tensorrt"]


@dataclass(frozen=True)
class InferenceConfig:
    model: str  # path to .onnx (or engine for tensorrt), or zoo:NAME
    backend: str = "ort"
    onnx_model: str = ""  # with an engine as model: the ONNX model it was built from (read only then)
    precision: str = "fp32"
    input_name: str = ""  # default: the model's only image input
    preprocess: PreprocessConfig | None = None  # None: size from the model's input shape
    queue_depth: int = 2
    profile_every_frames: int = 300  # 0 disables frame-count triggering
    profile_every_s: float = 10.0  # 0 disables time triggering
    profile_runs: int = 1
    # The most of the worker's wall-clock time profiling may take (inference/schedule.py).
    profile_budget_fraction: float = 0.02
    backend_options: dict = field(default_factory=dict)

    def validate(self) -> None:
        problems = []
        if not self.model:
            problems.append("model is empty: give a .onnx path, an engine path or zoo:NAME")
        elif is_engine(self.model) and not is_tensorrt(self.backend):
            problems.append(f"model {self.model} is a TensorRT engine: set -p backend:=tensorrt, or give the ONNX "
                            "model it was built from as model")
        elif is_engine(self.model) and not self.onnx_model:
            # The engine holds TensorRT's layers, not the ONNX graph the roofline is drawn from.
            problems.append(f"model {self.model} is a TensorRT engine, with no ONNX graph for the cost model and the "
                            "layer mapping: set -p onnx_model:=FILE (the ONNX model it was built from)")
        if self.queue_depth < 1:
            problems.append(f"queue_depth must be >= 1, got {self.queue_depth}")
        if self.profile_every_frames < 0 or self.profile_every_s < 0:
            problems.append("profile_every_frames and profile_every_s must be >= 0")
        if not 0 < self.profile_budget_fraction <= 1:
            problems.append(f"profile_budget_fraction must be in (0, 1], got {self.profile_budget_fraction}")
        if self.profile_runs < 1:
            problems.append(f"profile_runs must be >= 1, got {self.profile_runs}")
        if self.precision not in ("fp32", "fp16", "int8", "mixed"):
            problems.append(f"precision must be fp32, fp16, int8 or mixed, got {self.precision!r}")
        elif self.precision == "mixed" and (self.backend == "virtual" or is_tensorrt(self.backend)):
            # mixed keeps every tensor's own type: the board has no one rate to time that at, and TensorRT
            # builds from builder flags (fp16 / int8 layer selection), not from the model's own types.
            how = ("times the whole model at one precision" if self.backend == "virtual"
                   else "builds at fp32, fp16 or int8 (its builder flags)")
            problems.append(f"backend {self.backend} {how}, not mixed: set precision to fp32, fp16 or int8")
        elif is_tensorrt(self.backend) and not is_engine(self.model):  # an engine is built already
            # The backend's own rule, here before TensorRT is imported, in the node's parameters.
            problems += filter(None, [calibration_problem(self.precision, self.backend_options.get("calibration_cache"),
                                                          cache="-p calibration_cache:=FILE",
                                                          fp16="-p precision:=fp16")])
        if self.preprocess is not None:
            try:
                self.preprocess.validate()
            except ValueError as exc:
                problems.append(str(exc))
        if problems:
            raise ValueError("invalid inference parameters: " + "; ".join(problems))


@dataclass(frozen=True)
class Frame:
    """One input: an image (sensor_msgs/Image fields) or ready tensors."""

    arrival_s: float
    stamp: Any = None  # passed through to the outputs (a ROS time message in the node)
    frame_id: str = ""
    encoding: str = ""
    width: int = 0
    height: int = 0
    step: int = 0
    data: bytes | memoryview = b""
    is_bigendian: bool = False
    tensors: dict[str, np.ndarray] | None = None
    problem: str = ""  # why an input that arrived cannot feed the model (an undecodable message)


def describe(exc: BaseException) -> str:
    """One line for an error from a backend: our own errors say what they are; anything else
    (ONNX Runtime, pycuda, a bug) keeps its type name."""
    text = " ".join(str(exc).split())
    return text if isinstance(exc, (BackendError, ValueError)) and text else f"{type(exc).__name__}: {text}"


class LoadedModel:
    """A backend with its model loaded, its cost model, the input binding, and the roofs its
    reports are drawn against."""

    def __init__(self, config: InferenceConfig, backend_factory: Callable[..., InferenceBackend],
                 ceilings: Callable[[], Ceilings] | None = None) -> None:
        config.validate()
        source = load_model_source(config.model)
        # An engine's roofline is drawn from the ONNX graph it was built from, also its layers' mapping.
        graph = load_model(config.onnx_model) if is_engine(config.model) else None
        options = config.backend_options | ({"mapping_onnx": graph} if graph is not None else {})
        self.backend = backend_factory(config.backend, **options)
        try:
            self.backend.load(source)
            inputs = self.backend.inputs()
            if config.input_name:
                names = [t.name for t in inputs]
                if config.input_name not in names:
                    raise ValueError(f"input_name {config.input_name!r} is not an input of {config.model}; "
                                     f"its inputs are {names}")
                self.input = next(t for t in inputs if t.name == config.input_name)
            elif len(inputs) == 1:
                self.input = inputs[0]
            else:
                raise ValueError(f"{config.model} has {len(inputs)} inputs {[t.name for t in inputs]}: "
                                 f"set input_name to the image input (the others need a tensor topic)")
            self.cost: ModelCost = analyze_model(graph if graph is not None else
                                                 getattr(self.backend, "model", None) or source,
                                                 precision=config.precision)
            # The profiling machinery's one-time set-up (ONNX Runtime: the optimized graph and
            # its kernel grouping) happens here, on the loading thread, not in the first report.
            self.backend.describe_layers()
            self.config = config
            self.preprocess = config.preprocess or self._preprocess_from_shape()
        except Exception:
            self.backend.close()
            raise
        self.ceilings = ceilings
        self.roofs_note = ""  # set by the node: how the roofs differ from where the model runs

    def _preprocess_from_shape(self) -> PreprocessConfig:
        shape = self.input.shape
        if len(shape) != 4:
            raise ValueError(f"input {self.input.name!r} has shape {list(shape)}; an image input must be "
                             f"4-D (NCHW or NHWC) — set the preprocessing parameters or use a tensor topic")
        nhwc = (isinstance(shape[3], int) and shape[3] in (1, 3)
                and not (isinstance(shape[1], int) and shape[1] in (1, 3)))
        c, h, w = (shape[3], shape[1], shape[2]) if nhwc else (shape[1], shape[2], shape[3])
        if not all(isinstance(d, int) and d > 0 for d in (h, w)):
            raise ValueError(f"input {self.input.name!r} has dynamic size {list(shape)}; set width/height")
        return PreprocessConfig(width=w, height=h, color_order="mono" if c == 1 else "rgb",
                                mean=(0.0,) * (1 if c == 1 else 3), std=(1.0,) * (1 if c == 1 else 3),
                                layout="nhwc" if nhwc else "nchw", dtype=self.input.dtype)

    def feeds(self, frame: Frame) -> dict[str, np.ndarray]:
        if frame.problem:  # rejected where bad images are: counted, logged and in a stats message
            raise ValueError(frame.problem)
        if frame.tensors is not None:
            return self.backend.check_feeds(frame.tensors)
        array, order = image_to_array(frame.encoding, frame.width, frame.height, frame.step, frame.data,
                                      frame.is_bigendian)
        return self.backend.check_feeds({self.input.name: preprocess(array, order, self.preprocess)})

    def close(self) -> None:
        self.backend.close()
