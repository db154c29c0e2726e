"""What keeps the governor from harming the robot: telemetry and plausibility checks, a thermal
guard, a rate limit on changes, a persisted record of what was found at start (the cap files
as they were) so it can be put back after a crash.

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

from edge_roofline.platforms.base import ApplyError, OperatingPoint, Platform, PlatformError, RebootRequiredError

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
        self.latest_implausible = ""  # the last implausible reading, whether or not yet a fault
        self._implausible_s: list[float] = []  # when each recent implausible reading came
        self.glitches = 0  # implausible readings too few to act on, all told
        self.last_glitch = ""
        self.max_temperature_c = -math.inf
        self.hot_zone = ""
        self.apply_failed_s: float | None = None
        self.apply_error = ""
        self._apply_failures: dict[str, int] = {}  # per point name
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
        """A fault once ``implausible_samples`` readings came within ``implausible_window_s``: a
        sensor that keeps failing, not one glitch (a single NaN sample is counted in ``glitches``)."""
        c = self.config
        self._implausible_s = [t for t in self._implausible_s if timestamp_s - t < c.implausible_window_s]
        self._implausible_s.append(timestamp_s)
        self.latest_implausible = what
        if len(self._implausible_s) >= c.implausible_samples:
            self.implausible_since_s = timestamp_s
            self.implausible_what = what
        else:
            self.glitches += 1
            self.last_glitch = what

    def note_apply_failure(self, timestamp_s: float, point_name: str, error: Exception) -> None:
        """A point failed to apply: after ``apply_failures_before_disable`` failures (at once when
        it needs a reboot) it is never tried again (``may_apply``)."""
        self.apply_failed_s = timestamp_s
        self.apply_error = f"{point_name}: {error}"
        fails = self._apply_failures.get(point_name, 0) + 1
        if isinstance(error, RebootRequiredError):
            fails = self.config.apply_failures_before_disable
        self._apply_failures[point_name] = fails

    def may_apply(self, point_name: str) -> bool:
        return self._apply_failures.get(point_name, 0) < self.config.apply_failures_before_disable

    def note_switch(self, now_s: float) -> None:
        self._switch_times_s = [t for t in self._switch_times_s if now_s - t < 60.0] + [now_s]

    # ---- checks ------------------------------------------------------------------------
    def may_switch(self, now_s: float, abandon: bool = False) -> bool:
        """The rate limit: a minimum interval and a cap per minute. ``abandon``: leaving an
        exploration that missed a target, which the interval does not hold there (every
        inference there is late; the explorations are bounded, and the cap still counts it)."""
        recent = [t for t in self._switch_times_s if now_s - t < 60.0]
        if recent and now_s - recent[-1] < self.config.min_switch_interval_s and not abandon:
            return False
        return len(recent) < self.config.max_switches_per_min

    def _current_problem(self, now_s: float) -> str:
        c = self.config
        if now_s - self.last_power_s > c.stale_telemetry_s:
            # Readings that keep coming, each implausible (a NaN from a missing rail), are not silence.
            coming = self._implausible_s and self._implausible_s[-1] > self.last_power_s
            why = f"; readings come, each implausible: {self.latest_implausible}" if coming else ""
            return (f"stale telemetry: no power sample for {now_s - self.last_power_s:.2f} s "
                    f"(> {c.stale_telemetry_s} s){why}")
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


@dataclass(frozen=True)
class CrashRecord:
    """What a governor found at start: its point and, where the platform can say, the exact
    files (``platform``: the platform's ``found_record()``; None in a format-1 record)."""

    found_point: OperatingPoint
    platform: dict | None
    format: int


class StateStore:
    """The state found at start, persisted before the first change so that a restart after a
    crash can put it back. Written atomically (temp file, fsync, rename): a crash mid-write
    leaves the old record. One governor per board: board_lock.py."""

    FORMAT = 2

    def __init__(self, path: str | os.PathLike | None) -> None:
        self.path = Path(path) if path else None

    def save(self, found: OperatingPoint, platform_record: dict | None) -> None:
        if self.path is None:
            return
        self.path.parent.mkdir(parents=True, exist_ok=True)
        tmp = self.path.with_suffix(self.path.suffix + ".tmp")
        with open(tmp, "w") as f:
            json.dump({"format": self.FORMAT, "found_point": asdict(found), "platform": platform_record}, f, indent=1)
            f.flush()
            os.fsync(f.fileno())
        os.replace(tmp, self.path)

    def load(self) -> CrashRecord | None:
        """The record a previous run left and did not clear (it crashed), or None. Format 1
        (the point only) is still read; ``platform`` is then None."""
        if self.path is None or not self.path.exists():
            return None
        try:
            data = json.loads(self.path.read_text())
            version = data.get("format", 1)
            if version not in (1, self.FORMAT):
                raise ValueError(f"format {version} is not 1 or {self.FORMAT}")
            platform = data.get("platform") if version >= 2 else None
            if platform is not None and not isinstance(platform, dict):
                raise ValueError("'platform' is not an object")
            return CrashRecord(OperatingPoint(**data["found_point"]), platform, version)
        except (ValueError, KeyError, TypeError, AttributeError) as exc:
            raise ConfigError(f"governor state file {self.path} is unreadable ({exc}); "
                              f"remove it after checking the board's operating point") from None

    def clear(self) -> None:
        if self.path is not None and self.path.exists():
            self.path.unlink()


def recover(platform: Platform, store: StateStore) -> str | None:
    """A record left by a run that did not shut down: put back what it found, clear it, and
    say what was restored (None: no record). A record the platform cannot put back whole
    is kept, and the ApplyError names what failed."""
    record = store.load()
    if record is None:
        return None
    try:
        if record.platform is not None:
            restored = platform.restore_record(record.platform)
        else:
            platform.apply(record.found_point)
            restored = (f"restored {record.found_point.name} by applying it: a format-{record.format} record "
                        f"holds no cap files, so caps it does not name are the preset's own, not as found")
    except PlatformError as exc:
        raise ApplyError(f"crash record {store.path} not fully put back: {exc}; the record is kept: "
                         f"fix the cause and start again") from None
    store.clear()
    return f"{restored} (from crash record {store.path})"
