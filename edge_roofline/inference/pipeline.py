"""The inference pipeline behind the inference node: frames in, outputs and per-frame stats out,
and a per-layer roofline report from a profiled run every N frames or T seconds.

- Queue: bounded, drop-oldest under overload (a robot wants the newest frame), counted.
- Bad input (encoding, size, empty), NaN outputs and backend errors are counted and reported;
  the pipeline keeps serving.
- Model switch: the new model is loaded beside the old one and swapped in only once it works;
  a failed switch keeps the old model serving and reports why.
ROS-free: the node feeds it ``Frame`` objects and publishes what ``process_next`` returns.
"""

from __future__ import annotations

import collections
import threading
from dataclasses import dataclass, field, replace
from typing import Any, Callable

import numpy as np

from edge_roofline.backends import create_backend
from edge_roofline.backends.base import BackendError, InferenceBackend
from edge_roofline.clock import Clock
from edge_roofline.inference.preprocess import ImageError, PreprocessConfig, image_to_array, preprocess
from edge_roofline.models.source import load_model_source
from edge_roofline.roofline.ceilings import Ceilings
from edge_roofline.roofline.costs import CostModelError, ModelCost, analyze_model
from edge_roofline.roofline.model import RooflineAnalysis


@dataclass(frozen=True)
class InferenceConfig:
    model: str  # path to .onnx (or engine for tensorrt), or zoo:NAME
    backend: str = "ort"
    precision: str = "fp32"
    input_name: str = ""  # default: the model's only image input
    preprocess: PreprocessConfig | None = None  # None: size from the model's input shape
    queue_depth: int = 2
    profile_every_frames: int = 300  # 0 disables frame-count triggering
    profile_every_s: float = 10.0  # 0 disables time triggering
    profile_runs: int = 1
    # A profiled run costs extra (trace writing, parsing): the next one waits until that extra
    # is at most this fraction of the inference time served since the last one.
    profile_budget_fraction: float = 0.005
    backend_options: dict = field(default_factory=dict)

    def validate(self) -> None:
        problems = []
        if not self.model:
            problems.append("model is empty: give a .onnx path, an engine path or zoo:NAME")
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


@dataclass
class Counters:
    received: int = 0
    dropped: int = 0
    lost_upstream: int = 0  # never reached us: gaps in the input stamps (the node counts them)
    lost_transport: int = 0  # of those, what DDS reports lost in transport
    rejected: int = 0
    nan_outputs: int = 0
    errors: int = 0
    processed: int = 0
    last_error: str = ""


@dataclass(frozen=True)
class FrameResult:
    frame: Frame
    frame_index: int
    outputs: dict[str, np.ndarray]  # empty when the frame failed
    computed: bool
    latency_s: float
    preprocess_s: float
    postprocess_s: float
    queue_delay_s: float
    end_to_end_s: float
    counters: Counters
    model_id: str
    backend: str
    simulated: bool
    error: str = ""
    report: RooflineAnalysis | None = None


class LoadedModel:
    """A backend with its model loaded, its cost model, and the input binding."""

    def __init__(self, config: InferenceConfig, backend_factory: Callable[..., InferenceBackend]) -> None:
        config.validate()
        source = load_model_source(config.model)
        self.backend = backend_factory(config.backend, **config.backend_options)
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
            self.cost: ModelCost = analyze_model(getattr(self.backend, "model", None) or source,
                                                 precision=config.precision)
        except Exception:
            self.backend.close()
            raise
        self.config = config
        self.preprocess = config.preprocess or self._preprocess_from_shape()

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
        if frame.tensors is not None:
            return frame.tensors
        array, order = image_to_array(frame.encoding, frame.width, frame.height, frame.step, frame.data,
                                      frame.is_bigendian)
        return {self.input.name: preprocess(array, order, self.preprocess)}

    def close(self) -> None:
        self.backend.close()


class InferencePipeline:
    def __init__(self, config: InferenceConfig, ceilings: Callable[[], Ceilings], *,
                 join_profile: Callable[[ModelCost, Any, Ceilings], RooflineAnalysis] | None = None,
                 backend_factory: Callable[..., InferenceBackend] = create_backend,
                 clock: Clock | None = None) -> None:
        self.clock = clock or Clock()
        self.ceilings = ceilings
        if join_profile is None:
            from edge_roofline.inference.profile_join import join_profile
        self.join_profile = join_profile
        self.backend_factory = backend_factory
        self.loaded = LoadedModel(config, backend_factory)
        self.counters = Counters()
        self._queue: collections.deque[Frame] = collections.deque()
        self._cond = threading.Condition()
        self._frame_index = 0
        self._frames_since_profile = 0
        self._latency_since_profile_s = 0.0
        self._profile_extra_s = 0.0  # what the last profiled run cost beyond a normal run
        self._last_profile_s = self.clock.now_s()
        self._profile_requested = True  # a first report soon after start
        self.last_report: RooflineAnalysis | None = None

    @property
    def config(self) -> InferenceConfig:
        return self.loaded.config

    # ---- input --------------------------------------------------------------------
    def submit(self, frame: Frame) -> None:
        with self._cond:
            self.counters.received += 1
            self._queue.append(frame)
            while len(self._queue) > self.config.queue_depth:
                self._queue.popleft()
                self.counters.dropped += 1
            self._cond.notify()

    def reject(self, reason: str) -> None:
        """An input that arrived but cannot become a frame (an undecodable tensor message): counted
        as received and rejected, with the reason, like a bad image."""
        with self._cond:
            self.counters.received += 1
            self.counters.rejected += 1
            self.counters.last_error = reason

    def wake(self) -> None:
        with self._cond:
            self._cond.notify_all()

    # ---- model switch -------------------------------------------------------------
    def switch(self, config: InferenceConfig) -> None:
        """Load ``config`` beside the current model and swap; on failure the current model
        keeps serving and the error is raised for the caller to report."""
        new = LoadedModel(config, self.backend_factory)
        with self._cond:
            old, self.loaded = self.loaded, new
            self._profile_requested = True
        old.close()

    def close(self) -> None:
        self.loaded.close()

    # ---- processing ---------------------------------------------------------------
    def _take(self, timeout_s: float) -> Frame | None:
        with self._cond:
            if not self._queue:
                self._cond.wait(timeout_s)
            return self._queue.popleft() if self._queue else None

    def _profile_due(self, now_s: float) -> bool:
        cfg = self.config
        if self._profile_requested:
            return True
        triggered = ((cfg.profile_every_frames and self._frames_since_profile >= cfg.profile_every_frames)
                     or (cfg.profile_every_s and now_s - self._last_profile_s >= cfg.profile_every_s))
        within_budget = self._profile_extra_s <= cfg.profile_budget_fraction * self._latency_since_profile_s
        return bool(triggered and within_budget)

    def process_next(self, timeout_s: float = 0.1) -> FrameResult | None:
        frame = self._take(timeout_s)
        if frame is None:
            return None
        loaded = self.loaded
        self._frame_index += 1
        start_s = self.clock.now_s()
        error, outputs, computed, latency_s, report = "", {}, False, 0.0, None
        pre_s = post_s = 0.0
        try:
            feeds = loaded.feeds(frame)
            pre_s = self.clock.now_s() - start_s
            feeds = loaded.backend.check_feeds(feeds)
            result = loaded.backend.run(feeds)
            outputs, computed, latency_s = result.outputs, result.computed, result.latency_s
            post_start_s = self.clock.now_s()
            if result.nonfinite_outputs:
                self.counters.nan_outputs += 1
                error = f"output(s) {', '.join(result.nonfinite_outputs)} hold NaN/Inf (frame {self._frame_index})"
            self.counters.processed += 1
            self._frames_since_profile += 1
            self._latency_since_profile_s += latency_s
            if self._profile_due(post_start_s):
                report = self._profile(loaded, feeds, latency_s)
            post_s = self.clock.now_s() - post_start_s
        except ImageError as exc:
            self.counters.rejected += 1
            error = f"frame {self._frame_index} rejected: {exc}"
        except (BackendError, ValueError) as exc:
            self.counters.errors += 1
            error = f"frame {self._frame_index}: {exc}"
        if error:
            self.counters.last_error = error
        end_s = self.clock.now_s()
        return FrameResult(
            frame=frame, frame_index=self._frame_index, outputs=outputs, computed=computed,
            latency_s=latency_s, preprocess_s=pre_s, postprocess_s=post_s,
            queue_delay_s=max(0.0, start_s - frame.arrival_s), end_to_end_s=max(0.0, end_s - frame.arrival_s),
            counters=replace(self.counters), model_id=loaded.config.model, backend=loaded.backend.kind,
            simulated=loaded.backend.kind == "virtual", error=error, report=report)

    def _profile(self, loaded: LoadedModel, feeds: dict[str, np.ndarray], run_s: float) -> RooflineAnalysis | None:
        self._profile_requested = False
        self._frames_since_profile = 0
        self._latency_since_profile_s = 0.0
        start_s = self._last_profile_s = self.clock.now_s()
        try:
            profile = loaded.backend.profile(feeds, runs=loaded.config.profile_runs)
            self._profile_extra_s = max(0.0, self.clock.now_s() - start_s - run_s)
            self.last_report = self.join_profile(loaded.cost, profile, self.ceilings())
        except (BackendError, CostModelError, ValueError) as exc:
            self.counters.errors += 1
            self.counters.last_error = f"profiling failed: {exc}"
            return None
        return self.last_report
