"""A scenario (YAML, see ``load_scenario``), validated so every error names the file, the key
and the fix. Two forms:

- one stream: a device, a model and a list of phases (input rate, latency target, batch,
  background GPU load, optionally another model);
- several concurrent streams (``streams:``): each with a name, its own model, rate, target and
  percentile, optionally ``start_s``/``stop_s`` or its own ``phases``, over ``duration_s``.

Internally both are a list of ``StreamSpec`` (the first form is the one stream "default"), cut
into ``Segment``s: the intervals between any two stream events (start, stop, phase change)."""

from __future__ import annotations

import math
import re
from dataclasses import dataclass, field, fields, replace
from functools import cached_property
from pathlib import Path
from typing import Any, Mapping

import numpy as np
from edge_roofline.paths import config_dirs
from edge_roofline.paths import read_text_file, yaml_problem

from ..config import DEFAULT_STREAM, ConfigError, GovernorConfig


class ScenarioError(ValueError):
    """A scenario file is wrong; the message names the file, the key and the fix."""


# ---- scenario ------------------------------------------------------------------------------

@dataclass(frozen=True)
class Phase:
    duration_s: float
    input_rate_hz: float
    target_latency_ms: float
    percentile: float = 95.0
    batch: int = 1
    background_gpu_load: float = 0.0
    model: str = ""  # "" = the scenario's model

    @property
    def target_latency_s(self) -> float:
        return self.target_latency_ms / 1e3


@dataclass(frozen=True)
class StreamSpec:
    """One stream: its phases (model set in each) back to back from ``start_s``."""

    name: str
    phases: tuple[Phase, ...]
    start_s: float = 0.0

    @property
    def phase_starts_s(self) -> list[float]:
        """Start of each phase, then the stream's stop."""
        return list(self.start_s + np.cumsum([0.0] + [p.duration_s for p in self.phases]))


@dataclass(frozen=True)
class Segment:
    """An interval without a stream event inside: the streams running and each one's phase."""

    start_s: float
    end_s: float
    active: tuple[tuple[str, Phase], ...]  # (stream name, its phase), in scenario stream order

    @property
    def duration_s(self) -> float:
        return self.end_s - self.start_s

    @property
    def background_gpu_load(self) -> float:
        return sum(p.background_gpu_load for _, p in self.active)

    def workload_key(self) -> tuple:
        return tuple((n, p.model, p.batch, p.input_rate_hz, p.percentile, p.target_latency_ms,
                      p.background_gpu_load) for n, p in self.active)


@dataclass(frozen=True)
class Scenario:
    name: str
    device: str
    model: str  # the single-stream form's model ("" with ``streams``)
    precision: str
    phases: tuple[Phase, ...]  # the single-stream form's phases (() with ``streams``)
    seed: int = 0
    physics_perturbation: float = 0.0
    physics_scale: Mapping[str, float] = field(default_factory=dict)  # PhysicsParams factors (board only)
    governor: Mapping[str, Any] = field(default_factory=dict)
    description: str = ""
    streams: tuple[StreamSpec, ...] = ()  # the several-streams form
    # The board's actuation and disturbances (virtual.actuation.Actuation; None: realistic).
    physics: Any = None
    # Camera delivery jitter, peak to peak: each input reaches the node up to this much after
    # its capture instant (simulate._arrivals; 0: strictly periodic). In ms, not a fraction of
    # the period: the driver's, DDS's and the executor's delays do not scale with the frame rate,
    # and peak to peak is the spread between the min and max `ros2 topic delay` shows.
    arrival_jitter_ms: float = 0.0

    def phase_model(self, phase: Phase) -> str:
        return phase.model or self.model

    @property
    def multi_stream(self) -> bool:
        return bool(self.streams)

    @cached_property
    def stream_specs(self) -> tuple[StreamSpec, ...]:
        """Every stream; the single-stream form is the one stream ``default``."""
        if self.streams:
            return self.streams
        return (StreamSpec(DEFAULT_STREAM, tuple(replace(p, model=self.phase_model(p)) for p in self.phases)),)

    @cached_property
    def segments(self) -> tuple[Segment, ...]:
        return segments_of(self.stream_specs)

    @property
    def duration_s(self) -> float:
        return self.segments[-1].end_s


def segments_of(streams: tuple[StreamSpec, ...]) -> tuple[Segment, ...]:
    """Cut the streams' time line at every start, stop and phase change."""
    per_stream = [s.phase_starts_s for s in streams]
    bounds = sorted({0.0, *(t for starts in per_stream for t in starts)})
    out = []
    for a, b in zip(bounds, bounds[1:]):
        active = tuple((s.name, s.phases[i]) for s, starts in zip(streams, per_stream)
                       for i in range(len(s.phases)) if starts[i] <= a < starts[i + 1])
        out.append(Segment(a, b, active))
    return tuple(out)


_PHASE_REQUIRED = ("duration_s", "input_rate_hz", "target_latency_ms")
_SCENARIO_REQUIRED = ("device", "model", "precision", "phases")


def _check_keys(data: Mapping, cls, required: tuple[str, ...], where: str, skip=("name",)) -> None:
    _refuse_unknown(data, tuple(f.name for f in fields(cls) if f.name not in skip), where, required)


def _refuse_unknown(data: Mapping, known: tuple[str, ...], where: str, required: tuple[str, ...] = ()) -> None:
    unknown = sorted(set(data) - set(known))
    if unknown:
        raise ScenarioError(f"{where}: unknown key(s) {', '.join(unknown)}; allowed keys: "
                            f"{', '.join(known)} (check the spelling)")
    missing = [k for k in required if k not in data]
    if missing:
        raise ScenarioError(f"{where}: missing key(s) {', '.join(missing)}; add them")


def _number(data: Mapping, key: str, where: str, kind=float, low=None, high=None, low_open=False):
    value = data[key]
    if isinstance(value, bool) or not isinstance(value, (int, float)) or \
            (kind is int and not float(value).is_integer()):
        raise ScenarioError(f"{where}: {key} must be {'an integer' if kind is int else 'a number'}, "
                            f"got {value!r}")
    value = kind(value)
    if not math.isfinite(value) or (low is not None and (value <= low if low_open else value < low)) \
            or (high is not None and value > high):
        bounds = f"{'>' if low_open else '>='} {low}" + (f" and <= {high}" if high is not None else "")
        raise ScenarioError(f"{where}: {key} must be {bounds}, got {value}")
    return value


def _phase(data: Any, where: str) -> Phase:
    if not isinstance(data, Mapping):
        raise ScenarioError(f"{where}: a phase must be a mapping of keys, got {data!r}")
    _check_keys(data, Phase, _PHASE_REQUIRED, where, skip=())
    out = dict(data)
    out["duration_s"] = _number(data, "duration_s", where, low=0, low_open=True)
    out["input_rate_hz"] = _number(data, "input_rate_hz", where, low=0, low_open=True)
    out["target_latency_ms"] = _number(data, "target_latency_ms", where, low=0, low_open=True)
    if "percentile" in data:
        out["percentile"] = _number(data, "percentile", where, low=0, high=100, low_open=True)
    if "batch" in data:
        out["batch"] = _number(data, "batch", where, kind=int, low=1)
    if "background_gpu_load" in data:
        out["background_gpu_load"] = _number(data, "background_gpu_load", where, low=0, high=0.95)
    if "model" in data and not (isinstance(data["model"], str) and data["model"]):
        raise ScenarioError(f"{where}: model must be a zoo name or an .onnx path, got {data['model']!r}")
    return Phase(**out)


def _check_model(model: str, where: str, base: Path | None) -> str:
    from edge_roofline.models import zoo

    if model in zoo.BUILDERS:
        return model
    path = Path(model)
    if not path.is_absolute() and base is not None:
        path = base / path
    if path.suffix == ".onnx" and path.is_file():
        return str(path)
    raise ScenarioError(f"{where}: model {model!r} is neither a zoo model ({', '.join(sorted(zoo.BUILDERS))}) "
                        f"nor an existing .onnx file")


_MULTI_KEYS = ("device", "precision", "duration_s", "streams", "seed", "physics_perturbation", "physics_scale",
               "physics", "arrival_jitter_ms", "governor", "description")
_STREAM_PHASE_KEYS = ("duration_s", "model", "input_rate_hz", "target_latency_ms", "percentile", "batch")
_STREAM_KEYS = ("name", "start_s", "stop_s", "phases") + _STREAM_PHASE_KEYS[1:]


def _stream(data: Any, where: str, duration_s: float, base: Path | None) -> StreamSpec:
    """One entry of ``streams:``: either its own ``phases`` or one model/rate/target from
    ``start_s`` to ``stop_s`` (default: the whole scenario)."""
    if not isinstance(data, Mapping):
        raise ScenarioError(f"{where}: a stream must be a mapping of keys, got {data!r}")
    name = data.get("name")
    named = f"{where} ({name})" if isinstance(name, str) else where
    _refuse_unknown(data, _STREAM_KEYS, named, ("name",))
    if not isinstance(name, str) or not re.fullmatch(r"[A-Za-z0-9_]+", name):
        raise ScenarioError(f"{where}: name must be letters, digits and _ (it names the governor's stream), "
                            f"got {name!r}")
    where = named
    start_s = _number(data, "start_s", where, low=0) if "start_s" in data else 0.0
    if "phases" in data:
        inline = sorted(set(data) - {"name", "start_s", "phases"})
        if inline:
            raise ScenarioError(f"{where}: {', '.join(inline)} beside phases; put them into each phase "
                                "(a stream with phases stops after its last phase)")
        if not isinstance(data["phases"], list) or not data["phases"]:
            raise ScenarioError(f"{where}: phases must be a non-empty list of phase mappings")
        raw = list(data["phases"])
        for i, ph in enumerate(raw):
            if isinstance(ph, Mapping):
                _refuse_unknown(ph, _STREAM_PHASE_KEYS, f"{where}: phases[{i}]", ("model",))
    else:
        stop_s = _number(data, "stop_s", where, low=0, low_open=True) if "stop_s" in data else duration_s
        if stop_s <= start_s:
            raise ScenarioError(f"{where}: stop_s ({stop_s}) must be after start_s ({start_s})")
        _refuse_unknown(data, _STREAM_KEYS, where, ("model", "input_rate_hz", "target_latency_ms"))
        raw = [{k: data[k] for k in _STREAM_PHASE_KEYS if k in data} | {"duration_s": stop_s - start_s}]
    phases = _phases(raw, where, base)
    stream = StreamSpec(name, phases, start_s)
    if stream.phase_starts_s[-1] > duration_s + 1e-9:
        raise ScenarioError(f"{where}: runs until {stream.phase_starts_s[-1]:g} s, after the scenario's "
                            f"duration_s ({duration_s:g} s); shorten it or raise duration_s")
    return stream


def _phases(raw: Any, where: str, base: Path | None) -> tuple[Phase, ...]:
    if not isinstance(raw, list) or not raw:
        raise ScenarioError(f"{where}: phases must be a non-empty list of phase mappings")
    phases = tuple(_phase(p, f"{where}: phases[{i}]") for i, p in enumerate(raw))
    return tuple(replace(p, model=_check_model(p.model, f"{where}: phases[{i}]", base)) if p.model else p
                 for i, p in enumerate(phases))


def _multi_stream(data: Mapping, name: str, base: Path | None) -> dict:
    """The ``streams:`` form's own keys, checked: {streams, duration_s}."""
    if "model" in data or "phases" in data:
        raise ScenarioError(f"{name}: model/phases beside streams; give each stream its model (and phases) "
                            "or drop streams for the single-stream form")
    _refuse_unknown(data, _MULTI_KEYS, name, ("device", "precision", "duration_s", "streams"))
    duration_s = _number(data, "duration_s", name, low=0, low_open=True)
    if not isinstance(data["streams"], list) or not data["streams"]:
        raise ScenarioError(f"{name}: streams must be a non-empty list of stream mappings")
    streams = tuple(_stream(s, f"{name}: streams[{i}]", duration_s, base) for i, s in enumerate(data["streams"]))
    names = [s.name for s in streams]
    if len(set(names)) != len(names):
        raise ScenarioError(f"{name}: streams: names must be unique, got {', '.join(names)}")
    gaps = [f"{g.start_s:g}-{g.end_s:g} s" for g in segments_of(streams) if not g.active]
    end_s = max(s.phase_starts_s[-1] for s in streams)
    if gaps or not math.isclose(end_s, duration_s):
        raise ScenarioError(f"{name}: no stream runs at {', '.join(gaps) or f'{end_s:g}-{duration_s:g} s'}; "
                            "let a stream run at every moment up to duration_s")
    return {"streams": streams, "model": "", "phases": ()}


def scenario_from_dict(data: Any, name: str = "scenario", base: Path | None = None) -> Scenario:
    """Validate ``data`` (a parsed scenario) into a ``Scenario``; errors name ``name`` and the key."""
    from edge_roofline.roofline.devices import UnknownDeviceError, get_device
    from edge_roofline.virtual.actuation import Actuation, PhysicsKnobError
    from edge_roofline.virtual.params import CALIBRATION

    if not isinstance(data, Mapping):
        raise ScenarioError(f"{name}: a scenario must be a mapping of keys, got {type(data).__name__}")
    if "streams" in data:
        form = _multi_stream(data, name, base)
    else:
        _check_keys(data, Scenario, _SCENARIO_REQUIRED, name, skip=("name", "streams"))
        form = {"streams": (), "model": _check_model(str(data["model"]), name, base),
                "phases": _phases(data["phases"], name, base)}
    device = data["device"]
    if device not in CALIBRATION:
        try:
            get_device(str(device))
            why = "has no virtual physics"
        except UnknownDeviceError:
            why = "is not a catalogued device"
        raise ScenarioError(f"{name}: device {device!r} {why}; use one of {', '.join(sorted(CALIBRATION))}")
    precisions = tuple(get_device(device).gpu_flops_per_sm_per_clock)
    if data["precision"] not in precisions:
        raise ScenarioError(f"{name}: precision {data['precision']!r} not available on {device}; "
                            f"use one of {', '.join(precisions)}")
    seed = _number(data, "seed", name, kind=int) if "seed" in data else 0
    perturbation = _number(data, "physics_perturbation", name, low=0, high=0.9) \
        if "physics_perturbation" in data else 0.0
    arrival_jitter_ms = _number(data, "arrival_jitter_ms", name, low=0) if "arrival_jitter_ms" in data else 0.0
    physics_scale = data.get("physics_scale") or {}
    try:
        if not isinstance(physics_scale, Mapping):
            raise ValueError(f"must be a mapping of physics parameter names to factors, got {physics_scale!r}")
        CALIBRATION[device].scaled(physics_scale)
    except ValueError as exc:
        raise ScenarioError(f"{name}: physics_scale: {exc}") from None
    try:
        physics = Actuation.from_dict(data.get("physics"), f"{name}: physics")
    except PhysicsKnobError as exc:
        raise ScenarioError(str(exc)) from None
    governor = data.get("governor") or {}
    if not isinstance(governor, Mapping):
        raise ScenarioError(f"{name}: governor must be a mapping of GovernorConfig keys, got {governor!r}")
    if "streams" in governor:
        raise ScenarioError(f"{name}: governor: streams comes from the scenario (its streams and their targets); "
                            "drop it from governor")
    try:
        GovernorConfig.from_dict(governor)
    except ConfigError as exc:
        raise ScenarioError(f"{name}: governor: {exc}") from None
    return Scenario(name=name, device=device, precision=data["precision"], seed=seed,
                    physics_perturbation=perturbation, physics_scale=dict(physics_scale), physics=physics,
                    arrival_jitter_ms=arrival_jitter_ms, governor=dict(governor),
                    description=str(data.get("description", "")), **form)


def resolve_scenario_path(name_or_path: str | Path) -> Path:
    """A path as given, else a scenario name in config/scenarios/ or its llm/ (language models),
    with or without .yaml."""
    path = Path(name_or_path)
    if path.is_file():
        return path
    for directory in [d for top in scenario_dirs() for d in (top, top / "llm")]:
        for candidate in (directory / path.name, directory / f"{path.name}.yaml"):
            if candidate.is_file():
                return candidate
    shipped = ", ".join(shipped_scenarios()) or "none"
    raise ScenarioError(f"scenario {str(name_or_path)!r} not found: give a YAML path or one of the "
                        f"shipped scenarios ({shipped})")


def scenario_dirs() -> list[Path]:
    """config/scenarios/ in a source checkout, else where the install put the shipped config."""
    return [d / "scenarios" for d in config_dirs() if (d / "scenarios").is_dir()]


def shipped_scenarios() -> list[str]:
    """The multi-stream and single-stream scenarios (the language models' are in llm/)."""
    dirs = scenario_dirs()
    return sorted(p.stem for p in dirs[0].glob("*.yaml")) if dirs else []


def load_scenario(name_or_path: str | Path) -> Scenario:
    import yaml

    path = resolve_scenario_path(name_or_path)
    try:
        data = yaml.safe_load(read_text_file(path))
    except OSError as exc:
        raise ScenarioError(f"cannot read scenario {path}: {exc}") from None
    except yaml.YAMLError as exc:
        raise ScenarioError(f"scenario {path} is {yaml_problem(exc)}") from None
    return scenario_from_dict(data, name=str(path), base=path.parent)
