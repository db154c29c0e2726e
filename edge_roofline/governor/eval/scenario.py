"""A scenario (YAML, see ``load_scenario``): a device, a model and a list of phases (input rate,
latency target, batch, background GPU load, optionally another model), validated so every
error names the file, the key and the fix."""

from __future__ import annotations

import math
from dataclasses import dataclass, field, fields, replace
from pathlib import Path
from typing import Any, Mapping

from edge_roofline.paths import config_dirs

from ..config import ConfigError, GovernorConfig


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
class Scenario:
    name: str
    device: str
    model: str
    precision: str
    phases: tuple[Phase, ...]
    seed: int = 0
    physics_perturbation: float = 0.0
    physics_scale: Mapping[str, float] = field(default_factory=dict)  # PhysicsParams factors (board only)
    governor: Mapping[str, Any] = field(default_factory=dict)
    description: str = ""

    def phase_model(self, phase: Phase) -> str:
        return phase.model or self.model

    @property
    def duration_s(self) -> float:
        return sum(p.duration_s for p in self.phases)


_PHASE_REQUIRED = ("duration_s", "input_rate_hz", "target_latency_ms")
_SCENARIO_REQUIRED = ("device", "model", "precision", "phases")


def _check_keys(data: Mapping, cls, required: tuple[str, ...], where: str, skip=("name",)) -> None:
    known = [f.name for f in fields(cls) if f.name not in skip]
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


def scenario_from_dict(data: Any, name: str = "scenario", base: Path | None = None) -> Scenario:
    """Validate ``data`` (a parsed scenario) into a ``Scenario``; errors name ``name`` and the key."""
    from edge_roofline.roofline.devices import UnknownDeviceError, get_device
    from edge_roofline.virtual.params import CALIBRATION

    if not isinstance(data, Mapping):
        raise ScenarioError(f"{name}: a scenario must be a mapping of keys, got {type(data).__name__}")
    _check_keys(data, Scenario, _SCENARIO_REQUIRED, name)
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
    if not isinstance(data["phases"], list) or not data["phases"]:
        raise ScenarioError(f"{name}: phases must be a non-empty list of phase mappings")
    phases = tuple(_phase(p, f"{name}: phases[{i}]") for i, p in enumerate(data["phases"]))
    model = _check_model(str(data["model"]), name, base)
    phases = tuple(replace(p, model=_check_model(p.model, f"{name}: phases[{i}]", base)) if p.model else p
                   for i, p in enumerate(phases))
    seed = _number(data, "seed", name, kind=int) if "seed" in data else 0
    perturbation = _number(data, "physics_perturbation", name, low=0, high=0.9) \
        if "physics_perturbation" in data else 0.0
    physics_scale = data.get("physics_scale") or {}
    try:
        if not isinstance(physics_scale, Mapping):
            raise ValueError(f"must be a mapping of physics parameter names to factors, got {physics_scale!r}")
        CALIBRATION[device].scaled(physics_scale)
    except ValueError as exc:
        raise ScenarioError(f"{name}: physics_scale: {exc}") from None
    governor = data.get("governor") or {}
    if not isinstance(governor, Mapping):
        raise ScenarioError(f"{name}: governor must be a mapping of GovernorConfig keys, got {governor!r}")
    try:
        GovernorConfig.from_dict(governor)
    except ConfigError as exc:
        raise ScenarioError(f"{name}: governor: {exc}") from None
    description = data.get("description", "")
    return Scenario(name=name, device=device, model=model, precision=data["precision"], phases=phases,
                    seed=seed, physics_perturbation=perturbation, physics_scale=dict(physics_scale),
                    governor=dict(governor),
                    description=str(description))


def resolve_scenario_path(name_or_path: str | Path) -> Path:
    """A path as given, else a scenario name in config/scenarios/ (with or without .yaml)."""
    path = Path(name_or_path)
    if path.is_file():
        return path
    for directory in scenario_dirs():
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
    dirs = scenario_dirs()
    return sorted(p.stem for p in dirs[0].glob("*.yaml")) if dirs else []


def load_scenario(name_or_path: str | Path) -> Scenario:
    import yaml

    path = resolve_scenario_path(name_or_path)
    try:
        data = yaml.safe_load(path.read_text())
    except (OSError, yaml.YAMLError) as exc:
        raise ScenarioError(f"cannot read scenario {path}: {exc}") from None
    return scenario_from_dict(data, name=str(path), base=path.parent)
