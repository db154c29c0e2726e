"""Hindsight choices (``best_static``, ``oracle``): a short simulation of every candidate point
per distinct phase workload (cached). The chosen points are then run over the full scenario
like every other policy, so all reported numbers are measured the same way."""

from __future__ import annotations

import math
from dataclasses import dataclass, replace

import numpy as np

from edge_roofline.platforms.base import OperatingPoint

from ..config import GovernorConfig
from ..points import candidate_points
from ..policy import MAX_UTILISATION
from .policies import StaticController
from .scenario import Phase, Scenario
from .score import MAX_VIOLATION_RATE
from .simulate import boot, maxn_mode_id, simulate

HINDSIGHT_WARMUP_S = 1.0  # per candidate point and phase workload: run this long first ...
HINDSIGHT_MEASURE_S = 3.0  # ... then measure this long


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


def candidates(scenario: Scenario) -> list[OperatingPoint]:
    """The governor's candidate set on the board as the governor finds it (booted in MAXN)."""
    _, platform, _ = boot(scenario, maxn_mode_id(scenario))
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
