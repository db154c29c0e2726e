"""Governor configuration: one dataclass per concern, built from a dict or a YAML file with
unknown keys refused by name (a typo must not silently leave a default in force).

YAML layout (every key optional)::

    target_latency_ms: 50.0
    percentile: 95.0
    mode: active            # off | advise | active
    state_path: /var/lib/edge_roofline/governor_state.json
    prior_table: sweep_out/operating_points_resnet50_fp16.json   # start from a sweep's measurements
    points: {cpu_steps: 4, gpu_steps: 4, emc_steps: 3, core_options: [12, 6]}
    safety: {stale_telemetry_s: 1.0, thermal_limit_c: 95.0}
"""

from __future__ import annotations

import math
from dataclasses import dataclass, field, fields, replace
from pathlib import Path
from typing import Any, Mapping

MODES = ("off", "advise", "active")


class ConfigError(ValueError):
    """A governor configuration value or key is wrong; the message names it."""


def dataclass_from_dict(cls, data: Mapping[str, Any] | None, section: str):
    """``cls(**data)`` with unknown keys refused and numbers coerced to the defaults' types."""
    data = dict(data or {})
    known = {f.name: f for f in fields(cls)}
    unknown = sorted(set(data) - set(known))
    if unknown:
        raise ConfigError(f"unknown key(s) in {section} config: {', '.join(unknown)}; "
                          f"known: {', '.join(sorted(known))}")
    out = {}
    for name, value in data.items():
        default = known[name].default
        if isinstance(default, bool):
            out[name] = bool(value)
        elif isinstance(default, (int, float)):
            try:
                out[name] = type(default)(value)
            except (TypeError, ValueError) as exc:
                raise ConfigError(f"{section}.{name}: expected a number, got {value!r}") from exc
        elif isinstance(default, tuple):
            out[name] = tuple(value)
        else:
            out[name] = value
    return cls(**out)


@dataclass(frozen=True)
class PointGridConfig:
    """How many custom points to lay inside the current preset's envelope.

    The default is the Pagoda-like study grid: 4 CPU x 4 GPU x 3 EMC caps x 2 core settings
    (the preset's online cores and half of them) = 96 points on AGX Orin in MAXN.
    """

    cpu_steps: int = 4
    gpu_steps: int = 4
    emc_steps: int = 3
    core_options: tuple[int, ...] = ()  # empty: (preset's cores, half of them)
    include_presets: bool = True

    def __post_init__(self) -> None:
        for name in ("cpu_steps", "gpu_steps", "emc_steps"):
            if getattr(self, name) < 1:
                raise ConfigError(f"points.{name} must be >= 1, got {getattr(self, name)}")
        object.__setattr__(self, "core_options", tuple(int(c) for c in self.core_options))

    @classmethod
    def from_dict(cls, data: Mapping[str, Any] | None) -> "PointGridConfig":
        return dataclass_from_dict(cls, data, "points")


@dataclass(frozen=True)
class SafetyConfig:
    stale_telemetry_s: float = 1.0  # no power sample for this long -> fallback
    thermal_limit_c: float = 95.0  # Orin throttles near 99 C (tj); stay clear of it
    thermal_margin_c: float = 5.0  # fallback when any zone is within this of the limit
    max_plausible_latency_s: float = 30.0
    max_plausible_power_w: float = 500.0
    min_switch_interval_s: float = 0.25  # rate limit: at most one change per interval ...
    max_switches_per_min: int = 60  # ... and at most this many per minute
    recovery_hold_s: float = 2.0  # checks must pass this long before leaving fallback
    apply_failures_before_disable: int = 2  # failures at one point -> never try it again

    def __post_init__(self) -> None:
        for f in fields(self):
            v = getattr(self, f.name)
            if not math.isfinite(v) or v < 0:
                raise ConfigError(f"safety.{f.name} must be a finite number >= 0, got {v}")

    @classmethod
    def from_dict(cls, data: Mapping[str, Any] | None) -> "SafetyConfig":
        return dataclass_from_dict(cls, data, "safety")


@dataclass(frozen=True)
class GovernorConfig:
    """What the governor aims for and how cautiously it moves."""

    target_latency_ms: float = 50.0
    percentile: float = 95.0  # of latency, over the sliding window
    margin: float = 0.05  # predicted percentile must stay under target x (1 - margin)
    mode: str = "active"
    window_s: float = 5.0  # sliding window of the measured percentile
    min_window_samples: int = 12  # fewer samples: no percentile feedback yet
    settle_s: float = 0.3  # samples this soon after a switch are ignored
    dwell_s: float = 3.0  # minimum time at a point before an energy-driven move
    hysteresis: float = 0.03  # move only for a predicted energy saving above this fraction
    calibration_interval_s: float = 1.0  # how often measured windows feed the predictor
    explore_budget: int = 6  # exploration moves per workload (model, target or rate change)
    explore_min_rel_std: float = 0.08  # explore a point only while its energy is this uncertain
    workload_change_rel: float = 0.3  # measured vs predicted mean latency: a new workload
    rate_change_rel: float = 0.3  # input rate change that restarts exploration
    state_path: str = ""  # JSON record of the point found at start ("" = none)
    prior_table: str = ""  # operating-point table of this model from `edge-roofline sweep` ("" = none)
    points: PointGridConfig = field(default_factory=PointGridConfig)
    safety: SafetyConfig = field(default_factory=SafetyConfig)

    def __post_init__(self) -> None:
        if self.mode not in MODES:
            raise ConfigError(f"mode must be one of {', '.join(MODES)}, got {self.mode!r}")
        if not (self.target_latency_ms > 0 and math.isfinite(self.target_latency_ms)):
            raise ConfigError(f"target_latency_ms must be > 0, got {self.target_latency_ms}")
        if not 0 < self.percentile <= 100:
            raise ConfigError(f"percentile must be in (0, 100], got {self.percentile}")
        if not 0 <= self.margin < 1:
            raise ConfigError(f"margin must be in [0, 1), got {self.margin}")

    @property
    def target_latency_s(self) -> float:
        return self.target_latency_ms / 1e3

    def with_target(self, latency_ms: float, percentile: float) -> "GovernorConfig":
        return replace(self, target_latency_ms=float(latency_ms), percentile=float(percentile))

    @classmethod
    def from_dict(cls, data: Mapping[str, Any] | None) -> "GovernorConfig":
        data = dict(data or {})
        points = PointGridConfig.from_dict(data.pop("points", None))
        safety = SafetyConfig.from_dict(data.pop("safety", None))
        return replace(dataclass_from_dict(cls, data, "governor"), points=points, safety=safety)

    @classmethod
    def from_yaml(cls, path: str | Path) -> "GovernorConfig":
        import yaml

        try:
            data = yaml.safe_load(Path(path).read_text()) or {}
        except (OSError, yaml.YAMLError) as exc:
            raise ConfigError(f"cannot read governor config {path}: {exc}") from exc
        if not isinstance(data, dict):
            raise ConfigError(f"governor config {path} must be a mapping, got {type(data).__name__}")
        return cls.from_dict(data.get("governor", data))
