"""What keeps the governor from harming the robot: telemetry and plausibility checks, a thermal
guard, a rate limit on changes, and a persisted record of the operating point found at start so
it can be put back after a crash.

The governor consults ``SafetyMonitor.verdict(now_s)`` before every decision; any failed check
sends it to the safe point until the check has passed again for ``recovery_hold_s``.
"""

from __future__ import annotations

import json
import math
import os
from dataclasses import asdict, dataclass
from pathlib import Path
from typing import Mapping

from edge_roofline.platforms.base import OperatingPoint

from .config import ConfigError, SafetyConfig


@dataclass(frozen=True)
class Verdict:
    ok: bool
    reason: str = ""


def plausible_latency(latency_s: float, config: SafetyConfig) -> bool:
    return isinstance(latency_s, (int, float)) and math.isfinite(latency_s) and \
        0.0 < latency_s <= config.max_plausible_latency_s


def plausible_power(power_w: float, config: SafetyConfig) -> bool:
    return isinstance(power_w, (int, float)) and math.isfinite(power_w) and \
        0.0 <= power_w <= config.max_plausible_power_w


class SafetyMonitor:
    """Collects the facts the checks need; ``verdict`` turns them into one answer."""

    def __init__(self, config: SafetyConfig, start_s: float) -> None:
        self.config = config
        self.last_power_s = start_s
        self.implausible_since_s: float | None = None
        self.implausible_what = ""
        self.max_temperature_c = -math.inf
        self.hot_zone = ""
        self.apply_failed_s: float | None = None
        self.apply_error = ""
        self._last_bad_s = -math.inf
        self._switch_times_s: list[float] = []

    # ---- facts -------------------------------------------------------------------------
    def note_power(self, timestamp_s: float, temperatures_c: Mapping[str, float] | None) -> None:
        self.last_power_s = max(self.last_power_s, timestamp_s)
        if temperatures_c:
            # -256 C marks a power-gated sensor on Jetson; it is not a reading.
            valid = {k: v for k, v in temperatures_c.items()
                     if isinstance(v, (int, float)) and math.isfinite(v) and v > -200}
            if valid:
                self.hot_zone, self.max_temperature_c = max(valid.items(), key=lambda kv: kv[1])

    def note_implausible(self, timestamp_s: float, what: str) -> None:
        self.implausible_since_s = timestamp_s
        self.implausible_what = what

    def note_apply_failure(self, timestamp_s: float, error: str) -> None:
        self.apply_failed_s = timestamp_s
        self.apply_error = error

    def note_switch(self, now_s: float) -> None:
        self._switch_times_s = [t for t in self._switch_times_s if now_s - t < 60.0] + [now_s]

    # ---- checks ------------------------------------------------------------------------
    def may_switch(self, now_s: float) -> bool:
        """The rate limit: a minimum interval and a cap per minute."""
        recent = [t for t in self._switch_times_s if now_s - t < 60.0]
        if recent and now_s - recent[-1] < self.config.min_switch_interval_s:
            return False
        return len(recent) < self.config.max_switches_per_min

    def _current_problem(self, now_s: float) -> str:
        c = self.config
        if now_s - self.last_power_s > c.stale_telemetry_s:
            return f"stale telemetry: no power sample for {now_s - self.last_power_s:.2f} s (> {c.stale_telemetry_s} s)"
        if self.implausible_since_s is not None and now_s - self.implausible_since_s < c.recovery_hold_s:
            return f"implausible measurement: {self.implausible_what}"
        if self.max_temperature_c >= c.thermal_limit_c - c.thermal_margin_c:
            return (f"thermal: {self.hot_zone} at {self.max_temperature_c:.1f} C, within "
                    f"{c.thermal_margin_c} C of the {c.thermal_limit_c} C limit")
        if self.apply_failed_s is not None and now_s - self.apply_failed_s < c.recovery_hold_s:
            return f"applying a point failed: {self.apply_error}"
        return ""

    def verdict(self, now_s: float) -> Verdict:
        problem = self._current_problem(now_s)
        if problem:
            self._last_bad_s = now_s
            return Verdict(False, problem)
        if now_s - self._last_bad_s < self.config.recovery_hold_s:
            return Verdict(False, f"recovering: checks passed for {now_s - self._last_bad_s:.2f} s "
                                  f"of {self.config.recovery_hold_s} s")
        return Verdict(True)


class StateStore:
    """The operating point found at start, persisted so a restart after a crash can put it
    back. Written atomically (temp file + rename) so a crash mid-write leaves the old record."""

    def __init__(self, path: str | os.PathLike | None) -> None:
        self.path = Path(path) if path else None

    def save(self, found: OperatingPoint) -> None:
        if self.path is None:
            return
        self.path.parent.mkdir(parents=True, exist_ok=True)
        tmp = self.path.with_suffix(self.path.suffix + ".tmp")
        tmp.write_text(json.dumps({"format": 1, "found_point": asdict(found)}, indent=2))
        os.replace(tmp, self.path)

    def load(self) -> OperatingPoint | None:
        """The point a previous run recorded and did not clear (it crashed), or None."""
        if self.path is None or not self.path.exists():
            return None
        try:
            data = json.loads(self.path.read_text())
            return OperatingPoint(**data["found_point"])
        except (ValueError, KeyError, TypeError) as exc:
            raise ConfigError(f"governor state file {self.path} is unreadable ({exc}); "
                              f"remove it after checking the board's operating point") from exc

    def clear(self) -> None:
        if self.path is not None and self.path.exists():
            self.path.unlink()
