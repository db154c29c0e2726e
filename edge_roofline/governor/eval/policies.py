"""What each policy does during a run: a static point, a point per phase chosen in hindsight,
or the ``Governor`` core fed only what a real device shows."""

from __future__ import annotations

from typing import Any, Mapping

from edge_roofline.platforms.base import OperatingPoint

from ..config import GovernorConfig
from ..core import Governor
from .simulate import Controller

POLICIES = ("maxn", "default", "best_static", "oracle", "oracle_margin", "governor")


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
