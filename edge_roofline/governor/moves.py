"""What moving the board costs: which clock domains a move changes, how long each kind of move
takes to show in the latencies (learned online from a conservative prior), and whether a move
for energy pays for its transient.

A new clock does not take effect at once: on a Jetson the CPU, GPU and EMC clocks each take
their own time to settle, the clocks run at the slower of old and new meanwhile, the first
inference after an EMC change stalls, and an nvpmodel preset change runs a process. A latency
sample whose inference started before the move settled ran (partly) at neither point: it is the
move's, never evidence about the point moved to.
"""

from __future__ import annotations

import math
from collections import deque
from dataclasses import dataclass, field

import numpy as np

from edge_roofline.platforms.base import OperatingPoint
from edge_roofline.roofline.devices import DeviceSpec

from .points import effective_clocks

DOMAINS = ("cpu", "cores", "gpu", "emc", "preset")
SETTLE_OBSERVATIONS = 15  # the last this many observations per domain are kept (median of them)
MIN_OBSERVATIONS = 3  # fewer: the prior holds
SETTLE_FLOOR = 0.25  # a learned settle time never goes below this fraction of its prior
# The median observed is raised by this: a sample that started just before a move showed can
# look settled (it ran mostly at the new clocks), so observations run a little short.
SETTLE_MARGIN = 1.25
# Samples kept per move to learn its settle time from: the first ones after it, until this many
# started after the transient is surely over (twice the estimate).
SETTLED_SAMPLES = 8
BACKLOG_SAMPLES = 8  # samples after a move settled that queued behind its transient: still the move's


def domains_changed(device: DeviceSpec | None, old: OperatingPoint, new: OperatingPoint) -> frozenset[str]:
    """The domains a move from ``old`` to ``new`` changes (a power limit moves the GPU clock)."""
    changed = {"preset"} if old.nvpmodel_id != new.nvpmodel_id else set()
    if device is not None:
        a, b = effective_clocks(device, old), effective_clocks(device, new)
        pairs = {"cpu": (a.cpu_freq_hz, b.cpu_freq_hz), "cores": (a.cpu_online_cores, b.cpu_online_cores),
                 "gpu": (a.gpu_freq_hz, b.gpu_freq_hz), "emc": (a.emc_freq_hz, b.emc_freq_hz)}
    else:
        pairs = {"cpu": (old.cpu_max_freq_hz, new.cpu_max_freq_hz),
                 "cores": (old.cpu_online_cores, new.cpu_online_cores),
                 "gpu": ((old.gpu_max_freq_hz, old.power_limit_w), (new.gpu_max_freq_hz, new.power_limit_w)),
                 "emc": (old.emc_max_freq_hz, new.emc_max_freq_hz)}
    changed.update(name for name, (x, y) in pairs.items() if x != y)
    return frozenset(changed)


@dataclass
class Move:
    """One move: when, which domains, the samples it owns and the first ones after it (to learn
    its settle time)."""

    time_s: float
    domains: frozenset[str]
    settle_s: float  # the settle time assumed when it was made
    # stream: (start - move time, latency) of the first samples after it; None once looked at
    samples: dict[str, list[tuple[float, float]]] | None = field(default_factory=dict)
    backlog_until_s: dict[str, float] = field(default_factory=dict)  # stream: its samples of the move end here
    backlog_left: dict[str, int] = field(default_factory=dict)  # stream: samples queued behind them still owned
    backlog_latency_s: dict[str, float] = field(default_factory=dict)  # stream: its last backlog sample's latency

    def settled_s(self) -> float:
        """When it settled (no domain changed: the governor's start, before any sample)."""
        return self.time_s + self.settle_s if self.domains else -math.inf

    def owns(self, stream: str, start_s: float, timestamp_s: float) -> bool:
        """The sample is the move's: it started before the move settled, or it queued behind
        one that did while that backlog drains (each latency below the one before it, up to
        BACKLOG_SAMPLES of them): a point that cannot keep up queues for ever, and that is its own."""
        settled_s = self.settled_s()
        left = self.backlog_left.get(stream, BACKLOG_SAMPLES)
        latency_s = timestamp_s - start_s
        draining = latency_s < self.backlog_latency_s.get(stream, math.inf)
        if start_s < settled_s or (start_s < self.backlog_until_s.get(stream, -math.inf) and left > 0 and draining):
            self.backlog_left[stream] = left - (start_s >= settled_s)
            self.backlog_until_s[stream] = max(self.backlog_until_s.get(stream, -math.inf), timestamp_s)
            self.backlog_latency_s[stream] = latency_s
            return True
        self.backlog_left[stream] = 0  # the backlog has drained, or grows: what follows is the point's
        return False

    def learn(self, stream, start_s: float, latency_s: float, settle: "SettleTimes") -> None:
        """Keep the first samples after the move until one stream (streams.Stream) shows when it
        settled, and whether its first inference after the move was late (``Stalls``)."""
        if not self.domains or self.samples is None:
            return
        seen = self.samples.setdefault(stream.name, [])
        seen.append((start_s - self.time_s, latency_s))
        if sum(1 for t, _ in seen if t >= 2 * self.settle_s) >= SETTLED_SAMPLES:
            observed = observed_settle_s(seen, self.settle_s)
            if observed is not None:
                settle.observe(self.domains, observed)
            stream.stalls.observe(self.domains, seen, 2 * self.settle_s, stream.config.target_latency_s)
            self.samples = None  # one look per move


class SettleTimes:
    """Per domain, how long a move takes to show: the prior until MIN_OBSERVATIONS moves have
    shown it, then the median of the observed ones (x SETTLE_MARGIN), bounded to
    [SETTLE_FLOOR x prior, ceiling].
    A move of several domains takes the longest of theirs (they settle side by side); a preset
    change adds its own."""

    def __init__(self, priors_s: dict[str, float], ceiling_s: float) -> None:
        self.priors_s = dict(priors_s)
        self.ceiling_s = ceiling_s
        self._seen: dict[str, deque[float]] = {d: deque(maxlen=SETTLE_OBSERVATIONS) for d in DOMAINS}

    def domain_s(self, domain: str) -> float:
        prior = self.priors_s[domain]
        seen = self._seen[domain]
        if len(seen) < MIN_OBSERVATIONS:
            return prior
        return float(min(max(SETTLE_MARGIN * np.median(seen), SETTLE_FLOOR * prior), max(self.ceiling_s, prior)))

    def of(self, domains: frozenset[str]) -> float:
        clocks = max((self.domain_s(d) for d in domains if d != "preset"), default=0.0)
        return clocks + (self.domain_s("preset") if "preset" in domains else 0.0)

    def observe(self, domains: frozenset[str], observed_s: float) -> None:
        """A move of ``domains`` showed after ``observed_s``: the domain assumed slowest of them
        took that long (a preset change's share is not told apart: it teaches nothing)."""
        clocks = [d for d in DOMAINS if d in domains and d != "preset"]  # ties: DOMAINS order, not hash order
        if not clocks or "preset" in domains or not math.isfinite(observed_s):
            return
        self._seen[max(clocks, key=self.domain_s)].append(max(observed_s, 0.0))

    def table(self) -> dict[str, float]:
        return {d: self.domain_s(d) for d in DOMAINS}


class Stalls:
    """Per domain, the share of one stream's moves whose first inference started after the move was late
    while the point moved to meets its target: a one-off cost of the move on top of its settle
    time (on a Jetson the first inference after an EMC change stalls, however short the settle,
    and at a tight target that is a late one). It depends on the stream's target, so each stream
    learns its own; a domain no move of it has shown yet costs nothing."""

    def __init__(self) -> None:
        self._seen: dict[str, deque[float]] = {d: deque(maxlen=SETTLE_OBSERVATIONS) for d in DOMAINS}

    def observe(self, domains: frozenset[str], samples: list[tuple[float, float]], settled_from_s: float,
                target_s: float) -> None:
        """``samples``: (start after the move, latency); those from ``settled_from_s`` on are at
        the point moved to. A point that misses teaches nothing (its first one is late anyway)."""
        settled = [lat for start, lat in samples if start >= settled_from_s]
        after = [(start, lat) for start, lat in samples if start > 0]  # one that started before ran at the old point
        if not settled or np.median(settled) > target_s or not after:
            return
        first_late = float(min(after)[1] > target_s)
        for d in domains:
            self._seen[d].append(first_late)

    def late_per_move(self, domains: frozenset[str]) -> float:
        """The late inferences one move of ``domains`` is expected to cost this way."""
        return max((float(np.mean(self._seen[d])) for d in domains if self._seen[d]), default=0.0)


def observed_settle_s(samples: list[tuple[float, float]], settle_s: float) -> float | None:
    """When a move showed in one stream's latencies: ``samples`` are (start after the move,
    latency). The settled level is the median of the samples that started after twice the
    assumed settle time; the move showed at the start of the first sample after the last one off
    that level (beyond 4 robust deviations, at least 5 %). None: too few samples, or no sample
    off the level (a move down shows at once: the clocks run at the slower of old and new)."""
    late = [lat for start, lat in samples if start >= 2 * settle_s]
    early = sorted((start, lat) for start, lat in samples if start < 2 * settle_s)
    if len(late) < SETTLED_SAMPLES // 2 or not early:
        return None
    level = float(np.median(late))
    tolerance = max(4 * 1.4826 * float(np.median(np.abs(np.array(late) - level))), 0.05 * level)
    off = [i for i, (_, lat) in enumerate(early) if abs(lat - level) > tolerance]
    if not off:
        return None
    after = early[off[-1] + 1:]
    return after[0][0] if after else 2 * settle_s


def worth_moving(saving_w: float, horizon_s: float, transient_s: float, power_w: float, moves: int = 1) -> bool:
    """A move for energy pays when its saving over the horizon it will be held for exceeds the
    energy its transients may waste: ``moves`` transients of ``transient_s`` each at up to
    ``power_w`` (the clocks run at the slower of both points, the work at the faster's power
    at worst) -- an exploration counts the move back too."""
    return saving_w * horizon_s > moves * transient_s * power_w


def unpaid(current, target, exploring: bool, horizon_s: float, transient_s: float) -> str:
    """Why a move for energy from ``current`` to ``target`` (policy.JointPrediction) would not
    pay ("": it would): its predicted saving (an exploration's at the optimistic end of its
    uncertainty) held for ``horizon_s`` against its transients' cost."""
    saving_w = current.power_w - target.power_w + (target.power_std_w if exploring else 0.0)
    moves = 2 if exploring else 1  # an exploration may move back
    if worth_moving(saving_w, horizon_s, transient_s, max(current.power_w, target.power_w), moves):
        return ""
    return (f"holding: moving to {target.point.name} would save {saving_w:.2f} W over {horizon_s:.0f} s, "
            f"less than {moves} transient(s) of {transient_s * 1e3:.0f} ms cost")
