"""When the inference pipeline profiles: a roofline report at start, after a model switch, when
the operating point changes, and at the configured cadence (every N frames or T seconds), all
within a budget on the worker's time.

The budget is a share of wall-clock time, not of inference time served: a light model at a low
frame rate serves a few milliseconds a second, and a budget on that starved the live roofline
for minutes (issue 23). A profiled run that cost ``cost_s`` beyond a normal run lets the next
one start ``cost_s / budget_fraction`` after it at the earliest. A report for a model that has
none yet (start, switch) is never held back: without it the model has no roofline at all.
"""

from __future__ import annotations

import math
from typing import Any, Callable

START = "start"
MODEL_SWITCH = "model switch"
POINT_CHANGE = "operating point change"
_UNBUDGETED = (START, MODEL_SWITCH)


class ProfileSchedule:
    def __init__(self, every_frames: int, every_s: float, budget_fraction: float, now_s: float,
                 first: str = START) -> None:
        """``first``: why the model's first report is due (START, or MODEL_SWITCH)."""
        self.every_frames, self.every_s, self.budget_fraction = every_frames, every_s, budget_fraction
        self.requested = first
        self.last_s = now_s
        self.frames_since = 0
        self.last_cost_s = 0.0
        self.next_allowed_s = now_s

    def request(self, reason: str) -> None:
        """Ask for a report soon; a report the model has never had keeps precedence."""
        if self.requested not in _UNBUDGETED:
            self.requested = reason

    def served(self) -> None:
        self.frames_since += 1

    def due(self, now_s: float, idle: bool = False) -> str:
        """Why a profiled run is due now ("" when none is). ``idle``: no frame is at hand (no
        camera yet, a paused one): the report is made from the model's own dummy input, on
        request and at the time cadence (so a client connecting later still gets one within
        ``every_s``), not the frame cadence."""
        if self.requested in _UNBUDGETED:
            return self.requested
        if now_s < self.next_allowed_s:
            return ""
        if self.requested:
            return self.requested
        if not idle and self.every_frames and self.frames_since >= self.every_frames:
            return f"every {self.every_frames} frames"
        if self.every_s and now_s - self.last_s >= self.every_s:
            return f"every {self.every_s:g} s"
        return ""

    def done(self, start_s: float, end_s: float, cost_s: float) -> None:
        """A profiled run ran from ``start_s`` to ``end_s`` and cost ``cost_s`` beyond a normal run."""
        self.requested = ""
        self.last_s = end_s
        self.frames_since = 0
        self.last_cost_s = max(0.0, cost_s)
        self.next_allowed_s = start_s + self.last_cost_s / self.budget_fraction

    def min_interval_s(self) -> float:
        """The shortest spacing the budget allows at the last measured cost."""
        return self.last_cost_s / self.budget_fraction if self.budget_fraction > 0 else math.inf


class PointWatch:
    """The operating point in force, read from the board (``source``; None: no platform) at most
    every ``poll_s`` between units of work, never cached for a report: another process (the
    governor, nvpmodel by hand) moves it. ``poll`` says when it differs from the last report's."""

    def __init__(self, source: Callable[[], Any] | None, poll_s: float,
                 on_error: Callable[[str], None]) -> None:
        self.source, self.poll_s, self.on_error = source, poll_s, on_error
        self._last_poll_s = -math.inf
        self._polled: Any = None
        self._reported: Any = None
        self._has_report = False

    def poll(self, now_s: float) -> bool:
        """True when the point read now differs from the last report's (a report is due)."""
        if self.source is None or now_s - self._last_poll_s < self.poll_s:
            return False
        self._last_poll_s = now_s
        try:
            self._polled = self.source()
        except Exception as exc:  # noqa: BLE001 - a board read failing must not stop serving
            self.on_error(f"cannot read the operating point: {type(exc).__name__}: {exc}")
            return False
        return self._has_report and self._polled != self._reported

    def read(self) -> Any:
        """The point in force now, for a report (raises what the board read raises)."""
        return self.source() if self.source is not None else None

    def reported(self, point: Any) -> None:
        """A report was made at ``point``."""
        self._reported = self._polled = point
        self._has_report = True
