"""Health of the power telemetry as OK / WARN / ERROR statuses (rendered to
``diagnostic_msgs/DiagnosticArray`` on ``/diagnostics`` by the power monitor node)."""

from __future__ import annotations

import math
from dataclasses import dataclass, field

from edge_roofline.telemetry.sampler import TelemetryWindow

OK, WARN, ERROR, STALE = 0, 1, 2, 3


@dataclass(frozen=True)
class Thresholds:
    temperature_warn_c: float = 85.0
    temperature_error_c: float = 95.0  # Orin throttles from ~99 C (tj)
    power_warn_w: float = 0.0  # 0 disables the power check
    power_error_w: float = 0.0
    min_sample_rate_hz: float = 150.0

    def __post_init__(self) -> None:
        # NaN never compares: the check would be off in silence; warn above error never warns.
        temps, powers = (self.temperature_warn_c, self.temperature_error_c), (self.power_warn_w, self.power_error_w)
        if not (all(math.isfinite(t) for t in temps) and temps[0] <= temps[1]):
            raise ValueError(f"temperature_warn_c and temperature_error_c must be finite, warn <= error; got "
                             f"{temps[0]} and {temps[1]}")
        if not (all(w >= 0 and math.isfinite(w) for w in powers) and (0 in powers or powers[0] <= powers[1])):
            raise ValueError(f"power_warn_w and power_error_w must be >= 0 (0: off), warn <= error; got "
                             f"{powers[0]} and {powers[1]}")


@dataclass(frozen=True)
class Status:
    name: str
    level: int
    message: str
    values: dict[str, str] = field(default_factory=dict)


def _level_for(value: float, warn: float, error: float) -> int:
    if error > 0 and value >= error:
        return ERROR
    if warn > 0 and value >= warn:
        return WARN
    return OK


def evaluate(window: TelemetryWindow, thresholds: Thresholds, hardware_id: str) -> list[Status]:
    """Statuses for power, temperatures and the sampler itself."""
    sample = window.latest
    prefix = "edge_roofline"
    if sample is None:
        reason = window.last_error or "no sample yet"
        return [Status(f"{prefix}: power", ERROR if window.errors else STALE,
                       f"no telemetry: {reason}", {"hardware_id": hardware_id})]
    statuses = []
    source = sample.source + (" [SIMULATION]" if sample.simulated and "SIMULATION" not in sample.source else "")
    if sample.missing_rails:  # rails that read before (or should): ERROR when the total is lost with them
        total_lost = sample.total_power_w is None
        statuses.append(Status(f"{prefix}: power rails", ERROR if total_lost else WARN,
                               "missing: " + ", ".join(sample.missing_rails), dict(sample.missing_rails)))
    if sample.total_power_w is None or not math.isfinite(sample.total_power_w):
        what = "no module power" if sample.missing_rails else "this platform measures no power"
        statuses.append(Status(f"{prefix}: power", WARN, f"{source}: {what}", {"source": source}))
    else:
        level = _level_for(sample.total_power_w, thresholds.power_warn_w, thresholds.power_error_w)
        values = {"source": source, "total_power_w": f"{sample.total_power_w:.3f}",
                  "energy_j": f"{window.total_energy_j:.3f}", "nvpmodel_mode": sample.nvpmodel_mode}
        values.update({f"rail {r.name} power_w": f"{r.power_w:.3f}" for r in sample.rails})
        message = f"{sample.total_power_w:.2f} W" + (" over threshold" if level else "")
        statuses.append(Status(f"{prefix}: power", level, message, values))
    if sample.temperatures_c:
        hottest, temp_c = max(sample.temperatures_c.items(), key=lambda kv: kv[1])
        level = _level_for(temp_c, thresholds.temperature_warn_c, thresholds.temperature_error_c)
        statuses.append(Status(
            f"{prefix}: temperature", level,
            f"hottest {hottest} {temp_c:.1f} C" + (" (near throttling)" if level else ""),
            {k: f"{v:.1f}" for k, v in sample.temperatures_c.items()}))
    rate_ok = window.sample_rate_hz >= thresholds.min_sample_rate_hz
    sampler_level = OK if rate_ok and not window.errors else WARN
    message = f"{window.sample_rate_hz:.0f} Hz"
    if not rate_ok:
        message += f" (below {thresholds.min_sample_rate_hz:.0f} Hz)"
    if window.errors:
        message += f"; {window.errors} read errors, last: {window.last_error}"
    statuses.append(Status(f"{prefix}: sampler", sampler_level, message,
                           {"sample_rate_hz": f"{window.sample_rate_hz:.1f}", "errors": str(window.errors),
                            "min_sample_rate_hz": f"{thresholds.min_sample_rate_hz:.1f}"}))
    return statuses
