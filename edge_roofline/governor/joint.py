"""Several streams on one operating point: each stream's latency with the others' contention,
and the module's total power from one shared energy model.

Contention (what it assumes): the GPU is time-sliced between processes, so while stream ``i``
runs, the other streams' kernels take the GPU for the share of time they keep it busy,
``U = sum_j rate_j x gpu_time_j`` (their predicted GPU time at that point). Stream ``i``'s GPU
part stretches by ``1 / (1 - U)`` (processor sharing); its host part (launches, the CPU-side
constant) does not. With one stream ``U = 0`` and nothing changes. The phase streams of one language model
(``StreamConfig.phase`` on one stats topic) take turns on one engine: they never contend with
each other, and a decode phase issues its next step as the last one ends, so its share (near 1
while a long answer streams) is the model being busy, not a queue that grows: it stretches the
other streams but is not held under ``MAX_UTILISATION``. The DLA and the EMC are not
modelled as separate queues: DRAM traffic slows a stream only through the measured calibration,
and total utilisation above ``MAX_UTILISATION`` makes a point infeasible. Each stream's own input
queue (waiting behind its previous inference) is priced on its contended latency (queueing.py).
Calibration removes the contention a stream saw before fitting its own predictor, so that
predictor describes the stream alone.

Energy: module power at a point is ``idle(p) + busy(p) x sum_i rate_i x latency_i + switching``,
the single-stream energy model (predictor.py) times the rate, summed over the streams. Its
coefficients describe the device, so one Bayesian fit serves every mix of streams; with one
stream it is the single-stream fit exactly (power = energy per inference x rate). Outside the
catalogue (no clock tables) power is learned per point (``PointwisePower``).
"""

from __future__ import annotations

import math
from dataclasses import dataclass, replace


from edge_roofline.platforms.base import OperatingPoint
from edge_roofline.roofline.devices import DeviceSpec

from .pointwise import PointwisePower, PointwisePredictor
from .points import effective_clocks
from .policy import JointPrediction, StreamPrediction
from .rules import Dominance
from .streams import Stream, StreamWindow, answer_rate_hz
from .predictor import (ENERGY_MODEL_REL_ERR, BayesLinear, PointDynamics, Prediction, Predictor, busy_power_w,
                        energy_prior, point_dynamics, power_terms, sustained_rate)

MAX_CONTENTION = 0.95  # other streams' GPU share above this: the stream would starve


@dataclass(frozen=True)
class StreamLoad:
    """One active stream at one point: its own (uncontended) latency and what it asks of the
    GPU, at its input rate."""

    name: str
    solo: Prediction  # latency alone on the device
    gpu_time_s: float  # the GPU part of that latency
    rate_hz: float  # inferences per second (capped by what the point sustains)
    predictor: Predictor | PointwisePredictor
    engine: str = ""  # phase streams of one language model share it (their stats topic); "" none
    phase: str = ""  # StreamConfig.phase
    answer_rate_hz: float | None = None  # a decode stream's steps per second over time (streams.answer_rate_hz)

    @property
    def power_rate_hz(self) -> float:
        """The rate its energy is spent at over time (a decode stream's bursts averaged out)."""
        return self.rate_hz if self.answer_rate_hz is None else min(self.answer_rate_hz, self.rate_hz)


def contention(loads: list[StreamLoad]) -> tuple[list[float], float]:
    """Per stream, the factor its GPU part stretches by; and the GPU utilisation held under
    MAX_UTILISATION (decode phases left out: see the module's docstring). A stream whose share
    is unknown (learned by measuring, nothing measured yet) adds none: a NaN here would make
    every stream's prediction NaN, and keep its own first window from calibrating."""
    shares = [min(share, 1.0) if math.isfinite(share := s.rate_hz * s.gpu_time_s) else 0.0 for s in loads]

    def others(i: int) -> float:
        me = loads[i]
        return sum(share for j, (share, s) in enumerate(zip(shares, loads))
                   if j != i and not (me.engine and s.engine == me.engine))

    total = sum(share for share, s in zip(shares, loads) if s.phase != "decode")
    return [1.0 / (1.0 - min(others(i), MAX_CONTENTION)) for i in range(len(loads))], total


def contended(load: StreamLoad, stretch: float) -> tuple[float, float]:
    """(latency, std) of a stream whose GPU part stretches by ``stretch``."""
    return load.solo.latency_s + load.gpu_time_s * (stretch - 1.0), load.solo.latency_std_s * stretch


def uncontended(measured_s: float, gpu_time_s: float, stretch: float) -> float:
    """What a stream measured ``measured_s`` under ``stretch`` would take alone (never less than
    if all of it were GPU time)."""
    return max(measured_s - gpu_time_s * (stretch - 1.0), measured_s / stretch)


class JointEnergy:
    """Total module power at a point for a set of streams (``device`` None: per point)."""

    def __init__(self, device: DeviceSpec | None) -> None:
        self.device = device
        self.model: BayesLinear | None = None
        self.pointwise = PointwisePower() if device is None else None
        self._dynamics: dict[OperatingPoint, PointDynamics] = {}

    @property
    def has_energy(self) -> bool:
        """Some power was measured (the governor waits for it)."""
        return self.pointwise.has_energy if self.pointwise is not None else self.model is not None

    def _vector(self, point: OperatingPoint, streams: list[tuple[Predictor | PointwisePredictor, float, float]]):
        """Power features: (predictor, latency, rate) per stream."""
        if point not in self._dynamics:
            self._dynamics[point] = point_dynamics(self.device, effective_clocks(self.device, point))
        dyn = self._dynamics[point]
        busy = flops = bytes_ = 0.0
        for predictor, latency_s, rate_hz in streams:
            busy += rate_hz * latency_s
            if isinstance(predictor, Predictor):  # switching energy needs the model's FLOPs and bytes
                f = predictor.workload.features(point)
                flops += rate_hz * f.flop_energy
                bytes_ += rate_hz * f.byte_energy
        return power_terms(dyn, 1.0, busy, flops, bytes_), dyn

    def update(self, point: OperatingPoint, power_w: float,
               streams: list[tuple[Predictor | PointwisePredictor, float, float]]) -> None:
        """A measured window: mean power with ``streams`` = (predictor, mean latency, rate)."""
        if not (math.isfinite(power_w) and power_w > 0) or not streams:
            return
        rates = [(p, lat, sustained_rate(rate, lat)) for p, lat, rate in streams]
        if self.pointwise is not None:
            self.pointwise.update(point, power_w, sum(r * lat for _, lat, r in rates))
            return
        x, _ = self._vector(point, rates)
        if self.model is None:
            self.model = energy_prior(power_w)
        self.model.update(x, power_w, (ENERGY_MODEL_REL_ERR * power_w) ** 2)

    def forget(self, fraction: float) -> None:
        if self.pointwise is not None:
            self.pointwise.forget(fraction)
        elif self.model is not None:
            self.model.forget(fraction)

    def predict(self, point: OperatingPoint, loads: list[StreamLoad]) -> tuple[float, float]:
        """(power W, std) with ``loads`` running at ``point``. Contention stretches latency, not
        GPU work, so the solo latencies drive the busy terms."""
        if self.pointwise is not None:
            return self.pointwise.predict(point, sum(s.power_rate_hz * s.solo.latency_s for s in loads))
        if self.model is None:
            return math.nan, math.inf
        x, dyn = self._vector(point, [(s.predictor, s.solo.latency_s, s.power_rate_hz) for s in loads])
        mean, var = self.model.predict(x)
        mean = max(mean, 1e-9)
        # The latency's uncertainty reaches power through the busy terms.
        busy_w = busy_power_w(self.model.mean, dyn)
        latency_var = sum((s.power_rate_hz * busy_w * s.solo.latency_std_s) ** 2 for s in loads)
        return mean, math.sqrt(var + (ENERGY_MODEL_REL_ERR * mean) ** 2 + latency_var)


def stream_loads(point: OperatingPoint, streams: list[tuple[Stream, StreamWindow | None]]) -> list[StreamLoad]:
    """Each stream alone at ``point``, at its measured rate, else the rate of its last inferences
    (a phase stream gives one time to first token per request: too few for a window at one
    point for a long while, but its rate does not depend on the point), else the last rate its
    predictor saw."""
    loads = []
    for s, window in streams:
        rate_hz = window.rate_hz if window is not None else s.calibrated_rate_hz or \
            (1.0 / s.last_gap_s if s.last_gap_s > 0 else None)
        solo = s.predictor.predict(point, rate_hz)
        loads.append(StreamLoad(s.name, solo, s.predictor.gpu_time_s(point), solo.input_rate_hz, s.predictor,
                                engine=s.config.engine, phase=s.config.phase,
                                answer_rate_hz=answer_rate_hz(s, [o for o, _ in streams])))
    return loads


def predict_point(point: OperatingPoint, streams: list[tuple[Stream, StreamWindow | None, float]],
                  energy: JointEnergy) -> JointPrediction:
    """Every stream at ``point`` with the others' contention, and the power; ``streams``:
    (stream, its window, its latency limit)."""
    loads = stream_loads(point, [(s, w) for s, w, _ in streams])
    stretches, utilisation = contention(loads)
    power_w, power_std_w = energy.predict(point, loads)
    preds = []
    for (s, _, limit_s), load, stretch in zip(streams, loads, stretches):
        latency_s, std_s = contended(load, stretch)
        preds.append(StreamPrediction(s.name, latency_s, std_s, load.rate_hz, limit_s, s.jitter_ratio,
                                      s.model_rel_error, s.config.percentile, s.queue, s.config.target_latency_s,
                                      s.bursts.bursts))
    # One stream alone is held by its own queue (StreamPrediction.meets).
    return JointPrediction(point, tuple(preds), power_w, power_std_w, utilisation if len(loads) > 1 else 0.0)


def predict_candidates(candidates: list[OperatingPoint], dominance: Dominance,
                       streams: list[tuple[Stream, StreamWindow | None, float]],
                       energy: JointEnergy, measured: set[str] = frozenset(), *,
                       late_window_s: float, counted_from_s: float = -math.inf) -> list[JointPrediction]:
    """``predict_point`` at every candidate, each stream's latency made monotone in the clocks
    and the power at least that of every ``measured`` point it dominates (rules.py), its bursts
    no point avoids held against none while it excuses them (``excuses_bursts``)."""
    joint = [predict_point(p, streams, energy) for p in candidates]
    per_stream = [burst_room(burst_floored(dominance.envelope([j.streams[k] for j in joint]),
                                           excuses_bursts(s, late_window_s)), s, late_window_s, counted_from_s)
                  for k, (s, _, _) in enumerate(streams)]
    powers_w = dominance.power_envelope([j.power_w for j in joint], measured)
    floors_w = dominance.power_envelope([j.power_w if j.point.name in measured else 0.0 for j in joint], measured)
    return [JointPrediction(j.point, tuple(col[i] for col in per_stream), powers_w[i], j.power_std_w,
                            j.gpu_utilisation, floors_w[i]) for i, j in enumerate(joint)]


def excuses_bursts(stream: Stream, late_window_s: float) -> bool:
    """Whether the bursts no point avoids are held against no point for ``stream``: not while its
    queue drains a backlog (its latest inference late), nor while its late budget over
    ``late_window_s`` is spent (what bursts made late counts, and no point is excused more): then
    every late inference counts, and the least late point drains the queue and spares the budget."""
    return not stream.late_now and stream.late_budget(stream.last_seen_s, late_window_s) >= 0


def burst_floored(column: list[StreamPrediction], excused: bool = True) -> list[StreamPrediction]:
    """One stream at every candidate, each told the share bursts make late at the least late of
    them (the fastest one that sustains the rate): no point avoids it (``StreamPrediction.burst_floor``);
    unchanged where they are not ``excused`` (``excuses_bursts``)."""
    if not excused:
        return column
    shares = [s.bursts.late_share(s.latency_s, s.input_rate_hz, s.target_s, s.queue.self_paced) for s in column]
    floor = min((x for x in shares if math.isfinite(x)), default=0.0)
    return [replace(s, burst_floor=floor) for s in column] if floor else column


def burst_room(column: list[StreamPrediction], stream: Stream, late_window_s: float,
               counted_from_s: float = -math.inf) -> list[StreamPrediction]:
    """One stream at every candidate, each told the late inferences its bursts may still make
    over ``late_window_s`` (``StreamPrediction.bursts_fit_budget``): the stream's late budget
    left, never under what they make at the least late candidate (no point avoids that). Late
    ones before ``counted_from_s`` (the current workload's grace ended) are another workload's:
    a 200 Hz phase's do not spend a 10 Hz one's budget of 3 (agx_small_model_switch). One late
    inference per window is always room (as a slow stream can always afford one miss per window:
    verdicts.unaffordable_miss): a spent budget of 4 at 15 Hz does not force the fastest point."""
    lates = [s.bursts.window_late(s.latency_s, s.input_rate_hz, s.target_s, late_window_s, s.queue.self_paced)
             for s in column]
    floor = min((x for x in lates if math.isfinite(x)), default=0.0)
    budget = stream.late_budget(stream.last_seen_s, late_window_s, counted_from_s=counted_from_s)
    room = max(budget, 1.0) + floor
    return [replace(s, burst_room=room, late_window_s=late_window_s) for s in column]


def predict_all(current: OperatingPoint, candidates: list[OperatingPoint], dominance: Dominance,
                streams: list[tuple[Stream, StreamWindow | None, float]], energy: JointEnergy,
                measured: set[str] = frozenset(), *,
                late_window_s: float,
                counted_from_s: float = -math.inf) -> tuple[dict[str, JointPrediction], JointPrediction]:
    """Every candidate's prediction by name (``predict_candidates``) and ``current``'s (alone where
    it is no candidate)."""
    by_name = {q.point.name: q for q in predict_candidates(candidates, dominance, streams, energy, measured,
                                                           late_window_s=late_window_s, counted_from_s=counted_from_s)}
    return by_name, by_name.get(current.name) or predict_point(current, streams, energy)
