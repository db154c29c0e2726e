"""Injected time, so the core runs on wall time on a robot and on simulated time in the
virtual Jetson (faster than real time, deterministic in tests)."""

from __future__ import annotations

import time


class Clock:
    """Monotonic wall clock."""

    def now_s(self) -> float:
        return time.monotonic()

    def sleep(self, duration_s: float) -> None:
        if duration_s > 0:
            time.sleep(duration_s)


class SimClock(Clock):
    """A clock that only moves when told to; ``sleep`` advances it instantly."""

    def __init__(self, start_s: float = 0.0) -> None:
        self._now_s = float(start_s)

    def now_s(self) -> float:
        return self._now_s

    def sleep(self, duration_s: float) -> None:
        self.advance(duration_s)

    def advance(self, duration_s: float) -> None:
        if duration_s < 0:
            raise ValueError(f"cannot move a clock backwards ({duration_s} s)")
        self._now_s += duration_s
