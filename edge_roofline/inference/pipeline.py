"""The inference pipeline behind the inference node: frames in, outputs and per-frame stats out,
and a per-layer roofline report from a profiled run (inference/schedule.py says when).

- Queue: bounded, drop-oldest under overload (a robot wants the newest frame), counted.
- Every frame ends in one counter: processed, dropped, rejected (input that cannot feed the
  model) or failed (the backend raised); NaN outputs and profiling failures are counted too.
- The backend boundary: whatever a backend call raises (ONNX Runtime's own exception types
  are not BackendError) is caught here, counted and reported; the pipeline keeps serving.
- Model switch: the new model is loaded beside the old one by the caller (``prepare``), then
  handed to the worker (``hand_over``), which swaps between frames and closes the old model on
  its own thread: a model is never closed while a frame or a profile is using it.
ROS-free: the node feeds it ``Frame`` objects and publishes what ``process_next`` returns.
"""

from __future__ import annotations

import collections
import threading
from dataclasses import dataclass, replace
from typing import Any, Callable

import numpy as np

from edge_roofline.backends import create_backend
from edge_roofline.backends.base import InferenceBackend, InputShapeError, TensorNameError
from edge_roofline.clock import Clock
from edge_roofline.inference.serving import Frame, InferenceConfig, LoadedModel, describe
from edge_roofline.inference.preprocess import ImageError
from edge_roofline.inference.schedule import MODEL_SWITCH, POINT_CHANGE, START, PointWatch, ProfileSchedule
from edge_roofline.roofline.ceilings import Ceilings
from edge_roofline.roofline.costs import ModelCost
from edge_roofline.roofline.model import RooflineAnalysis


@dataclass
class Counters:
    """received = processed + dropped + rejected + failed + (frames queued or in hand)."""

    received: int = 0
    dropped: int = 0
    lost_upstream: int = 0  # never reached us: gaps in the input stamps (the node counts them)
    lost_transport: int = 0  # of those, what DDS reports lost in transport
    rejected: int = 0  # input that cannot feed the model (image, tensor names, shapes)
    failed: int = 0  # frames the backend raised on
    nan_outputs: int = 0
    errors: int = 0  # failed frames, failed profiles and worker deaths
    processed: int = 0
    worker_restarts: int = 0
    last_error: str = ""


@dataclass(frozen=True)
class ProfileReport:
    analysis: RooflineAnalysis
    model_id: str
    backend: str
    simulated: bool
    runs: int
    reason: str  # why it was made (inference/schedule.py)
    point: Any = None  # the operating point in force when it was profiled (None: no platform)
    cost_s: float = 0.0  # what the profiled run cost beyond a normal one
    roofs_note: str = ""  # how the roofs differ from where the model runs ("" when they match)


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
    report: ProfileReport | None = None


class InferencePipeline:
    def __init__(self, config: InferenceConfig, ceilings: Callable[[], Ceilings], *,
                 join_profile: Callable[[ModelCost, Any, Ceilings], RooflineAnalysis] | None = None,
                 backend_factory: Callable[..., InferenceBackend] = create_backend,
                 clock: Clock | None = None, point_source: Callable[[], Any] | None = None,
                 point_poll_s: float = 0.5) -> None:
        """``point_source``: reads the operating point in force from the board (None: no
        platform); polled at most every ``point_poll_s`` between frames, and a change asks for a
        report."""
        self.clock = clock or Clock()
        if join_profile is None:
            from edge_roofline.inference.profile_join import join_profile
        self.join_profile = join_profile
        self.backend_factory = backend_factory
        self.loaded = LoadedModel(config, backend_factory, ceilings)
        self.counters = Counters()
        self._queue: collections.deque[Frame] = collections.deque()
        self._cond = threading.Condition()
        self._pending: LoadedModel | None = None
        self._frame_index = 0
        self.schedule = self._schedule(config)
        self.points = PointWatch(point_source, point_poll_s, self.note_error)
        self.last_report: ProfileReport | None = None

    def _schedule(self, config: InferenceConfig, first: str = START) -> ProfileSchedule:
        return ProfileSchedule(config.profile_every_frames, config.profile_every_s, config.profile_budget_fraction,
                               self.clock.now_s(), first)

    @property
    def config(self) -> InferenceConfig:
        return self.loaded.config

    @property
    def ceilings(self) -> Callable[[], Ceilings]:
        return self.loaded.ceilings

    # ---- input --------------------------------------------------------------------
    def submit(self, frame: Frame) -> None:
        with self._cond:
            self.counters.received += 1
            self._queue.append(frame)
            while len(self._queue) > self.config.queue_depth:
                self._queue.popleft()
                self.counters.dropped += 1
            self._cond.notify()

    def note_error(self, message: str, worker_died: bool = False) -> None:
        """An error outside a frame (a worker death, a failed close), counted and reported."""
        with self._cond:
            self.counters.errors += 1
            self.counters.worker_restarts += int(worker_died)
            self.counters.last_error = message

    # ---- model switch -------------------------------------------------------------
    def prepare(self, config: InferenceConfig, ceilings: Callable[[], Ceilings] | None = None) -> LoadedModel:
        """Load ``config`` beside the model in service, on the caller's thread; raises (and
        changes nothing) when it cannot be loaded."""
        return LoadedModel(config, self.backend_factory, ceilings or self.ceilings)

    def hand_over(self, new: LoadedModel, wait_s: float = 0.0) -> bool:
        """Give the worker a prepared model: it is swapped in before the next frame and the old
        one is closed on the worker's thread. With ``wait_s``, waits (at most that long) until the
        worker has swapped; True once ``new`` serves."""
        with self._cond:
            stale, self._pending = self._pending, new
            self._cond.notify_all()
            if wait_s > 0:
                self._cond.wait_for(lambda: self._pending is not new, wait_s)
            swapped = self.loaded is new
        if stale is not None:  # handed over and replaced before the worker took it
            stale.close()
        return swapped

    def switch(self, config: InferenceConfig, wait_s: float = 0.0) -> bool:
        """``prepare`` then ``hand_over``: on failure the current model keeps serving and the
        error is raised for the caller to report."""
        return self.hand_over(self.prepare(config), wait_s)

    def _adopt_pending(self) -> None:
        with self._cond:
            new, self._pending = self._pending, None
            if new is None:
                return
            old, self.loaded = self.loaded, new
            self.schedule = self._schedule(new.config, MODEL_SWITCH)
            self._cond.notify_all()
        try:
            old.close()
        except Exception as exc:  # noqa: BLE001 - the backend boundary: a close that fails is reported
            self.note_error(f"closing {old.config.model} failed: {describe(exc)}")

    def close(self) -> None:
        with self._cond:
            pending, self._pending = self._pending, None
        for loaded in (pending, self.loaded):
            if loaded is not None:
                loaded.close()

    # ---- processing ---------------------------------------------------------------
    def _take(self, timeout_s: float) -> Frame | None:
        with self._cond:
            if not self._queue and self._pending is None:
                self._cond.wait(timeout_s)
            return self._queue.popleft() if self._queue and self._pending is None else None

    def process_next(self, timeout_s: float = 0.1) -> FrameResult | None:
        """Serve the next frame; None when none came within ``timeout_s``."""
        self._adopt_pending()
        if self.points.poll(self.clock.now_s()):
            self.schedule.request(POINT_CHANGE)
        frame = self._take(timeout_s)
        return None if frame is None else self._serve(frame, self.loaded)

    def profile_idle(self) -> ProfileReport | None:
        """With no frame at hand, a report that is due (start, switch, operating point change, the
        time cadence) from the model's dummy input."""
        self._adopt_pending()
        loaded = self.loaded
        reason = self.schedule.due(self.clock.now_s(), idle=True)
        if not reason:
            return None
        try:
            feeds = loaded.backend.dummy_feeds()
        except Exception as exc:  # noqa: BLE001 - the backend boundary
            self.note_error(f"profiling failed: {describe(exc)}")
            return None
        return self._profile(loaded, feeds, 0.0, reason)

    def _serve(self, frame: Frame, loaded: LoadedModel) -> FrameResult:
        self._frame_index += 1
        start_s = self.clock.now_s()
        error, outputs, computed, latency_s, report = "", {}, False, 0.0, None
        pre_s = post_s = 0.0
        c = self.counters
        try:
            feeds = loaded.feeds(frame)
        except (ImageError, TensorNameError, InputShapeError, ValueError) as exc:
            feeds = None
            c.rejected += 1
            error = f"frame {self._frame_index} rejected: {describe(exc)}"
        except Exception as exc:  # noqa: BLE001 - the backend boundary (check_feeds is the backend's)
            feeds = None
            c.failed += 1
            c.errors += 1
            error = f"frame {self._frame_index}: input preparation failed: {describe(exc)}"
        pre_s = self.clock.now_s() - start_s
        if feeds is not None:
            try:
                result = loaded.backend.run(feeds)
            except Exception as exc:  # noqa: BLE001 - the backend boundary
                c.failed += 1
                c.errors += 1
                error = f"frame {self._frame_index}: {loaded.backend.kind} backend failed: {describe(exc)}"
            else:
                outputs, computed, latency_s = result.outputs, result.computed, result.latency_s
                post_start_s = self.clock.now_s()
                if result.nonfinite_outputs:
                    c.nan_outputs += 1
                    error = (f"output(s) {', '.join(result.nonfinite_outputs)} hold NaN/Inf (frame "
                             f"{self._frame_index}): check the model and its input scaling")
                c.processed += 1
                self.schedule.served()
                reason = self.schedule.due(post_start_s)
                if reason:
                    report = self._profile(loaded, feeds, latency_s, reason)
                post_s = self.clock.now_s() - post_start_s
        if error:
            c.last_error = error
        end_s = self.clock.now_s()
        return FrameResult(
            frame=frame, frame_index=self._frame_index, outputs=outputs, computed=computed,
            latency_s=latency_s, preprocess_s=pre_s, postprocess_s=post_s,
            queue_delay_s=max(0.0, start_s - frame.arrival_s), end_to_end_s=max(0.0, end_s - frame.arrival_s),
            counters=replace(c), model_id=loaded.config.model, backend=loaded.backend.kind,
            simulated=loaded.backend.kind == "virtual", error=error, report=report)

    def _profile(self, loaded: LoadedModel, feeds: dict[str, np.ndarray], run_s: float,
                 reason: str) -> ProfileReport | None:
        """A profiled run joined to the roofs in force, with the operating point read now."""
        start_s = self.clock.now_s()
        try:
            point = self.points.read()
            profile = loaded.backend.profile(feeds, runs=loaded.config.profile_runs)
            analysis = self.join_profile(loaded.cost, profile, loaded.ceilings())
        except Exception as exc:  # noqa: BLE001 - the backend boundary: ORT's own types, a board read
            self.counters.errors += 1
            self.counters.last_error = f"profiling {loaded.config.model} failed: {describe(exc)}"
            self.schedule.done(start_s, self.clock.now_s(), self.clock.now_s() - start_s)
            return None
        end_s = self.clock.now_s()
        # Work done off this thread for profiling counts too (ONNX Runtime prepares the next
        # profiling session in the background).
        cost_s = (max(0.0, end_s - start_s - run_s * loaded.config.profile_runs)
                  + getattr(loaded.backend, "profiler_prepare_s", 0.0))
        self.schedule.done(start_s, end_s, cost_s)
        self.points.reported(point)
        self.last_report = ProfileReport(analysis, loaded.config.model, loaded.backend.kind,
                                         loaded.backend.kind == "virtual", profile.runs, reason, point, cost_s,
                                         loaded.roofs_note)
        return self.last_report
