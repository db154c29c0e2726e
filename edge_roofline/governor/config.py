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
    # Several networks at once: each stream has its own target; one operating point serves all.
    # Without streams, one stream named "default" holds target_latency_ms at percentile.
    streams:
      - {name: detector, stats_topic: /det/inference/stats, target_latency_ms: 30, percentile: 95}
      - {name: segmenter, stats_topic: /seg/inference/stats, target_latency_ms: 100}
"""

from __future__ import annotations

import math
import re
from dataclasses import dataclass, field, fields, replace
from pathlib import Path
from typing import Any, Mapping

MODES = ("off", "advise", "active")
DEFAULT_STREAM = "default"  # the one stream of a configuration without ``streams``


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
    implausible_samples: int = 3  # implausible readings (NaN, negative, absurd) within ...
    implausible_window_s: float = 1.0  # ... this long -> fallback; fewer are a glitch, counted and logged

    def __post_init__(self) -> None:
        for f in fields(self):
            v = getattr(self, f.name)
            if not math.isfinite(v) or v < 0:
                raise ConfigError(f"safety.{f.name} must be a finite number >= 0, got {v}")
        if self.implausible_samples < 1:
            raise ConfigError(f"safety.implausible_samples must be >= 1, got {self.implausible_samples}")

    @classmethod
    def from_dict(cls, data: Mapping[str, Any] | None) -> "SafetyConfig":
        return dataclass_from_dict(cls, data, "safety")


@dataclass(frozen=True)
class StreamConfig:
    """One network the governor holds a target for. ``stats_topic`` and ``model`` are read by the
    node only: where the stream's InferenceStats come from ("" = ``<name>/inference/stats``) and
    an ONNX path or zoo:NAME whose roofline to use whatever the stream reports ("" = follow
    ``InferenceStats.model_id``)."""

    name: str = ""
    target_latency_ms: float = math.nan
    percentile: float = 95.0
    stats_topic: str = ""
    model: str = ""

    def __post_init__(self) -> None:
        if not re.fullmatch(r"[A-Za-z0-9_]+", self.name or ""):
            raise ConfigError(f"stream name must be letters, digits and _ (it names topics and services), "
                              f"got {self.name!r}")
        if not (self.target_latency_ms > 0 and math.isfinite(self.target_latency_ms)):
            raise ConfigError(f"stream {self.name}: target_latency_ms must be a number > 0, "
                              f"got {self.target_latency_ms}")
        if not 0 < self.percentile <= 100:
            raise ConfigError(f"stream {self.name}: percentile must be in (0, 100], got {self.percentile}")

    @property
    def target_latency_s(self) -> float:
        return self.target_latency_ms / 1e3

    @classmethod
    def from_dict(cls, data: Mapping[str, Any]) -> "StreamConfig":
        if not isinstance(data, Mapping):
            raise ConfigError(f"each stream must be a mapping like {{name: detector, target_latency_ms: 30}}, "
                              f"got {data!r}")
        # An unknown key first (a misspelt target is also a missing one): dataclass_from_dict names it.
        if set(data) <= {f.name for f in fields(cls)} and not {"name", "target_latency_ms"} <= set(data):
            raise ConfigError(f"stream {dict(data)!r}: name and target_latency_ms are required")
        return dataclass_from_dict(cls, data, f"stream {data.get('name')!r}")


def parse_streams(text: str) -> tuple[StreamConfig, ...]:
    """Streams from YAML flow text (``[{name: det, target_latency_ms: 30}]``) or from a YAML file
    holding that list or ``{streams: [...]}``; "" gives none."""
    import yaml

    text = (text or "").strip()
    if not text:
        return ()
    where = "streams"
    if not text.startswith(("[", "{")) and Path(text).expanduser().is_file():
        where = f"streams file {text}"
        try:
            text = Path(text).expanduser().read_text()
        except OSError as exc:
            raise ConfigError(f"cannot read {where}: {exc}") from None
    try:
        data = yaml.safe_load(text)
    except yaml.YAMLError as exc:
        raise ConfigError(f"{where} is not valid YAML ({str(exc).splitlines()[0]}); write e.g. "
                          f"[{{name: detector, target_latency_ms: 30}}]") from None
    if isinstance(data, Mapping) and "streams" in data:
        data = data["streams"]
    if not isinstance(data, list) or not data:
        raise ConfigError(f"{where} must be a non-empty list like [{{name: detector, target_latency_ms: 30}}] "
                          f"(a file path, or YAML text), got {text[:60]!r}")
    return streams_from_list(data)


def streams_from_list(data) -> tuple[StreamConfig, ...]:
    streams = tuple(s if isinstance(s, StreamConfig) else StreamConfig.from_dict(s) for s in data)
    names = [s.name for s in streams]
    repeated = sorted({n for n in names if names.count(n) > 1})
    if repeated:
        raise ConfigError(f"stream name(s) used twice: {', '.join(repeated)}; give each stream its own name")
    return streams


@dataclass(frozen=True)
class GovernorConfig:
    """What the governor aims for and how cautiously it moves."""

    target_latency_ms: float = 50.0
    percentile: float = 95.0  # of latency, over the sliding window
    margin: float = 0.05  # predicted percentile must stay under target x (1 - margin)
    mode: str = "active"
    window_s: float = 5.0  # sliding window of the measured percentile
    min_window_samples: int = 12  # fewer samples: no percentile feedback yet
    min_calibration_samples: int = 6  # fewer samples: no calibration of the mean yet
    settle_s: float = 0.3  # the longest a learned settle time of a clock move may grow to (moves.py)
    # Prior settle times of a move per domain (learned online, moves.py): a latency sample that
    # started before the move settled is the move's, not the point's.
    settle_cpu_s: float = 0.02
    settle_cores_s: float = 0.02
    settle_gpu_s: float = 0.04
    settle_emc_s: float = 0.08
    settle_preset_s: float = 0.3  # added when the nvpmodel preset changes
    verdict_ttl_s: float = 20.0  # a point ruled out by a miss is tried again after this (doubling per repeat)
    expected_dwell_s: float = 10.0  # a move for energy must save its transient's cost over this (or longer)
    dwell_s: float = 3.0  # minimum time at a point before an energy-driven move
    hysteresis: float = 0.03  # move only for a predicted energy saving above this fraction
    calibration_interval_s: float = 1.0  # how often measured windows feed the predictor
    explore_budget: int = 8  # exploration moves per workload (model, target or rate change)
    explore_min_rel_std: float = 0.08  # explore a point only while its energy is this uncertain
    workload_change_rel: float = 0.3  # measured vs predicted mean latency: a new workload
    rate_change_rel: float = 0.3  # input rate change that restarts exploration
    state_path: str = ""  # JSON record of the point found at start ("" = none)
    prior_table: str = ""  # operating-point table of this model from `edge-roofline sweep` ("" = none)
    stream_timeout_s: float = 1.0  # silent this long (and 10 of its periods): out of the constraint set until back
    streams: tuple[StreamConfig, ...] = ()  # empty: one stream "default" with the target above
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
        object.__setattr__(self, "streams", streams_from_list(self.streams))

    @property
    def target_latency_s(self) -> float:
        return self.target_latency_ms / 1e3

    @property
    def stream_configs(self) -> tuple[StreamConfig, ...]:
        return self.streams or (StreamConfig(DEFAULT_STREAM, self.target_latency_ms, self.percentile),)

    def stream_name(self, stream: str | None) -> str:
        """``stream``, checked; ``None`` or "": the only stream (refused when there are several)."""
        names = [s.name for s in self.stream_configs]
        if not stream:
            if len(names) > 1:
                raise ConfigError(f"name the stream: one of {', '.join(names)}")
            return names[0]
        if stream not in names:
            raise ConfigError(f"no stream {stream!r}; streams: {', '.join(names)}")
        return stream

    def with_target(self, latency_ms: float, percentile: float, stream: str | None = None) -> "GovernorConfig":
        name = self.stream_name(stream)
        if not self.streams:
            return replace(self, target_latency_ms=float(latency_ms), percentile=float(percentile))
        return replace(self, streams=tuple(replace(s, target_latency_ms=float(latency_ms), percentile=float(percentile))
                                           if s.name == name else s for s in self.streams))

    def stream(self, name: str) -> StreamConfig:
        return next(s for s in self.stream_configs if s.name == self.stream_name(name))

    @classmethod
    def from_dict(cls, data: Mapping[str, Any] | None) -> "GovernorConfig":
        data = dict(data or {})
        points = PointGridConfig.from_dict(data.pop("points", None))
        safety = SafetyConfig.from_dict(data.pop("safety", None))
        streams = data.pop("streams", None) or ()
        if not isinstance(streams, (list, tuple)):
            raise ConfigError(f"streams must be a list like [{{name: detector, target_latency_ms: 30}}], "
                              f"got {streams!r}")
        return replace(dataclass_from_dict(cls, data, "governor"), points=points, safety=safety,
                       streams=streams_from_list(streams))

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
