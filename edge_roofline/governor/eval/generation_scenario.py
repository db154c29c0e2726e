"""A language model's governor-eval scenario (``config/scenarios/llm/*.yaml``): what it holds and
how it is read (generation.py runs it)."""

from __future__ import annotations

from dataclasses import dataclass, field, fields
from pathlib import Path
from typing import Any, Mapping

from edge_roofline.paths import read_text_file, yaml_problem

from ..config import ConfigError


@dataclass(frozen=True)
class Detector:
    """A perception network beside the language model: periodic frames with their own target."""

    model: str = "yolo_tiny"  # a zoo model
    input_rate_hz: float = 30.0
    target_latency_ms: float = 6.0  # at ``percentile``, its queueing included
    percentile: float = 95.0


@dataclass(frozen=True)
class GenerationScenario:
    name: str
    device: str
    request_rate_hz: float
    prompt_tokens: int
    output_tokens: int
    ttft_ms: float  # target at ``percentile`` of time to first token
    tpot_ms: float  # target at ``percentile`` of time per output token
    percentile: float = 95.0
    duration_s: float = 60.0
    precision: str = "fp16"
    seed: int = 0
    model: Mapping[str, Any] = field(default_factory=dict)  # zoo tiny_decoder options
    governor: Mapping[str, Any] = field(default_factory=dict)  # GovernorConfig keys
    detector: Detector | Mapping[str, Any] | None = None  # Detector keys; None: the model alone

    def __post_init__(self) -> None:
        if isinstance(self.detector, Mapping):
            from edge_roofline.models import zoo

            known = {f.name for f in fields(Detector)}
            unknown = sorted(set(self.detector) - known)
            if unknown:
                raise ConfigError(f"scenario {self.name}: unknown detector key(s) {', '.join(unknown)}; "
                                  f"known: {', '.join(sorted(known))}")
            det = Detector(**self.detector)
            if det.model not in zoo.BUILDERS:
                raise ConfigError(f"scenario {self.name}: detector model {det.model!r} is not in the zoo; "
                                  f"use one of {', '.join(sorted(zoo.BUILDERS))}")
            if not (det.input_rate_hz > 0 and det.target_latency_ms > 0):
                raise ConfigError(f"scenario {self.name}: the detector's input_rate_hz and target_latency_ms "
                                  f"must be > 0")
            object.__setattr__(self, "detector", det)
        for name in ("request_rate_hz", "prompt_tokens", "output_tokens", "ttft_ms", "tpot_ms", "duration_s"):
            if not getattr(self, name) > 0:
                raise ConfigError(f"scenario {self.name}: {name} must be > 0, got {getattr(self, name)}")


def _read(path: Path) -> dict:
    import yaml

    try:
        data = yaml.safe_load(read_text_file(path)) or {}
    except OSError as exc:
        raise ConfigError(f"cannot read scenario {path}: {exc}") from None
    except yaml.YAMLError as exc:
        raise ConfigError(f"scenario {path} is {yaml_problem(exc)}") from None
    if not isinstance(data, dict):
        raise ConfigError(f"scenario {path}: expected a mapping of keys, got {type(data).__name__}")
    return data


def is_generation_scenario(path: str | Path) -> bool:
    """The file describes a language model (it sets a prompt): governor-eval runs it here."""
    try:
        return "prompt_tokens" in _read(Path(path))
    except ConfigError:
        return False  # the other loader reports what is wrong with it


def load_generation_scenario(path: str | Path) -> GenerationScenario:
    """A ``config/scenarios/llm/*.yaml`` file; unknown keys refused by name."""
    path = Path(path)
    data = _read(path)
    known = {f.name for f in fields(GenerationScenario)}
    unknown = sorted(set(data) - known)
    if unknown:
        raise ConfigError(f"scenario {path}: unknown key(s) {', '.join(unknown)}; known: {', '.join(sorted(known))}")
    try:
        return GenerationScenario(**{"name": path.stem, **data})
    except TypeError as exc:
        raise ConfigError(f"scenario {path}: {exc}") from None
