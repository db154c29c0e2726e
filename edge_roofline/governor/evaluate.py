"""Closed-loop evaluation of the governor on the virtual Jetson (SIMULATION).

A scenario (YAML, see ``load_scenario``) is a device, a model and a list of phases (input rate,
latency target, batch, background GPU load, optionally another model). Every policy runs the
SAME scenario on a freshly booted ``VirtualBoard`` with the same seed, on simulated time:

- ``maxn``: the max-clock preset, static;
- ``default``: the board's default nvpmodel preset, static (booted in it: on AGX Orin 64GB
  MODE_30W has another TPC mask than MAXN, which needs a reboot);
- ``best_static``: the one candidate point with the least energy per inference over the whole
  scenario among those meeting every phase's target, chosen in hindsight;
- ``oracle``: the best candidate point per phase, chosen in hindsight, switched at phase changes;
- ``oracle_margin``: the same, held to the safety rules the governor's choices obey (percentile
  under target x (1 - margin), at most MAX_UTILISATION of the input period busy): a reference
  that prices the margin; the acceptance criteria use ``oracle``;
- ``governor``: the ``Governor`` core, starting from MAXN, seeing only what the platform shows
  (``platform.sample()`` power and the application's latencies).

Latency is what the application sees: inputs arrive periodically at ``input_rate_hz``; one that
arrives while the previous inference runs waits, so latency = queueing + execution. Energy per
inference is the board's TRUE module energy (ground truth, for scoring only) over the phase or
scenario divided by the inferences completed, idle between inferences included. An "inference"
is one run of the model at the phase's batch.

Hindsight choices (``best_static``, ``oracle``) come from a short simulation of every candidate
point per distinct phase workload (cached); the chosen points are then run over the full
scenario like every other policy, so all reported numbers are measured the same way.
"""

from __future__ import annotations

import math
import random
from collections import deque
from dataclasses import dataclass, field, fields, replace
from pathlib import Path
from typing import Any, Mapping

import numpy as np

from edge_roofline.clock import SimClock
from edge_roofline.paths import config_dirs
from edge_roofline.platforms.base import OperatingPoint
from edge_roofline.roofline.ceilings import max_clock_preset, preset_ceilings
from edge_roofline.roofline.costs import ModelCost
from edge_roofline.roofline.model import RooflineAnalysis, analyze_roofline

from .config import ConfigError, GovernorConfig
from .core import Governor
from .points import candidate_points
from .policy import MAX_UTILISATION

SIMULATION = "SIMULATION"
POLICIES = ("maxn", "default", "best_static", "oracle", "oracle_margin", "governor")

SAMPLE_HZ = 50.0  # power sampling rate (platform.sample())
STEP_S = 0.1  # governor step period
SETTLE_EXCLUDE_S = 2.0  # violations within this long after a phase change are not counted
MAX_VIOLATION_RATE = 0.01  # issue #6: at most 1 % of inferences over the target
HINDSIGHT_WARMUP_S = 1.0  # per candidate point and phase workload: run this long first ...
HINDSIGHT_MEASURE_S = 3.0  # ... then measure this long


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
    from edge_roofline import zoo

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
    from edge_roofline.virtual.physics import CALIBRATION

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


# ---- workloads -----------------------------------------------------------------------------

@dataclass(frozen=True)
class Workload:
    cost: ModelCost
    analysis: RooflineAnalysis  # at the device's max-clock preset (what the governor is given)


_COSTS: dict[tuple[str, str, int], ModelCost] = {}  # model analysis takes ~1 s: once per process


def workload(scenario: Scenario, phase: Phase) -> Workload:
    from edge_roofline import zoo
    from edge_roofline.roofline.costs import analyze_model

    model = scenario.phase_model(phase)
    key = (model, scenario.precision, phase.batch)
    if key not in _COSTS:
        if model in zoo.BUILDERS:  # built at the batch (its leading dimension is static)
            _COSTS[key] = analyze_model(zoo.build(model, batch=phase.batch), precision=scenario.precision)
        else:
            _COSTS[key] = analyze_model(model, precision=scenario.precision, batch=phase.batch)
    cost = _COSTS[key]
    ceilings = preset_ceilings(scenario.device, max_clock_preset(scenario.device).name, scenario.precision)
    return Workload(cost, analyze_roofline(cost, ceilings))


# ---- one run on simulated time -------------------------------------------------------------

@dataclass
class InferenceRecord:
    phase: int
    arrival_s: float
    end_s: float

    @property
    def latency_s(self) -> float:
        return self.end_s - self.arrival_s


@dataclass
class Trace:
    """Everything one policy's run produced (SIMULATION)."""

    inferences: list[InferenceRecord] = field(default_factory=list)
    power: list[tuple[float, float]] = field(default_factory=list)  # (t, sampled module W)
    points: list[tuple[float, str]] = field(default_factory=list)  # (t, operating point in force)
    phase_energy_j: list[float] = field(default_factory=list)  # true, per phase
    phase_start_s: list[float] = field(default_factory=list)
    switches: int = 0
    decisions: list[tuple[float, str, str]] = field(default_factory=list)  # (t, point, why)


class Controller:
    """What a policy does during a run; the default does nothing (a static point)."""

    def __init__(self) -> None:
        self.decisions: list[tuple[float, str, str]] = []  # (t, point applied, why)

    def start(self, platform, clock, scenario: Scenario, phase: Phase, work: Workload) -> None:
        pass

    def phase_change(self, index: int, phase: Phase, work: Workload, changed_workload: bool, now_s: float) -> None:
        pass

    def observe_inference(self, latency_s: float, now_s: float) -> None:
        pass

    def observe_power(self, power_w: float, now_s: float, temperatures_c: dict) -> None:
        pass

    def step(self, now_s: float) -> None:
        pass

    def finish(self) -> int:
        """End of the run; returns the number of operating point changes made."""
        return 0


def _boot(scenario: Scenario, mode_id: int):
    from edge_roofline.virtual.board import VirtualBoard
    from edge_roofline.virtual.physics import CALIBRATION
    from edge_roofline.virtual.platform import VirtualPlatform

    clock = SimClock()
    params = CALIBRATION[scenario.device].scaled(scenario.physics_scale)
    board = VirtualBoard(scenario.device, mode_id=mode_id, seed=scenario.seed, params=params,
                         perturbation=scenario.physics_perturbation, clock=clock)
    return board, VirtualPlatform(board), clock


def simulate(scenario: Scenario, mode_id: int, controller: Controller, *, sample_hz: float | None = SAMPLE_HZ,
             step_s: float | None = STEP_S, phases: tuple[Phase, ...] | None = None) -> Trace:
    """Run ``phases`` (default: the scenario's) on a board booted in ``mode_id`` under
    ``controller``. ``sample_hz``/``step_s`` None: no power sampling / no controller steps."""
    phases = phases or scenario.phases
    board, platform, clock = _boot(scenario, mode_id)
    rng = random.Random(scenario.seed + 1)
    works = [workload(scenario, p) for p in phases]
    starts = list(np.cumsum([0.0] + [p.duration_s for p in phases]))
    end_s = starts[-1]
    arrivals: deque[tuple[float, int]] = deque()
    for i, p in enumerate(phases):
        n = int(math.ceil(p.duration_s * p.input_rate_hz - 1e-9))
        arrivals.extend((starts[i] + k / p.input_rate_hz, i) for k in range(n))
    trace = Trace(phase_start_s=starts[:-1])

    def sample_period() -> float:
        # Jittered sampling: a fixed period would alias against a periodic input and bias the
        # measured mean power; real samplers jitter too.
        return rng.uniform(0.5, 1.5) / sample_hz

    next_sample = sample_period() if sample_hz else math.inf
    next_step = step_s if step_s else math.inf
    phase_idx = 0
    energy_mark = board.energy_j

    def enter_phase(i: int) -> None:
        board.background_gpu_load = phases[i].background_gpu_load

    def note_point() -> None:
        name = platform.current_operating_point().name
        if not trace.points or trace.points[-1][1] != name:
            trace.points.append((board.now_s, name))

    enter_phase(0)
    controller.start(platform, clock, scenario, phases[0], works[0])
    note_point()

    def advance_handling(until_s: float, activity=None) -> None:
        """Advance to ``until_s``, handling samples, steps and phase changes on the way."""
        nonlocal next_sample, next_step, phase_idx, energy_mark
        while True:
            next_phase = starts[phase_idx + 1] if phase_idx + 1 < len(phases) else math.inf
            t = min(next_sample, next_step, next_phase, until_s)
            if t > board.now_s:
                board.advance(t - board.now_s, activity)
            if t == until_s and t < min(next_sample, next_step, next_phase):
                return
            if t == next_phase:
                trace.phase_energy_j.append(board.energy_j - energy_mark)
                energy_mark = board.energy_j
                phase_idx += 1
                enter_phase(phase_idx)
                prev, cur = phases[phase_idx - 1], phases[phase_idx]
                changed = (scenario.phase_model(prev), prev.batch) != (scenario.phase_model(cur), cur.batch)
                controller.phase_change(phase_idx, cur, works[phase_idx], changed, t)
                note_point()
            elif t == next_sample:
                s = platform.sample()
                trace.power.append((t, s.total_power_w))
                controller.observe_power(s.total_power_w, t, s.temperatures_c)
                next_sample = t + sample_period()
            elif t == next_step:
                controller.step(t)
                note_point()
                next_step = t + step_s
            if t >= until_s:
                return

    while arrivals or board.now_s < end_s:
        if not arrivals:
            advance_handling(end_s)
            break
        arrival_s, i = arrivals[0]
        if arrival_s > board.now_s:
            advance_handling(min(arrival_s, end_s))
            if arrival_s >= end_s:
                break
            continue
        if board.now_s >= end_s:
            break
        arrivals.popleft()
        timing, activity = board.prepare_inference(works[i].cost, scenario.precision)
        advance_handling(board.now_s + timing.latency_s, activity)  # sensors read mid-inference
        board.finish_inference()
        record = InferenceRecord(i, arrival_s, board.now_s)
        trace.inferences.append(record)
        controller.observe_inference(record.latency_s, board.now_s)
    trace.phase_energy_j.append(board.energy_j - energy_mark)
    # Inferences still running at the end are not counted; their energy falls in the last phase.
    trace.switches = controller.finish()
    trace.decisions = controller.decisions
    return trace


# ---- policies ------------------------------------------------------------------------------

class StaticController(Controller):
    """Apply one point at start (``None``: keep the preset the board booted in)."""

    def __init__(self, point: OperatingPoint | None = None) -> None:
        super().__init__()
        self.point = point

    def start(self, platform, clock, scenario, phase, work) -> None:
        if self.point is not None:
            platform.apply(self.point)


class ScheduleController(Controller):
    """Apply a given point per phase (the hindsight oracle)."""

    def __init__(self, points: list[OperatingPoint]) -> None:
        super().__init__()
        self.points = points
        self.switches = 0

    def start(self, platform, clock, scenario, phase, work) -> None:
        self.platform = platform
        platform.apply(self.points[0])

    def phase_change(self, index, phase, work, changed_workload, now_s) -> None:
        if self.points[index] != self.points[index - 1]:
            self.platform.apply(self.points[index])
            self.switches += 1

    def finish(self) -> int:
        return self.switches


class GovernorController(Controller):
    """The governor core, fed only what a real device shows."""

    def __init__(self, overrides: Mapping[str, Any] | None = None) -> None:
        super().__init__()
        self.overrides = dict(overrides or {})
        self.gov: Governor | None = None

    def start(self, platform, clock, scenario, phase, work) -> None:
        config = GovernorConfig.from_dict({**scenario.governor, **self.overrides,
                                           "target_latency_ms": phase.target_latency_ms,
                                           "percentile": phase.percentile, "state_path": ""})
        self.gov = Governor(platform, config, work.analysis, clock)

    def phase_change(self, index, phase, work, changed_workload, now_s) -> None:
        cfg = self.gov.config
        if (cfg.target_latency_ms, cfg.percentile) != (phase.target_latency_ms, phase.percentile):
            self.gov.set_target(phase.target_latency_ms, phase.percentile)
        if changed_workload:
            self.gov.set_model(work.analysis)

    def observe_inference(self, latency_s, now_s) -> None:
        self.gov.observe_inference(latency_s, now_s)

    def observe_power(self, power_w, now_s, temperatures_c) -> None:
        self.gov.observe_power(power_w, now_s, temperatures_c)

    def step(self, now_s) -> None:
        decision = self.gov.step(now_s)
        if decision.applied:
            self.decisions.append((now_s, decision.point.name, f"{decision.state}: {decision.reason}"))

    def finish(self) -> int:
        self.gov.shutdown()
        return self.gov.switches


# ---- hindsight -----------------------------------------------------------------------------

@dataclass(frozen=True)
class PointResult:
    """A candidate point simulated on one phase workload (true energy)."""

    point: OperatingPoint
    energy_per_inference_j: float
    latency_percentile_s: float  # at the phase's percentile, queueing included
    inferences: int
    violation_rate: float = 0.0  # fraction of inferences over the phase's target
    mean_latency_s: float = math.inf  # queueing included

    def meets(self, phase: "Phase", margin: float | None = None) -> bool:
        """The criteria the governor is judged by: the percentile within the target and at
        most MAX_VIOLATION_RATE of inferences over it. With ``margin``: also the rules the
        governor's own choices obey (percentile under target x (1 - margin), the input period
        at most MAX_UTILISATION busy)."""
        ok = self.latency_percentile_s <= phase.target_latency_s and self.violation_rate <= MAX_VIOLATION_RATE
        if margin is None:
            return ok
        return (ok and self.latency_percentile_s <= phase.target_latency_s * (1.0 - margin)
                and self.mean_latency_s * phase.input_rate_hz <= MAX_UTILISATION)


def maxn_mode_id(scenario: Scenario) -> int:
    return max_clock_preset(scenario.device).mode_id


def candidates(scenario: Scenario) -> list[OperatingPoint]:
    """The governor's candidate set on the board as the governor finds it (booted in MAXN)."""
    _, platform, _ = _boot(scenario, maxn_mode_id(scenario))
    config = GovernorConfig.from_dict(scenario.governor)
    return candidate_points(platform, config.points)


class Hindsight:
    """Simulates every candidate point on each distinct phase workload (cached)."""

    def __init__(self, scenario: Scenario) -> None:
        self.scenario = scenario
        self.candidates = candidates(scenario)
        self._cache: dict[tuple, list[PointResult]] = {}

    def phase_results(self, phase: Phase) -> list[PointResult]:
        key = (self.scenario.phase_model(phase), phase.batch, phase.input_rate_hz,
               phase.background_gpu_load, phase.percentile)
        if key not in self._cache:
            self._cache[key] = [self._simulate_point(point, phase) for point in self.candidates]
        return self._cache[key]

    def _simulate_point(self, point: OperatingPoint, phase: Phase) -> PointResult:
        s = self.scenario
        mode = point.nvpmodel_id if point.nvpmodel_id is not None else maxn_mode_id(s)
        warmup = replace(phase, duration_s=HINDSIGHT_WARMUP_S)
        measure = replace(phase, duration_s=HINDSIGHT_MEASURE_S)
        trace = simulate(s, mode, StaticController(point), sample_hz=None, step_s=None,
                         phases=(warmup, measure))
        measured = [r.latency_s for r in trace.inferences if r.phase == 1]
        lat = np.array(measured or [math.inf])
        return PointResult(point, trace.phase_energy_j[1] / max(len(measured), 1),
                           float(np.percentile(lat, phase.percentile)), len(measured),
                           float(np.mean(lat > phase.target_latency_s)), float(lat.mean()))

    def oracle(self, margin: float | None = None) -> list[PointResult]:
        """Per phase: the least energy per inference among points meeting its target as the
        governor must (percentile and violation rate; the fastest point when none does).
        ``margin``: held to the governor's safety rules too (``PointResult.meets``)."""
        out = []
        for phase in self.scenario.phases:
            results = self.phase_results(phase)
            ok = [r for r in results if r.meets(phase, margin)]
            out.append(min(ok, key=lambda r: r.energy_per_inference_j) if ok
                       else min(results, key=lambda r: r.latency_percentile_s))
        return out

    def best_static(self) -> OperatingPoint:
        """One point for the whole scenario: least total energy among points meeting every
        phase's target (else the point with the fewest phases missed, then least energy)."""
        phases = self.scenario.phases
        per_phase = [self.phase_results(p) for p in phases]

        def score(j: int):
            missed = sum(not res[j].meets(p) for res, p in zip(per_phase, phases))
            energy = sum(res[j].energy_per_inference_j * p.input_rate_hz * p.duration_s
                         for res, p in zip(per_phase, phases))
            return missed, energy

        return self.candidates[min(range(len(self.candidates)), key=score)]


# ---- scoring -------------------------------------------------------------------------------

@dataclass(frozen=True)
class PhaseScore:
    energy_per_inference_j: float
    violation_rate: float
    p95_latency_ms: float
    inferences: int
    point: str  # the point in force at the end of the phase

    def to_dict(self) -> dict:
        return {"energy_per_inference_j": self.energy_per_inference_j, "violation_rate": self.violation_rate,
                "p95_latency_ms": self.p95_latency_ms, "inferences": self.inferences, "point": self.point}


@dataclass(frozen=True)
class PolicyScore:
    policy: str
    energy_per_inference_j: float
    violation_rate: float
    p95_latency_ms: float
    switches: int
    phases: tuple[PhaseScore, ...]
    trace: Trace = field(repr=False, compare=False)

    def to_dict(self) -> dict:
        return {"energy_per_inference_j": self.energy_per_inference_j, "violation_rate": self.violation_rate,
                "p95_latency_ms": self.p95_latency_ms, "switches": self.switches,
                "phases": [p.to_dict() for p in self.phases]}


def _violations(records: list[InferenceRecord], scenario: Scenario, starts: list[float]) -> tuple[int, int]:
    """(over target, counted): inferences that arrived within SETTLE_EXCLUDE_S of a phase change
    (the start included) are not counted."""
    over = counted = 0
    for r in records:
        if r.arrival_s < starts[r.phase] + SETTLE_EXCLUDE_S:
            continue
        counted += 1
        over += r.latency_s > scenario.phases[r.phase].target_latency_s
    return over, counted


def _p95_ms(records: list[InferenceRecord]) -> float:
    return float(np.percentile([r.latency_s for r in records], 95)) * 1e3 if records else math.nan


def _point_at(trace: Trace, t_s: float) -> str:
    name = trace.points[0][1] if trace.points else ""
    for t, n in trace.points:
        if t <= t_s:
            name = n
    return name


def score(policy: str, scenario: Scenario, trace: Trace) -> PolicyScore:
    starts = trace.phase_start_s
    phases = []
    for i, phase in enumerate(scenario.phases):
        recs = [r for r in trace.inferences if r.phase == i]
        over, counted = _violations(recs, scenario, starts)
        phases.append(PhaseScore(trace.phase_energy_j[i] / max(len(recs), 1), over / max(counted, 1),
                                 _p95_ms(recs), len(recs), _point_at(trace, starts[i] + phase.duration_s - 1e-6)))
    over, counted = _violations(trace.inferences, scenario, starts)
    total_j = sum(trace.phase_energy_j)
    return PolicyScore(policy, total_j / max(len(trace.inferences), 1), over / max(counted, 1),
                       _p95_ms(trace.inferences), trace.switches, tuple(phases), trace)


@dataclass(frozen=True)
class Evaluation:
    scenario: Scenario
    scores: dict[str, PolicyScore]
    oracle_points: tuple[str, ...]
    best_static_point: str
    maxn_slack: tuple[float, ...]  # per phase: MAXN's percentile latency / target

    def ratio(self, policy: str, reference: str) -> float:
        return self.scores[policy].energy_per_inference_j / self.scores[reference].energy_per_inference_j

    @property
    def has_slack(self) -> bool:
        """The target leaves room below MAXN in every phase (MAXN's percentile at most half
        the target): where issue #6 asks for >= 15% less energy than MAXN."""
        return all(s <= 0.5 for s in self.maxn_slack)

    def criteria(self) -> dict[str, dict]:
        """Issue #6's acceptance checks for the governor on this scenario."""
        out = {
            "energy_vs_oracle": {"value": self.ratio("governor", "oracle"), "limit": 1.05,
                                 "passed": bool(self.ratio("governor", "oracle") <= 1.05)},
            "violation_rate": {"value": self.scores["governor"].violation_rate, "limit": MAX_VIOLATION_RATE,
                               "passed": bool(self.scores["governor"].violation_rate <= MAX_VIOLATION_RATE)},
        }
        saving = 1.0 - self.ratio("governor", "maxn")
        out["saving_vs_maxn"] = {"value": saving, "limit": 0.15, "applies": self.has_slack,
                                 "passed": bool(saving >= 0.15 or not self.has_slack)}
        return out

    @property
    def passed(self) -> bool:
        return all(c["passed"] for c in self.criteria().values())

    def to_dict(self) -> dict:
        s = self.scenario
        return {
            "label": SIMULATION, "scenario": s.name, "device": s.device, "model": s.model,
            "precision": s.precision, "seed": s.seed, "physics_perturbation": s.physics_perturbation,
            "physics_scale": dict(s.physics_scale),
            "duration_s": s.duration_s, "oracle_points": list(self.oracle_points),
            "best_static_point": self.best_static_point, "maxn_percentile_over_target": list(self.maxn_slack),
            "policies": {name: sc.to_dict() for name, sc in self.scores.items()},
            "criteria": self.criteria(), "passed": self.passed,
        }


def run_policy(policy: str, scenario: Scenario, hindsight: Hindsight | None = None) -> PolicyScore:
    """One policy over the whole scenario (hindsight policies need ``hindsight``)."""
    device_default = _boot(scenario, maxn_mode_id(scenario))[0].device.default_mode_id
    if policy == "maxn":
        trace = simulate(scenario, maxn_mode_id(scenario), StaticController())
    elif policy == "default":
        trace = simulate(scenario, device_default, StaticController())
    elif policy == "best_static":
        point = hindsight.best_static()
        trace = simulate(scenario, point.nvpmodel_id, StaticController(point))
    elif policy in ("oracle", "oracle_margin"):
        margin = GovernorConfig.from_dict(scenario.governor).margin if policy == "oracle_margin" else None
        points = [r.point for r in hindsight.oracle(margin)]
        trace = simulate(scenario, maxn_mode_id(scenario), ScheduleController(points))
    elif policy == "governor":
        trace = simulate(scenario, maxn_mode_id(scenario), GovernorController())
    else:
        raise ValueError(f"unknown policy {policy!r}; use one of {', '.join(POLICIES)}")
    return score(policy, scenario, trace)


def evaluate(scenario: Scenario, policies: tuple[str, ...] = POLICIES) -> Evaluation:
    """Every policy on ``scenario`` (same board, same seed). SIMULATION."""
    hindsight = Hindsight(scenario)
    scores = {p: run_policy(p, scenario, hindsight) for p in policies}
    maxn = scores.get("maxn") or run_policy("maxn", scenario)
    slack = tuple(float(np.percentile([r.latency_s for r in maxn.trace.inferences if r.phase == i] or [math.inf],
                                      ph.percentile)) / ph.target_latency_s
                  for i, ph in enumerate(scenario.phases))
    return Evaluation(scenario, scores, tuple(r.point.name for r in hindsight.oracle()),
                      hindsight.best_static().name, slack)


# ---- tables --------------------------------------------------------------------------------

def format_evaluation(ev: Evaluation) -> str:
    """The per-scenario table (policy, energy/inference, ratios, violations, p95, switches)."""
    s = ev.scenario
    lines = [f"governor evaluation -- SIMULATION on a virtual {s.device} "
             f"(physics perturbation {s.physics_perturbation:.0%}, seed {s.seed}): {s.name}",
             f"{'policy':<12} {'mJ/inference':>12} {'vs oracle':>9} {'vs MAXN':>8} {'violations':>10} "
             f"{'p95 ms':>8} {'switches':>8}  point(s)"]
    for name, sc in ev.scores.items():
        points = " | ".join(dict.fromkeys(p.point for p in sc.phases))
        lines.append(f"{name:<12} {sc.energy_per_inference_j * 1e3:>12.1f} {ev.ratio(name, 'oracle'):>9.3f} "
                     f"{ev.ratio(name, 'maxn'):>8.3f} {sc.violation_rate:>10.2%} {sc.p95_latency_ms:>8.2f} "
                     f"{sc.switches:>8d}  {points}")
    verdicts = []
    for key, c in ev.criteria().items():
        if c.get("applies", True):
            verdicts.append(f"{key} {c['value']:.3f} ({'<=' if key != 'saving_vs_maxn' else '>='} {c['limit']}) "
                            f"{'PASS' if c['passed'] else 'FAIL'}")
        else:
            verdicts.append(f"{key} {c['value']:.3f} (n/a: MAXN uses over half the target)")
    lines.append("criteria (issue #6): " + "; ".join(verdicts))
    return "\n".join(lines)


def format_summary(evaluations: list[Evaluation]) -> str:
    """Policies x scenarios: energy per inference relative to the oracle and to MAXN, the
    governor's violation rate and the criteria verdict."""
    policies = [p for p in POLICIES if all(p in ev.scores for ev in evaluations)]
    head = f"{'scenario':<22} {'oracle mJ':>9} " + " ".join(f"{p + '/or':>14}" for p in policies if p != "oracle")
    margin = "oracle_margin" in policies
    head += (f" {'gov/or_margin':>13}" if margin else "") + f" {'gov/MAXN':>8} {'gov viol':>8} {'gov sw':>6}  verdict"
    lines = ["SIMULATION (virtual Jetson): energy per inference relative to the per-phase oracle", head]
    for ev in evaluations:
        gov = ev.scores.get("governor")
        row = f"{Path(ev.scenario.name).stem:<22} {ev.scores['oracle'].energy_per_inference_j * 1e3:>9.1f} "
        row += " ".join(f"{ev.ratio(p, 'oracle'):>14.3f}" for p in policies if p != "oracle")
        if gov is not None:
            failed = [k for k, c in ev.criteria().items() if not c["passed"]]
            row += (f" {ev.ratio('governor', 'oracle_margin'):>13.3f}" if margin else "")
            row += (f" {ev.ratio('governor', 'maxn'):>8.3f} {gov.violation_rate:>8.2%} {gov.switches:>6d}  "
                    + ("PASS" if not failed else "FAIL: " + ", ".join(failed)))
        lines.append(row)
    return "\n".join(lines)
