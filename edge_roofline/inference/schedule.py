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
