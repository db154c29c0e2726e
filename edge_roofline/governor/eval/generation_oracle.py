"""Hindsight choices for a language model scenario (SIMULATION): the per-phase oracle's points
and the best static point, each kept under ``HINDSIGHT_HEADROOM`` of every target.

- The model alone: each candidate's prefill and decode steps costed without jitter (the run's
  jitter and queueing are not in that cost); the oracle's idle time between requests stays at
  its decode point.
- Beside a detector: a joint oracle. Each candidate runs a short static simulation of the
  scenario (every stream at that point, their contention included); per phase of the language
  model (prefill, decode, idle between requests) the oracle takes the least-energy point where
  that phase's steps and the detector's frames overlapping it meet their targets."""

from __future__ import annotations

from dataclasses import replace
from typing import TYPE_CHECKING, Any

import numpy as np

from edge_roofline.roofline.ceilings import max_clock_preset

from ..config import GovernorConfig
from ..points import candidate_points
from .generation_sim import Run, _Sim, simulate, step_costs

if TYPE_CHECKING:
    from .generation_scenario import GenerationScenario

HINDSIGHT_HEADROOM = 0.9  # a hindsight point's step time stays under this x target
JOINT_REQUESTS = 8  # the joint oracle's short run per candidate: this many requests (after the first) ...
JOINT_MIN_S = 2.0  # ... and at least this long


def _candidates(sc: GenerationScenario, sim: _Sim):
    return candidate_points(sim.platform, GovernorConfig.from_dict({**sc.governor, "state_path": ""}).points)


def hindsight(sc: GenerationScenario) -> dict[str, dict[str, Any]]:
    """{"oracle": {phase: point}, "best_static": {phase: point}} (see the module's docstring)."""
    return joint_hindsight(sc) if sc.detector else solo_hindsight(sc)


def solo_hindsight(sc: GenerationScenario) -> dict[str, dict[str, Any]]:
    """The model alone: per candidate, each phase's jitter-free step time and energy."""
    from edge_roofline.virtual.physics import module_power_w, rail_power_w

    prefill, decodes = step_costs(sc)
    decode = decodes[len(decodes) // 2] if decodes else None
    sim = _Sim(sc, Run("hindsight"))
    cost_of = {}
    for point in _candidates(sc, sim):
        sim.platform.apply(point)
        sim.board.advance(0.05)  # settled
        b = sim.board
        out = {}
        for phase, cost in (("prefill", prefill), ("decode", decode)):
            if cost is None:
                continue
            latency_s = b.timing(cost, sc.precision).latency_s
            _, activity = b.prepare_inference(cost, sc.precision)
            power_w = module_power_w(b.device, rail_power_w(b.device, b.params, b.silicon_clocks(), activity,
                                                            b.thermal.temperature_c))
            out[phase] = (latency_s, power_w * latency_s)
        cost_of[point] = out
    limit = {"prefill": HINDSIGHT_HEADROOM * sc.ttft_ms / 1e3, "decode": HINDSIGHT_HEADROOM * sc.tpot_ms / 1e3}
    n_decode = sc.output_tokens - 1

    def meets(point, phase) -> bool:
        return phase not in cost_of[point] or cost_of[point][phase][0] <= limit[phase]

    def energy(point, phase) -> float:
        return cost_of[point][phase][1] if phase in cost_of[point] else 0.0

    maxn = next(p for p in cost_of if p.name == max_clock_preset(sc.device).name)
    choose = {}
    for phase in ("prefill", "decode"):
        ok = [p for p in cost_of if meets(p, phase)] or [maxn]
        choose[phase] = min(ok, key=lambda p: energy(p, phase))
    both = [p for p in cost_of if meets(p, "prefill") and meets(p, "decode")] or [maxn]
    static = min(both, key=lambda p: energy(p, "prefill") + n_decode * energy(p, "decode"))
    return {"oracle": choose, "best_static": {"prefill": static, "decode": static}}


def _percentile(values, q: float) -> float:
    return float(np.percentile(values, q)) if len(values) else 0.0


def joint_hindsight(sc: GenerationScenario) -> dict[str, dict[str, Any]]:
    """Beside a detector: per candidate a short static run; per phase the least-energy point
    meeting that phase's targets. The prefill's and decode's energy are weighed against the idle
    point's power over the time they take from the idle time (a faster phase leaves more idle)."""
    short = replace(sc, duration_s=max(JOINT_MIN_S, (JOINT_REQUESTS + 1) / sc.request_rate_hz))
    det = sc.detector
    det_limit_s = HINDSIGHT_HEADROOM * det.target_latency_ms / 1e3
    first_s = 1.0 / sc.request_rate_hz  # the first request runs while the point settles: not judged
    per_point = {}
    for point in _candidates(sc, _Sim(sc, Run("hindsight"))):
        r = simulate(short, "best_static", {"prefill": point, "decode": point})
        frames = [(lat, phases) for lat, phases, arrival in
                  zip(r.detector_s, r.frame_phases, np.arange(len(r.detector_s)) / det.input_rate_hz)
                  if arrival >= first_s]
        ok = {"prefill": _percentile(r.ttft_s[1:], sc.percentile) <= HINDSIGHT_HEADROOM * sc.ttft_ms / 1e3,
              "decode": _percentile(r.tpot_s[sc.output_tokens - 1:], sc.percentile)
              <= HINDSIGHT_HEADROOM * sc.tpot_ms / 1e3,
              "idle": True}
        for phase in ok:  # the frames that overlapped the phase (all of them where none did)
            lat = [x for x, phases in frames if phase in phases] or [x for x, _ in frames]
            ok[phase] = ok[phase] and _percentile(lat, det.percentile) <= det_limit_s
        per_point[point] = (r, ok)

    maxn = next(p for p in per_point if p.name == max_clock_preset(sc.device).name)

    def best(phase: str, key) -> Any:
        return min([p for p, (_, ok) in per_point.items() if ok[phase]] or [maxn], key=key)

    def idle_w(p) -> float:
        r = per_point[p][0]
        return r.phase_energy_j["idle"] / r.phase_time_s["idle"] if r.phase_time_s["idle"] else 0.0

    idle = best("idle", idle_w)
    choose = {"idle": idle}
    for phase in ("prefill", "decode"):
        choose[phase] = best(phase, lambda p: (per_point[p][0].phase_energy_j[phase]
                                               - idle_w(idle) * per_point[p][0].phase_time_s[phase])
                             / max(per_point[p][0].requests, 1))
    every = [p for p, (_, ok) in per_point.items() if all(ok.values())] or [maxn]
    static = min(every, key=lambda p: per_point[p][0].energy_per_token_j)
    return {"oracle": choose, "best_static": {"prefill": static, "decode": static}}
