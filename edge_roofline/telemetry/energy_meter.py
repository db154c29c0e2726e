"""Energy over a span of time (a language-model request) from a power monitor's cumulative energy
counter, as another process sees it: ``PowerTelemetry.energy_j`` (trapezoidal, since the monitor
started) at each message's ``header.stamp``.

The counter is interpolated linearly between the messages either side of each end of the span,
so a span shorter than one publish window (50 ms at 20 Hz) gets that window's mean power times
its length: the resolution is the monitor's window, not the request's tokens. A span is answered
once a message at or after its end has arrived; before, ``energy_between`` says to wait. Where
no power is measured the answer is NaN with the reason, never 0 J: no telemetry at all, a power
source that measures none (``cpu``), a gap in the counter, a monitor restarted mid-span.
ROS-free: the generation node feeds it the messages it receives.
"""

from __future__ import annotations

import bisect
import math
import threading
from dataclasses import dataclass, replace

NO_TELEMETRY = ("no power telemetry received on power/telemetry: start power_monitor (the suite "
                "does) for energy per token")


@dataclass(frozen=True)
class EnergyReading:
    energy_j: float  # NaN when not measured
    note: str = ""  # why it is NaN ('' when measured)


class EnergyMeter:
    def __init__(self, keep_s: float = 120.0) -> None:
        self.keep_s = keep_s
        self._t: list[float] = []
        self._e: list[float] = []
        self._source = ""
        self._lock = threading.Lock()

    def add(self, stamp_s: float, energy_j: float, source: str) -> None:
        """One telemetry message: its stamp (s) and cumulative energy (J, NaN without power)."""
        with self._lock:
            if self._t and stamp_s <= self._t[-1]:
                return  # out of order or repeated: the counter's history is kept monotonic in time
            self._t.append(stamp_s)
            self._e.append(energy_j)
            self._source = source
            cut = bisect.bisect_left(self._t, stamp_s - self.keep_s)
            if cut:
                del self._t[:cut], self._e[:cut]

    def energy_between(self, start_s: float, end_s: float, final: bool = False) -> EnergyReading | None:
        """Energy from ``start_s`` to ``end_s`` (stamps on the monitor's clock), or None while the
        telemetry has not yet covered ``end_s`` (``final``: answer now, NaN with the reason)."""
        with self._lock:
            t, e, source = list(self._t), list(self._e), self._source
        if not t:
            return EnergyReading(math.nan, NO_TELEMETRY) if final else None
        if not math.isfinite(e[-1]):
            return EnergyReading(math.nan, f"the power source ({source or 'unknown'}) measures no power")
        if t[0] > start_s:
            return EnergyReading(math.nan, "power telemetry began after the request started (or its "
                                           f"history of {self.keep_s:.0f} s no longer reaches back to it)")
        if t[-1] < end_s:
            if not final:
                return None
            return EnergyReading(math.nan, f"power/telemetry stopped before the request ended (last message "
                                           f"{end_s - t[-1]:.2f} s before its end)")
        e0, e1 = _at(t, e, start_s), _at(t, e, end_s)
        if not (math.isfinite(e0) and math.isfinite(e1)):
            return EnergyReading(math.nan, "the power monitor measured no power over part of the request")
        if e1 < e0:
            return EnergyReading(math.nan, "the power monitor's energy counter went back (it restarted during "
                                           "the request)")
        return EnergyReading(e1 - e0)


def _at(t: list[float], e: list[float], when_s: float) -> float:
    """The counter at ``when_s``, linear between the readings either side (t[0] <= when_s <= t[-1])."""
    i = bisect.bisect_left(t, when_s)
    if t[i] == when_s or i == 0:
        return e[i]
    t0, t1, e0, e1 = t[i - 1], t[i], e[i - 1], e[i]
    return e0 + (e1 - e0) * (when_s - t0) / (t1 - t0)


class AwaitingEnergy:
    """Spans (a request's end: a frozen dataclass with ``span_wall_s`` and ``energy``) waiting
    until the power telemetry covers them, at most ``wait_s`` past their end (then NaN with the
    reason). Filled by one thread (a worker), emptied by another (a node's timer)."""

    def __init__(self, meter: EnergyMeter, wait_s: float = 1.0) -> None:
        self.meter, self.wait_s = meter, wait_s
        self._ends: list = []
        self._lock = threading.Lock()

    def add(self, end) -> None:
        with self._lock:
            self._ends.append(end)

    def ready(self, now_wall_s: float) -> list:
        """The ends whose energy is known now (or given up on), in the order they came."""
        with self._lock:
            ends, self._ends = self._ends, []
        out, waiting = [], []
        for end in ends:
            start_s, end_s = end.span_wall_s
            reading = self.meter.energy_between(start_s, end_s, final=now_wall_s >= end_s + self.wait_s)
            if reading is None:
                waiting.append(end)
            else:
                out.append(replace(end, energy=reading))
        with self._lock:
            self._ends[:0] = waiting
        return out

    def __len__(self) -> int:
        with self._lock:
            return len(self._ends)
