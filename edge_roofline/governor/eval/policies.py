"""What each policy does during a run: a static point, a point per phase chosen in hindsight,
or the ``Governor`` core fed only what a real device shows."""

from __future__ import annotations

from typing import Any, Mapping

from edge_roofline.platforms.base import OperatingPoint

from ..config import GovernorConfig
from ..core import Governor
from ..model_follow import ModelFollower
from .simulate import Controller, model_id
from .workload import workload

POLICIES = ("maxn", "default", "best_static", "oracle", "oracle_margin", "governor")


class StaticController(Controller):
    """Apply one point at start (``None``: keep the preset the board booted in)."""

    def __init__(self, point: OperatingPoint | None = None) -> None:
        super().__init__()
        self.point = point

    def start(self, platform, clock, scenario, segment) -> None:
        if self.point is not None:
            platform.apply(self.point)


class ScheduleController(Controller):
    """Apply a given point per phase (the hindsight oracle)."""

    def __init__(self, points: list[OperatingPoint]) -> None:
        super().__init__()
        self.points = points
        self.switches = 0

    def start(self, platform, clock, scenario, segment) -> None:
        self.platform = platform
        platform.apply(self.points[0])

    def phase_change(self, index, segment, now_s) -> None:
        if self.points[index] != self.points[index - 1]:
            self.platform.apply(self.points[index])
            self.switches += 1

    def finish(self) -> int:
        return self.switches


class GovernorController(Controller):
    """The governor core, fed only what a real device shows: power samples, each stream's
    latencies and the model id its stats carry. A model switch reaches the governor through the
    node path: a ``ModelFollower`` per stream sees the new id and analyses it; on simulated time
    the controller waits for that analysis at its next step (reproducible runs)."""

    def __init__(self, overrides: Mapping[str, Any] | None = None) -> None:
        super().__init__()
        self.overrides = dict(overrides or {})
        self.gov: Governor | None = None
        self.followers: dict[str, ModelFollower] = {}

    def start(self, platform, clock, scenario, segment) -> None:
        first = {s.name: s.phases[0] for s in scenario.stream_specs}
        targets = [{"name": n, "target_latency_ms": p.target_latency_ms, "percentile": p.percentile}
                   for n, p in first.items()]
        # the single-stream form keeps its single-stream configuration (no streams list)
        form = {"streams": targets} if scenario.multi_stream else {k: v for k, v in targets[0].items() if k != "name"}
        config = GovernorConfig.from_dict({**scenario.governor, **self.overrides, **form, "state_path": ""})
        analyses = {model_id(p): workload(scenario, p).analysis for s in scenario.stream_specs for p in s.phases}
        self.gov = Governor(platform, config, {n: analyses[model_id(p)] for n, p in first.items()}, clock)
        for name, phase in first.items():
            self.followers[name] = ModelFollower(analyses.__getitem__)
            self.followers[name].wanted = model_id(phase)  # the model the governor was started with

    def phase_change(self, index, segment, now_s) -> None:
        for name, phase in segment.active:
            cfg = self.gov.streams[name].config
            if (cfg.target_latency_ms, cfg.percentile) != (phase.target_latency_ms, phase.percentile):
                self.gov.set_target(phase.target_latency_ms, phase.percentile, stream=name)

    def observe_inference(self, latency_s, now_s, stream, model_id) -> None:
        self.followers[stream].observe(model_id)
        if self.gov.observe_inference(latency_s, now_s, stream=stream):
            self.step(now_s)  # as the node does (nodes/governor.py)

    def observe_power(self, power_w, now_s, temperatures_c) -> None:
        self.gov.observe_power(power_w, now_s, temperatures_c)

    def step(self, now_s) -> None:
        for name, follower in self.followers.items():
            follower.wait()
            change = follower.poll()
            if change is not None:
                self.gov.set_model(change.analysis, change.model_id, change.note, stream=name)
        decision = self.gov.step(now_s)
        if decision.applied:
            self.decisions.append((now_s, decision.point.name, f"{decision.state}: {decision.reason}"))

    def finish(self) -> int:
        for follower in self.followers.values():
            follower.close()
        self.gov.shutdown()
        return self.gov.switches
