"""A scripted platform whose moves take time, with this test suite's own physics (not the
product's virtual board): after a move each changed domain settles in its own time, the clocks
run at the slower of old and new until then, and the first inference after a memory-clock
change stalls. A driver runs inferences on it (queued behind each other, each timed at its
start), power readings and steps, and steps at once on a late inference as the node does."""

import math
import random

from edge_roofline.platforms.base import OperatingPoint

from .fake_law import DEVICE, LawPlatform, law_latency_s, law_power_w

SETTLE_S = {"cpu": 0.015, "cores": 0.015, "gpu": 0.03, "emc": 0.07}  # this physics', not the governor's prior
STALL_S = 0.003  # the first inference after an EMC change


def _caps(p: OperatingPoint) -> dict:
    return {"cpu": p.cpu_max_freq_hz or DEVICE.cpu_max_freq_hz, "gpu": p.gpu_max_freq_hz or DEVICE.gpu_max_freq_hz,
            "emc": p.emc_max_freq_hz or DEVICE.emc_max_freq_hz, "cores": p.cpu_online_cores or 12}


class SettlePlatform(LawPlatform):
    def __init__(self, clock, start=OperatingPoint("MAXN", 0), settle_s=None):
        super().__init__(start)
        self.clock = clock
        self.settle_s = dict(SETTLE_S if settle_s is None else settle_s)
        self.previous = start
        self.moved_at_s = -math.inf
        self.transient_s = 0.0
        self.stall_pending = False
        self.moves: list[tuple[float, float]] = []  # (time, this physics' settle time of the move)

    def apply(self, point):
        old, new = _caps(self.current), _caps(point)
        changed = [d for d in old if old[d] != new[d]]
        super().apply(point)
        self.previous = self.applied[-2] if len(self.applied) > 1 else self.found
        self.moved_at_s = self.clock.now_s()
        self.transient_s = max((self.settle_s[d] for d in changed), default=0.0)
        self.stall_pending = "emc" in changed
        self.moves.append((self.moved_at_s, self.transient_s))

    def effective(self, t_s: float) -> OperatingPoint:
        """The point the board runs at ``t_s``: each clock at the slower of old and new while
        the move settles."""
        if t_s >= self.moved_at_s + self.transient_s:
            return self.current
        a, b = _caps(self.previous), _caps(self.current)
        return OperatingPoint("transient", 0, min(a["cores"], b["cores"]), min(a["cpu"], b["cpu"]),
                              min(a["gpu"], b["gpu"]), min(a["emc"], b["emc"]))

    def latency_s(self, start_s: float) -> float:
        lat = law_latency_s(self.effective(start_s), self.scale)
        if self.stall_pending and start_s >= self.moved_at_s:
            self.stall_pending = False
            lat += STALL_S
        return lat


def drive_settle(gov, platform, clock, duration_s, rate_hz=40.0, step_s=0.1, seed=0, latency_of=None,
                 model_id=""):
    """Run ``duration_s`` of simulated time; returns (time, decision) of every step.
    ``latency_of(start_s, latency_s)``: a latency changed by the test."""
    rng = random.Random(seed)
    decisions = []
    end_s = clock.now_s() + duration_s
    arrival_s = free_s = clock.now_s()
    next_tick_s = clock.now_s() + step_s
    while True:
        start_s = max(arrival_s, free_s)
        lat = platform.latency_s(start_s) * math.exp(rng.gauss(0, 0.03))
        if latency_of is not None:
            lat = latency_of(start_s, lat)
        done_s = start_s + lat
        while next_tick_s <= min(done_s, end_s):
            clock.advance(next_tick_s - clock.now_s())
            duty = min(1.0, lat * rate_hz)
            gov.observe_power(law_power_w(platform.effective(next_tick_s), duty, platform.scale), next_tick_s,
                              {"tj-thermal": 50.0})
            decisions.append((next_tick_s, gov.step(next_tick_s)))
            next_tick_s += step_s
        if done_s > end_s:
            return decisions
        clock.advance(done_s - clock.now_s())
        if gov.observe_inference(done_s - arrival_s, done_s, model_id=model_id) if model_id else \
                gov.observe_inference(done_s - arrival_s, done_s):
            decisions.append((done_s, gov.step(done_s)))
        free_s = done_s
        arrival_s += 1.0 / rate_hz
