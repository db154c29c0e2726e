"""Frequency and timestamp health of a published stream, as two diagnostic statuses with
diagnostic_updater's semantics (FrequencyStatus, TimeStampStatus): rqt_robot_monitor then shows
a stalled `power/telemetry` or `inference/stats` as ERROR / WARN. There is no diagnostic_updater
wheel on PyPI (Jazzy or Kilted), hence this rclpy-free version; names and messages follow
diagnostic_updater's so the statuses read the same as in other ROS packages.
"""

from __future__ import annotations

import math
import threading
from collections import deque

from edge_roofline.telemetry.diagnostics import ERROR, OK, WARN, Status


class StreamHealth:
    """Call ``tick`` for every message that goes out, ``statuses`` once per diagnostics period.

    Frequency: events over the last ``window_size`` diagnostics periods; none at all is ERROR,
    below ``min_rate_hz * (1 - tolerance)`` or above ``max_rate_hz * (1 + tolerance)`` is WARN.
    Timestamp: the delay from a message's stamp to the time it went out, over one period;
    outside ``[min_delay_s, max_delay_s]`` or a zero stamp is ERROR, no message at all is WARN.
    """

    def __init__(self, name: str, now_s: float, *, min_rate_hz: float = 0.0, max_rate_hz: float = math.inf,
                 tolerance: float = 0.1, window_size: int = 5, min_delay_s: float = -1.0,
                 max_delay_s: float = 5.0) -> None:
        if window_size < 1:
            raise ValueError(f"window_size must be >= 1, got {window_size}")
        self.name = name
        self.min_rate_hz, self.max_rate_hz, self.tolerance = min_rate_hz, max_rate_hz, tolerance
        self.min_delay_s, self.max_delay_s = min_delay_s, max_delay_s
        self._lock = threading.Lock()  # ticks come from publishing threads, statuses from a timer
        self._count = 0
        self._history: deque[tuple[int, float]] = deque([(0, now_s)], maxlen=window_size)
        self._reset_delays()

    def _reset_delays(self) -> None:
        self._delays: list[float] = []
        self._zero_stamps = 0

    def tick(self, now_s: float, stamp_s: float | None = None) -> None:
        """One message out at ``now_s``; ``stamp_s`` is its header stamp on the same clock
        (None: the stream has no stamp; 0: a zero stamp, which is an error)."""
        with self._lock:
            self._count += 1
            if stamp_s is None:
                return
            if stamp_s == 0.0:
                self._zero_stamps += 1
            else:
                self._delays.append(now_s - stamp_s)

    def statuses(self, now_s: float) -> list[Status]:
        with self._lock:
            count = self._count
            first_count, first_s = self._history[0]
            self._history.append((count, now_s))
            delays, zero_stamps = self._delays, self._zero_stamps
            self._reset_delays()
        return [self._frequency(count - first_count, count, now_s - first_s),
                self._timestamp(delays, zero_stamps)]

    def _frequency(self, events: int, total: int, window_s: float) -> Status:
        rate_hz = events / window_s if window_s > 0 else 0.0
        if events == 0:
            level, message = ERROR, "No events recorded."
        elif rate_hz < self.min_rate_hz * (1 - self.tolerance):
            level, message = WARN, "Frequency too low."
        elif rate_hz > self.max_rate_hz * (1 + self.tolerance):
            level, message = WARN, "Frequency too high."
        else:
            level, message = OK, "Desired frequency met"
        values = {"Events in window": str(events), "Events since startup": str(total),
                  "Duration of window (s)": f"{window_s:.3f}", "Actual frequency (Hz)": f"{rate_hz:.3f}",
                  "Minimum acceptable frequency (Hz)": f"{self.min_rate_hz * (1 - self.tolerance):.3f}"}
        if math.isfinite(self.max_rate_hz):
            values["Maximum acceptable frequency (Hz)"] = f"{self.max_rate_hz * (1 + self.tolerance):.3f}"
        return Status(f"{self.name} topic frequency", level, message, values)

    def _timestamp(self, delays: list[float], zero_stamps: int) -> Status:
        values = {"Earliest acceptable timestamp delay (s)": f"{self.min_delay_s:.3f}",
                  "Latest acceptable timestamp delay (s)": f"{self.max_delay_s:.3f}",
                  "Zero timestamps seen": str(zero_stamps)}
        if not delays and not zero_stamps:
            return Status(f"{self.name} topic timestamp", WARN, "No data since last update.", values)
        problems = []
        if zero_stamps:
            problems.append("Zero timestamp seen.")
        if delays:
            values["Earliest timestamp delay (s)"] = f"{min(delays):.3f}"
            values["Latest timestamp delay (s)"] = f"{max(delays):.3f}"
            if min(delays) < self.min_delay_s:
                problems.append("Timestamps too far in future seen.")
            if max(delays) > self.max_delay_s:
                problems.append("Timestamps too far in past seen.")
        if problems:
            return Status(f"{self.name} topic timestamp", ERROR, " ".join(problems), values)
        return Status(f"{self.name} topic timestamp", OK, "Timestamps are reasonable.", values)
