"""Which model a stream serves, learned from what it publishes (``InferenceStats.model_id``), so
a runtime model switch on the serving node re-plans the governor without anyone telling it.

The model's roofline is analysed off the caller's thread (a large model takes a second or so),
and handed over once ready; a newer switch supersedes one still loading. A model that cannot be
analysed (an unreadable path, a TensorRT engine with no ONNX graph, an unknown zoo name) is not
an error for the robot: the stream is then learned by measuring, and the reason is kept.
"""

from __future__ import annotations

import concurrent.futures
from dataclasses import dataclass
from typing import Callable

from edge_roofline.roofline.model import RooflineAnalysis


@dataclass(frozen=True)
class ModelChange:
    model_id: str
    analysis: RooflineAnalysis | None  # None: no roofline for it, learned by measuring
    note: str  # why there is no roofline ("" when there is one)


class ModelFollower:
    """``analyze(model_id)`` gives the roofline of a model id (None: none is possible here) or
    raises. ``override``: a model id used whatever the stream reports ("" = follow the stream)."""

    def __init__(self, analyze: Callable[[str], RooflineAnalysis | None], override: str = "") -> None:
        self.analyze = analyze
        self.override = override
        self.wanted = override  # the model id last asked for
        self._pool = concurrent.futures.ThreadPoolExecutor(max_workers=1, thread_name_prefix="model-follow")
        self._loading: tuple[str, concurrent.futures.Future] | None = None

    def observe(self, model_id: str) -> None:
        """A stream reported ``model_id``; start analysing it if it is new."""
        if self.override or not model_id or model_id == self.wanted:
            return
        self.wanted = model_id
        self._loading = (model_id, self._pool.submit(self.analyze, model_id))

    def poll(self) -> ModelChange | None:
        """The change to apply once the newest requested model is analysed, else None."""
        if self._loading is None or not self._loading[1].done():
            return None
        model_id, future = self._loading
        self._loading = None
        try:
            analysis = future.result()
        except Exception as exc:  # whatever the model's file holds: the stream is learned by measuring
            return ModelChange(model_id, None, f"no roofline for {model_id} ({type(exc).__name__}: {exc}); "
                                               f"learning each point by measuring")
        note = "" if analysis is not None else f"no roofline for {model_id} on this device; learning by measuring"
        return ModelChange(model_id, analysis, note)

    def wait(self) -> None:
        """Block until the newest requested model is analysed (a simulation on simulated time
        waits for it rather than racing the thread)."""
        if self._loading is not None:
            concurrent.futures.wait([self._loading[1]])

    def close(self) -> None:
        self._pool.shutdown(wait=True, cancel_futures=True)


class ModelGate:
    """Which of a stream's frames are judged against the model the governor was last told
    (``Governor.set_model``): not a frame that started before the switch (it ran the old model,
    or queued behind it), not a frame reported with the model switched from, and not, for
    ``patience_s``, one of a model reported but not announced yet (its roofline is still
    loading: the target and predictions in force are the old model's)."""

    def __init__(self, patience_s: float) -> None:
        self.patience_s = patience_s
        self.switched_s = -float("inf")
        self.announced = ""  # the model the governor was told ("": not named)
        self.reported = ""  # the model id of the last frame that said one (the old model's aside)
        self.before = ""  # ... of the frames before it reported another
        self.old = ""  # the model switched from: its frames still in flight are not judged
        self.unannounced_s: float | None = None  # since when frames report a model not announced

    def switched(self, model_id: str, now_s: float) -> None:
        """The governor was told ``model_id`` ("": not named; no frame is told apart by its id)."""
        self.switched_s = now_s
        self.old = "" if not model_id else self.reported if self.reported != model_id else self.before
        self.announced = model_id
        self.unannounced_s = None

    def since(self, now_s: float) -> None:
        """Frames that started before ``now_s`` are not judged (the stream's target changed:
        with a model switch the target comes first, and the old model's frames still in
        flight are not the new one's)."""
        self.switched_s = max(self.switched_s, now_s)

    def judged(self, model_id: str, start_s: float, now_s: float) -> bool:
        if model_id and model_id not in (self.old, self.reported):
            if self.reported and model_id != self.announced:
                self.unannounced_s = now_s
            elif model_id == self.announced:
                self.unannounced_s = None
            self.before, self.reported = self.reported, model_id
        if start_s < self.switched_s or (model_id and model_id == self.old):
            return False
        return self.unannounced_s is None or now_s - self.unannounced_s >= self.patience_s
