"""Repeated log lines, rate-limited: a node that says the same thing at every step (a governor in
fallback at 10 Hz: "stale telemetry: no power sample for 1.23 s") says it once per interval,
with how many like it were held back. Lines are alike when they differ only in their numbers
(standalone ones: ``1.23 s`` varies, ``MODE_30W`` and ``cpu576`` name things and do not).
Time is the caller's (injected), so the rule is tested without sleeping.
"""

from __future__ import annotations

import re

# A number standing alone (not part of a name such as MODE_30W, cpu576 or VDD_GPU_SOC).
_NUMBER_RE = re.compile(r"(?<![\w.])[-+]?(\d+(\.\d*)?|\.\d+|nan|inf)(e[-+]?\d+)?(?![\w.])", re.IGNORECASE)


def kind_of(line: str) -> str:
    """What a line says, numbers left out: lines of one kind differ only in their numbers."""
    return _NUMBER_RE.sub("#", line)


class RepeatedLines:
    """``admit(line, now_s)``: the line to log, or None while lines of its kind came within
    ``interval_s`` of the last one logged. A line let through after some were held back says
    how many (a count of every line not logged; ``held_back`` is the total)."""

    def __init__(self, interval_s: float = 5.0, max_kinds: int = 64) -> None:
        self.interval_s = interval_s
        self.max_kinds = max_kinds
        self.held_back = 0
        self._kinds: dict[str, tuple[float, int]] = {}  # kind -> (when last logged, held back since)

    def admit(self, line: str, now_s: float) -> str | None:
        kind = kind_of(line)
        last = self._kinds.get(kind)
        if last is not None and now_s - last[0] < self.interval_s:
            self._kinds[kind] = (last[0], last[1] + 1)
            self.held_back += 1
            return None
        self._kinds.pop(kind, None)
        if len(self._kinds) >= self.max_kinds:  # the kind logged longest ago goes first
            self._kinds.pop(min(self._kinds, key=lambda k: self._kinds[k][0]))
        self._kinds[kind] = (now_s, 0)
        if last is not None and last[1]:
            return f"{line} ({last[1]} more like it in the last {now_s - last[0]:.1f} s not logged)"
        return line
