"""One run of a scenario on a freshly booted ``VirtualBoard``, on simulated time (SIMULATION):
periodic inputs that queue behind a running inference, jittered power sampling and the
controller's steps, with the board's true energy per phase."""

from __future__ import annotations

import bisect
import math
import random
from collections import deque
from dataclasses import dataclass, field

from edge_roofline.clock import SimClock
from edge_roofline.roofline.ceilings import max_clock_preset

from ..config import DEFAULT_STREAM
from .scenario import Phase, Scenario, Segment, StreamSpec, segments_of
from .workload import workload

SAMPLE_HZ = 50.0  # power sampling rate (platform.sample())
STEP_S = 0.1  # governor step period


@dataclass
class InferenceRecord:
    phase: int  # the segment (phase of the whole scenario) it arrived in
    arrival_s: float
    end_s: float
    stream: str = DEFAULT_STREAM

    @property
    def latency_s(self) -> float:
        return self.end_s - self.arrival_s


@dataclass
class Trace:
    """Everything one policy's run produced (SIMULATION)."""

    inferences: list[InferenceRecord] = field(default_factory=list)
    power: list[tuple[float, float]] = field(default_factory=list)  # (t, sampled module W)
    points: list[tuple[float, str]] = field(default_factory=list)  # (t, operating point in force)
    phase_energy_j: list[float] = field(default_factory=list)  # true, per segment
    phase_start_s: list[float] = field(default_factory=list)
    switches: int = 0
    decisions: list[tuple[float, str, str]] = field(default_factory=list)  # (t, point, why)


class Controller:
    """What a policy does during a run; the default does nothing (a static point)."""

    def __init__(self) -> None:
        self.decisions: list[tuple[float, str, str]] = []  # (t, point applied, why)

    def start(self, platform, clock, scenario: Scenario, segment: Segment) -> None:
        pass

    def phase_change(self, index: int, segment: Segment, now_s: float) -> None:
        pass

    def observe_inference(self, latency_s: float, now_s: float, stream: str, model_id: str) -> None:
        """One inference of ``stream`` ended; ``model_id`` as its InferenceStats would carry it."""

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
                         perturbation=scenario.physics_perturbation, clock=clock, actuation=scenario.physics)
    return board, VirtualPlatform(board), clock


def maxn_mode_id(scenario: Scenario) -> int:
    return max_clock_preset(scenario.device).mode_id


def model_id(phase: Phase) -> str:
    """The model id a stream's stats carry in ``phase`` (another batch is another engine)."""
    return phase.model if phase.batch == 1 else f"{phase.model}@batch{phase.batch}"


def _arrivals(stream: StreamSpec, seg_starts: list[float], scenario: Scenario) -> deque[tuple[float, int]]:
    """(arrival, segment) of every input of ``stream``: captured periodically from each of its
    phases' start, each delivered a uniform ``[0, arrival_jitter_ms]`` after its capture (the
    driver, DDS and the executor), never before the previous one (one topic delivers in order).
    Bounded delays keep the stream's rate; a late frame and an early next one arrive bunched."""
    out: deque[tuple[float, int]] = deque()
    starts = stream.phase_starts_s
    jitter_s = scenario.arrival_jitter_ms / 1e3
    # Its own draws per stream: the board's and the sampler's (seed, seed + 1) do not shift.
    rng = random.Random(f"arrivals {scenario.seed} {stream.name}")
    for i, p in enumerate(stream.phases):
        first, last = bisect.bisect_left(seg_starts, starts[i]), bisect.bisect_left(seg_starts, starts[i + 1]) - 1
        for k in range(int(math.ceil(p.duration_s * p.input_rate_hz - 1e-9))):
            t = starts[i] + k / p.input_rate_hz
            if jitter_s:
                t = max(t + jitter_s * rng.random(), out[-1][0] if out else t)
            out.append((t, min(max(bisect.bisect_right(seg_starts, t) - 1, first), last)))
    return out


def simulate(scenario: Scenario, mode_id: int, controller: Controller, *, sample_hz: float | None = SAMPLE_HZ,
             step_s: float | None = STEP_S, streams: tuple[StreamSpec, ...] | None = None) -> Trace:
    """Run ``streams`` (default: the scenario's) on a board booted in ``mode_id`` under
    ``controller``. ``sample_hz``/``step_s`` None: no power sampling / no controller steps.
    Each stream's inputs queue behind its own running inference; different streams' inferences
    run at once and share the board (``virtual.contention``)."""
    from edge_roofline.virtual.contention import Contention

    segments = scenario.segments if streams is None else segments_of(streams)
    streams = scenario.stream_specs if streams is None else streams
    board, platform, clock = boot(scenario, mode_id)
    rng = random.Random(scenario.seed + 1)
    works = [{name: workload(scenario, p) for name, p in seg.active} for seg in segments]
    starts = [seg.start_s for seg in segments] + [segments[-1].end_s]
    end_s = starts[-1]
    queues = {s.name: _arrivals(s, starts[:-1], scenario) for s in streams}
    running: dict[str, tuple[float, int]] = {}  # stream -> (arrival, segment) of its inference in flight
    shared = Contention(board)
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
        board.background_gpu_load = segments[i].background_gpu_load

    def note_point() -> None:
        name = platform.current_operating_point().name
        if not trace.points or trace.points[-1][1] != name:
            trace.points.append((board.now_s, name))

    enter_phase(0)
    controller.start(platform, clock, scenario, segments[0])
    note_point()

    def advance_handling(until_s: float, activity=None) -> None:
        """Advance to ``until_s``, handling samples, steps and phase changes on the way."""
        nonlocal next_sample, next_step, phase_idx, energy_mark
        while True:
            next_phase = starts[phase_idx + 1] if phase_idx + 1 < len(segments) else math.inf
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
                controller.phase_change(phase_idx, segments[phase_idx], t)
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

    def start_arrived() -> None:
        """Every idle stream whose next input has arrived starts it (none after the end)."""
        if board.now_s >= end_s:
            return
        for name, queue in queues.items():
            if name not in running and queue and queue[0][0] <= board.now_s:
                running[name] = queue.popleft()
                timing, activity = board.prepare_inference(works[running[name][1]][name].cost, scenario.precision)
                shared.start(name, timing, activity, board.now_s)

    while True:
        start_arrived()
        waiting = min((q[0][0] for n, q in queues.items() if n not in running and q), default=math.inf)
        if not running:
            if waiting == math.inf:
                advance_handling(end_s)
                break
            if board.now_s >= end_s:
                break
            advance_handling(min(waiting, end_s))
            if waiting >= end_s:
                break
            continue
        t, stage_change = shared.next_event_s()
        if waiting < t and board.now_s < end_s:
            advance_handling(waiting, shared.activity())
            continue
        advance_handling(t, shared.activity())  # sensors read mid-inference
        if stage_change:
            shared.stage_change(t)
            continue
        for name in shared.ended(t):
            board.finish_inference()
            shared.finish(name, t)
            arrival_s, seg = running.pop(name)
            record = InferenceRecord(seg, arrival_s, board.now_s, name)
            trace.inferences.append(record)
            controller.observe_inference(record.latency_s, board.now_s, name,
                                         model_id(dict(segments[seg].active)[name]))
    trace.phase_energy_j.append(board.energy_j - energy_mark)
    # Inferences still running at the end are not counted; their energy falls in the last phase.
    trace.switches = controller.finish()
    trace.decisions = controller.decisions
    return trace
