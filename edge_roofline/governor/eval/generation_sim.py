"""One run of a language model scenario (``generation.GenerationScenario``) on a freshly booted
``VirtualBoard`` (SIMULATION): requests arrive periodically, each a prefill of its prompt then
one decode step per further output token (the KV cache growing), served one request at a time
(a later one queues). A detector beside it (``scenario.detector``) runs its periodic frames at
the same time on the same GPU: the steps and the frames share the board as every multi-stream
scenario's inferences do (``virtual.contention``); a frame that arrives while the previous one
runs waits for it.

The run also keeps what the hindsight choice needs: the board's true energy and the time spent
in each of the language model's phases (prefill, decode, idle between requests), and for every
detector frame the phases it overlapped."""

from __future__ import annotations

import math
import random
from dataclasses import dataclass, field
from functools import lru_cache
from typing import TYPE_CHECKING, Any

from edge_roofline.clock import SimClock
from edge_roofline.roofline.ceilings import max_clock_preset, preset_ceilings
from edge_roofline.roofline.model import analyze_roofline

from ..config import GovernorConfig
from ..core import Governor

if TYPE_CHECKING:
    from .generation_scenario import GenerationScenario

SAMPLE_HZ = 50.0  # power sampling (platform.sample())
STEP_S = 0.1  # governor step period
LM_PHASES = ("prefill", "decode", "idle")  # idle: between requests (only the detector, if any, runs)
_LM = "lm"  # the language model's key in the contention


@lru_cache(maxsize=8)
def decoder_costs(model_items: tuple, precision: str):
    from edge_roofline.models import zoo
    from edge_roofline.roofline.decoder import DecoderCostModel

    return DecoderCostModel(zoo.build("tiny_decoder", **dict(model_items)), precision=precision)


@lru_cache(maxsize=8)
def detector_cost(model: str, precision: str):
    from edge_roofline.models import zoo
    from edge_roofline.roofline.costs import analyze_model

    return analyze_model(zoo.build(model), precision=precision)


@dataclass
class Run:
    """One policy's run (SIMULATION)."""

    policy: str
    energy_j: float = 0.0
    tokens: int = 0
    requests: int = 0
    ttft_s: list[float] = field(default_factory=list)
    tpot_s: list[float] = field(default_factory=list)
    detector_s: list[float] = field(default_factory=list)  # each frame's latency, its queueing included
    frame_phases: list[frozenset[str]] = field(default_factory=list)  # per frame: the phases it overlapped
    phase_energy_j: dict[str, float] = field(default_factory=lambda: dict.fromkeys(LM_PHASES, 0.0))
    phase_time_s: dict[str, float] = field(default_factory=lambda: dict.fromkeys(LM_PHASES, 0.0))
    switches: int = 0
    points: dict[str, str] = field(default_factory=dict)  # hindsight: per phase; governor: in force at the end
    end_s: dict[str, list[float]] = field(default_factory=dict)  # per samples field (ttft_s ...): when each ended
    power: list[tuple[float, float]] = field(default_factory=list)  # (t, W) as sampled (platform.sample())
    moves: list[tuple[float, str]] = field(default_factory=list)  # (t, point) of every point applied

    def add(self, samples: str, latency_s: float, end_s: float) -> None:
        """A sample of ``samples`` (``ttft_s``, ``tpot_s`` or ``detector_s``) that ended at ``end_s``."""
        getattr(self, samples).append(latency_s)
        self.end_s.setdefault(samples, []).append(end_s)

    @property
    def energy_per_token_j(self) -> float:
        return self.energy_j / self.tokens if self.tokens else math.nan


class _Sim:
    """A board, its platform and the loop that runs the language model's steps and the
    detector's frames while sampling power and stepping the governor."""

    def __init__(self, sc: GenerationScenario, run: Run) -> None:
        from edge_roofline.virtual.board import VirtualBoard
        from edge_roofline.virtual.contention import Contention
        from edge_roofline.virtual.platform import VirtualPlatform

        self.sc, self.run, self.clock = sc, run, SimClock()
        self.board = VirtualBoard(sc.device, mode_id=max_clock_preset(sc.device).mode_id, seed=sc.seed,
                                  clock=self.clock)
        self.platform = VirtualPlatform(self.board)
        apply = self.platform.apply

        def applied(point) -> None:  # every move, the governor's or the oracle's, for the plot
            apply(point)
            run.moves.append((self.board.now_s, point.name))

        self.platform.apply = applied
        self.shared = Contention(self.board)
        self.governor: Governor | None = None
        self.rng = random.Random(sc.seed + 1)
        self.next_sample = self._period()
        self.next_step = STEP_S
        self.phase = "idle"  # the language model's
        det = sc.detector
        self.frame_cost = detector_cost(det.model, sc.precision) if det else None
        self.next_frame_s = 0.0 if det else math.inf  # arrival of the next frame not started
        self.frame: tuple[float, set[str]] | None = None  # the frame in flight: arrival, phases overlapped

    def _period(self) -> float:
        return self.board.now_s + self.rng.uniform(0.5, 1.5) / SAMPLE_HZ  # jittered: no aliasing

    def _observe(self, latency_s: float, stream: str) -> None:
        gov = self.governor
        if gov is not None and gov.observe_inference(latency_s, self.board.now_s, stream=stream):
            gov.step(self.board.now_s)  # a late step is acted on at once, as the node does

    def _spend(self, until_s: float) -> None:
        dt = max(until_s - self.board.now_s, 0.0)
        energy = self.board.advance(dt, self.shared.activity())
        self.run.phase_energy_j[self.phase] += energy
        self.run.phase_time_s[self.phase] += dt

    def _start_frame(self) -> None:
        if self.frame is None and self.next_frame_s <= self.board.now_s and self.next_frame_s < self.sc.duration_s:
            self.frame = (self.next_frame_s, {self.phase})
            self.next_frame_s += 1.0 / self.sc.detector.input_rate_hz
            self.shared.start("detector", *self.board.prepare_inference(self.frame_cost, self.sc.precision),
                              self.board.now_s)

    def advance(self, until_s: float) -> None:
        """Run until ``until_s``, or until the language model's step in flight ends."""
        while True:
            self._start_frame()
            end_s, stage_change = self.shared.next_event_s()
            # frames stop arriving at the end (the model may still work off its queue)
            frame_due_s = self.next_frame_s if self.frame is None and self.next_frame_s < self.sc.duration_s \
                else math.inf
            t = min(self.next_sample, self.next_step, end_s, frame_due_s, until_s)
            self._spend(t)
            if self.frame is not None:
                self.frame[1].add(self.phase)
            if t == end_s:
                if stage_change:
                    self.shared.stage_change(t)
                    continue
                ended = self.shared.ended(t)
                for name in ended:
                    self.board.finish_inference()
                    self.shared.finish(name, t)
                    if name != _LM:
                        arrival_s, phases = self.frame
                        self.frame = None
                        self.run.add("detector_s", t - arrival_s, t)
                        self.run.frame_phases.append(frozenset(phases))
                        self._observe(t - arrival_s, "detector")
                if _LM in ended:
                    return
                continue
            if t == self.next_sample:
                s = self.platform.sample()
                self.run.power.append((t, s.total_power_w))
                if self.governor is not None:
                    self.governor.observe_power(s.total_power_w, t, s.temperatures_c)
                self.next_sample = self._period()
            elif t == self.next_step:
                if self.governor is not None:
                    self.governor.step(t)
                self.next_step = t + STEP_S
            if t >= until_s:
                return

    def run_step(self, cost) -> float:
        start_s = self.board.now_s
        self.shared.start(_LM, *self.board.prepare_inference(cost, self.sc.precision), start_s)
        self.advance(math.inf)
        return self.board.now_s - start_s


def step_costs(sc: GenerationScenario):
    """The prefill's cost and each later token's decode step's (the context growing)."""
    costs = decoder_costs(tuple(sorted(sc.model.items())), sc.precision)
    return costs.prefill_cost(sc.prompt_tokens), [costs.decode_cost(sc.prompt_tokens + i)
                                                  for i in range(sc.output_tokens - 1)]


def simulate(sc: GenerationScenario, policy: str, points: dict[str, Any] | None = None) -> Run:
    """One run; ``points``: the hindsight choice per phase (``{"prefill": p, "decode": p}``, and
    ``"idle": p`` for the detector alone between requests) for best_static and oracle: the
    oracle moves at every phase change, the others keep the prefill's point."""
    prefill, decodes = step_costs(sc)
    run = Run(policy)
    sim = _Sim(sc, run)
    if policy == "governor":
        sim.governor = _governor(sc, sim, prefill, decodes[len(decodes) // 2] if decodes else prefill)
    phase_point = dict(points or {})
    if phase_point:
        sim.platform.apply(phase_point["prefill"])

    def enter(phase: str) -> None:
        sim.phase = phase
        point = phase_point.get(phase)
        if policy == "oracle" and point is not None and sim.platform.current_operating_point() != point:
            sim.platform.apply(point)
            run.switches += 1

    for k in range(int(sc.duration_s * sc.request_rate_hz)):
        arrival_s = k / sc.request_rate_hz
        sim.advance(arrival_s)  # idle until it arrives (a late request starts at once: it queued)
        enter("prefill")
        sim.run_step(prefill)
        run.add("ttft_s", sim.board.now_s - arrival_s, sim.board.now_s)
        sim._observe(run.ttft_s[-1], "ttft")
        if decodes:
            enter("decode")
        for cost in decodes:
            run.add("tpot_s", sim.run_step(cost), sim.board.now_s)
            sim._observe(run.tpot_s[-1], "tpot")
        run.tokens += 1 + len(decodes)
        run.requests += 1
        enter("idle")
    sim.advance(sc.duration_s)
    run.energy_j = sim.board.energy_j
    run.points = {phase: p.name for phase, p in phase_point.items()}
    if sim.governor is not None:
        run.points = {"at the end": sim.platform.current_operating_point().name}
        sim.governor.shutdown()
        run.switches = sim.governor.switches
    return run


def _governor(sc: GenerationScenario, sim: _Sim, prefill, decode) -> Governor:
    streams = [{"name": "ttft", "phase": "prefill", "target_latency_ms": sc.ttft_ms, "percentile": sc.percentile},
               {"name": "tpot", "phase": "decode", "target_latency_ms": sc.tpot_ms, "percentile": sc.percentile}]
    ceilings = preset_ceilings(sc.device, max_clock_preset(sc.device).name, sc.precision)
    analyses = {"ttft": analyze_roofline(prefill, ceilings), "tpot": analyze_roofline(decode, ceilings)}
    if sc.detector:
        streams.append({"name": "detector", "target_latency_ms": sc.detector.target_latency_ms,
                        "percentile": sc.detector.percentile})
        analyses["detector"] = analyze_roofline(sim.frame_cost, ceilings)
    # Issue 27's criteria count every sample (generation.over_rates): a change's grace excuses no exploring.
    config = GovernorConfig.from_dict({"grace_excuses_exploring": False, **sc.governor, "streams": streams,
                                       "state_path": ""})
    return Governor(sim.platform, config, analyses, sim.clock)
