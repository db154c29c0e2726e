"""A phase's workload: the model's cost at the phase's batch (analysed once per process) and
its roofline at the device's max-clock preset, which is what the governor is given."""

from __future__ import annotations

from dataclasses import dataclass

from edge_roofline.roofline.ceilings import max_clock_preset, preset_ceilings
from edge_roofline.roofline.costs import ModelCost
from edge_roofline.roofline.model import RooflineAnalysis, analyze_roofline

from .scenario import Phase, Scenario


@dataclass(frozen=True)
class Workload:
    cost: ModelCost
    analysis: RooflineAnalysis  # at the device's max-clock preset (what the governor is given)


_COSTS: dict[tuple[str, str, int], ModelCost] = {}  # model analysis takes ~1 s: once per process


def workload(scenario: Scenario, phase: Phase) -> Workload:
    from edge_roofline.models import zoo
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
