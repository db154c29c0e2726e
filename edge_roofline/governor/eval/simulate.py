"""One run of a scenario on a freshly booted ``VirtualBoard``, on simulated time (SIMULATION):
periodic inputs that queue behind a running inference, jittered power sampling and the
controller's steps, with the board's true energy per phase."""

from __future__ import annotations

import math
import random
from collections import deque
from dataclasses import dataclass, field

import numpy as np

from edge_roofline.clock import SimClock
from edge_roofline.roofline.ceilings import max_clock_preset

from .scenario import Phase, Scenario
from .workload import Workload, workload

SAMPLE_HZ = 50.0  # power sampling rate (platform.sample())
STEP_S = 0.1  # governor step period


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


def boot(scenario: Scenario, mode_id: int):
    from edge_roofline.virtual.board import VirtualBoard
    from edge_roofline.virtual.params import CALIBRATION
    from edge_roofline.virtual.platform import VirtualPlatform

    clock = SimClock()
    params = CALIBRATION[scenario.device].scaled(scenario.physics_scale)
    board = VirtualBoard(scenario.device, mode_id=mode_id, seed=scenario.seed, params=params,
                         perturbation=scenario.physics_perturbation, clock=clock)
    return board, VirtualPlatform(board), clock


def maxn_mode_id(scenario: Scenario) -> int:
    return max_clock_preset(scenario.device).mode_id


def simulate(scenario: Scenario, mode_id: int, controller: Controller, *, sample_hz: float | None = SAMPLE_HZ,
             step_s: float | None = STEP_S, phases: tuple[Phase, ...] | None = None) -> Trace:
    """Run ``phases`` (default: the scenario's) on a board booted in ``mode_id`` under
    ``controller``. ``sample_hz``/``step_s`` None: no power sampling / no controller steps."""
    phases = phases or scenario.phases
    board, platform, clock = boot(scenario, mode_id)
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
