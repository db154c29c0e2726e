"""Which point to run: the lowest predicted module power whose predicted latency percentile
meets every active stream's target with margin, with measured-percentile feedback, hysteresis
and a bounded amount of exploration of uncertain points. (At the given input rates, least power
is least energy over time; with one stream it ranks points as energy per inference does.)"""

from __future__ import annotations

import math
from dataclasses import dataclass, replace
from typing import Callable

from edge_roofline.platforms.base import OperatingPoint

from .queueing import ONE_OUTLIER, TAIL_SHARE, Bursts, QueueShape, percentile_latency_s

# Several streams share the GPU: their GPU time per second together above this leaves one
# stream starved (joint.py stretches each stream's GPU part by the others' share). One stream's
# own input queue is priced by the queueing model instead (queueing.py): the utilisation margin
# it needs follows its measured tail.
MAX_UTILISATION = 0.95
# A step down one axis is tried while its predicted percentile is within this many times the
# model's demonstrated error of the limit (the error it made at the points it has visited).
DESCENT_ERRORS = 2.0
# A probe down an axis the measurements have not isolated is tried while its predicted latency
# is within this many of the prediction's standard deviations of meeting every target (a one-
# sided ~98 % bound: the model's term for that axis is little more than its prior there).
PROBE_SIGMAS = 2.0


@dataclass(frozen=True)
class StreamPrediction:
    """One stream's predicted latency at a point (contention included) and what it must meet."""

    name: str
    latency_s: float  # mean latency per inference
    latency_std_s: float  # uncertainty of that mean (model, not jitter)
    input_rate_hz: float  # the rate, capped by what the point sustains
    limit_s: float  # target x (1 - margin)
    jitter_ratio: float  # measured service-time percentile / mean
    model_rel_error: float = 0.0  # how far off the model was at points it had not measured yet
    percentile: float = 95.0  # the stream's target percentile
    queue: QueueShape = QueueShape()  # its measured service and arrival variability
    target_s: float = math.inf  # the target itself (limit_s is under it by the margin)
    bursts: Bursts = Bursts()  # its rare slow inferences, as measured
    burst_floor: float = 0.0  # the share bursts make late that no point avoids (joint.burst_floored)
    # The late inferences bursts may still make over the late window: the late budget left and
    # what they make at the least late point (no point avoids it; joint.burst_room).
    burst_room: float = math.inf
    late_window_s: float = math.inf

    def burst_late_share(self, latency_s: float) -> float:
        """The share of inferences the bursts make late at a mean service time ``latency_s``, less
        what of ``burst_floor`` goes beyond half of TAIL_SHARE: bursts no point avoids price
        points against each other and never rule out every one; the fastest keeps half of
        TAIL_SHARE for its own tail."""
        share = self.bursts.late_share(latency_s, self.input_rate_hz, self.target_s, self.queue.self_paced)
        return max(share - max(self.burst_floor - TAIL_SHARE / 2, 0.0), 0.0)

    def percentile_s(self, latency_s: float | None = None, tail: bool = False, tail_share: float = TAIL_SHARE) -> float:
        """The latency percentile with a mean service time ``latency_s`` (default: the
        predicted one) at this input rate, waiting in the stream's queue included; ``tail``:
        the one at most ``tail_share`` of inferences exceed."""
        latency_s = self.latency_s if latency_s is None else latency_s
        return percentile_latency_s(latency_s, self.input_rate_hz, self.jitter_ratio, self.queue, self.percentile,
                                    tail, tail_share)

    def _fits(self, latency_s: float, reach: float = 1.0) -> bool:
        """``latency_s``'s percentile, waiting included, under the limit x ``reach``, and at most
        TAIL_SHARE of inferences over the target: those the bursts' backlogs make late, and the
        tail's; the model's error reaches the service time (``reach``) and, through it, the
        waiting."""
        latency_s /= reach
        left = TAIL_SHARE - self.burst_late_share(latency_s)
        return self.percentile_s(latency_s) <= self.limit_s and left > 0 and self.bursts_fit_budget(latency_s) and \
            self.percentile_s(latency_s, tail=True, tail_share=left) <= self.target_s

    def bursts_fit_budget(self, latency_s: float) -> bool:
        """The bursts expected over the late window and one more fit in what the late budget
        has left (``burst_room``): a point where one burst is a large lump of the budget is not
        held once a burst has drawn on it."""
        return self.bursts.window_late(latency_s, self.input_rate_hz, self.target_s, self.late_window_s,
                                       self.queue.self_paced) <= self.burst_room

    def bursts_fit(self) -> bool:
        """The bursts seen make less than TAIL_SHARE of inferences late here, less what those no
        point avoids take beyond half of it (``burst_late_share``; a point measured to meet its
        percentile before a burst was seen is no longer taken to meet it otherwise)."""
        return self.burst_late_share(self.latency_s) < TAIL_SHARE and self.bursts_fit_budget(self.latency_s)

    def outlier_exposed(self) -> bool:
        """One outlier not seen yet (OUTLIER_RATIO x the mean service time) leaves a backlog that makes at least one
        input late here: near saturation it drains at ``1 - rho`` of the rate, each input behind it late."""
        return ONE_OUTLIER.late_per_burst(self.latency_s, self.input_rate_hz, self.target_s,
                                          self.queue.self_paced) >= 1.0

    def within_model_error(self) -> bool:
        """The point may meet the target if the model is as wrong here as it has been, and at the
        predicted latency the input queue stays bounded (as ``may_meet``): the model's error is
        no reason to try a point whose queue would grow until the escape (a step down to 1.07 x
        the input period: 31 late at 60 Hz, nx_rate_changes@8)."""
        return self.sustainable() and self._fits(self.latency_s, 1.0 + DESCENT_ERRORS * self.model_rel_error)

    def sustainable(self) -> bool:
        """At the predicted mean service time the input queue is busy at most MAX_UTILISATION of the
        time (a self-paced loop has no queue): nearer saturation one outlier's backlog drains at what
        is left of the rate, each input behind it late."""
        return self.queue.self_paced or self.latency_s * self.input_rate_hz <= MAX_UTILISATION

    def may_meet(self) -> bool:
        """The point meets the target if its latency is PROBE_SIGMAS model uncertainties under
        the prediction (where a term of the model is unidentified, that uncertainty is wide),
        and at the predicted latency the input queue stays bounded: a miss there costs a few
        late inferences, not a queue that grows until the escape."""
        return (self.latency_s * self.input_rate_hz <= MAX_UTILISATION
                and self._fits(max(self.latency_s - PROBE_SIGMAS * self.latency_std_s, 1e-9)))

    def closeness(self) -> float:
        """The predicted percentile over the limit (under 1: predicted to meet it)."""
        return self.percentile_s() / self.limit_s

    def meets(self, optimistic: bool = False) -> bool:
        """Predicted percentile under the limit and the input rate sustainable; ``optimistic``
        drops the model uncertainty (a point that may meet the target)."""
        return self._fits(self.latency_s if optimistic else self.latency_s + self.latency_std_s)


@dataclass(frozen=True)
class JointPrediction:
    """Every active stream at one point, and the module's power there."""

    point: OperatingPoint
    streams: tuple[StreamPrediction, ...]
    power_w: float
    power_std_w: float
    gpu_utilisation: float = 0.0  # the streams' GPU time per second, together
    # The most a measured point it dominates draws: it draws no less (rules.Dominance.power_envelope).
    power_floor_w: float = 0.0

    @property
    def power_low_w(self) -> float:
        """The least power it may draw: one std under the prediction, never under its floor."""
        return max(self.power_w - self.power_std_w, self.power_floor_w)

    def meets(self, optimistic: bool = False) -> bool:
        return self.gpu_utilisation <= MAX_UTILISATION and all(s.meets(optimistic) for s in self.streams)

    def within_model_error(self) -> bool:
        return self.gpu_utilisation <= MAX_UTILISATION and all(s.within_model_error() for s in self.streams)

    def may_meet(self) -> bool:
        return self.gpu_utilisation <= MAX_UTILISATION and all(s.may_meet() for s in self.streams)

    def sustainable(self) -> bool:
        return self.gpu_utilisation <= MAX_UTILISATION and all(s.sustainable() for s in self.streams)

    @property
    def closeness(self) -> float:
        """The stream furthest over its limit by the prediction: its percentile over its limit."""
        return max((s.closeness() for s in self.streams), default=0.0)

    def bursts_fit(self) -> bool:
        return all(s.bursts_fit() for s in self.streams)

    def outlier_exposed(self) -> bool:
        return any(s.outlier_exposed() for s in self.streams)

    def stream(self, name: str) -> StreamPrediction | None:
        return next((s for s in self.streams if s.name == name), None)

    @property
    def binding(self) -> StreamPrediction | None:
        """The stream closest to its limit here (the one that limits how slow the point may be)."""
        return max(self.streams, key=lambda s: s.percentile_s(s.latency_s + s.latency_std_s) / s.limit_s,
                   default=None)


@dataclass(frozen=True)
class Choice:
    prediction: JointPrediction
    reason: str
    exploring: bool = False
    descent: bool = False  # an exploration one step down (see choose)
    insured: bool = False  # away from a point one outlier makes late, at no cost the model can tell (insured)


def no_nearer_above(predictions: list[JointPrediction], near: frozenset[str],
                    step_above: Callable[[str], set[str]]) -> set[str]:
    """The points one step above a point of ``near`` on a single axis that the model predicts no
    nearer the margin than it (more cores for GPU-bound streams): the same latency at more
    power. Measuring one tells nothing the point below did not, and a window measured under the
    limit there by chance would hold the dearer point: they count as measured."""
    by_name = {p.point.name: p for p in predictions}
    return {up for name in near if (base := by_name.get(name)) is not None and math.isfinite(base.closeness)
            for up in step_above(name) if (p := by_name.get(up)) is not None and p.closeness >= base.closeness}


def caps_order(point: OperatingPoint) -> tuple[float, ...]:
    """A point's caps (cores, CPU, GPU, EMC; none: the top), to break a tie in predicted power (a
    model with no term for an axis predicts the same for every step of it): in this order a point
    below another in every cap comes first, and it draws no more."""
    caps = (point.cpu_online_cores, point.cpu_max_freq_hz, point.gpu_max_freq_hz, point.emc_max_freq_hz)
    return tuple(math.inf if c is None else float(c) for c in caps)


@dataclass(frozen=True)
class ChoiceSettings:
    """How the choice weighs a move: config.GovernorConfig's settings of the same names, and whether to explore."""

    hysteresis: float  # a point that meets every target is left only for a predicted saving over this share
    explore: bool  # points may be tried to learn them (what exploring may cost allows it: selection.py)
    explore_min_rel_std: float  # a point is explored for its power only while this uncertain (std / mean)


@dataclass(frozen=True)
class Evidence:
    """What has been measured about the points under this workload (names of points)."""

    measured: frozenset[str] = frozenset()  # measured already: not explored again
    # Measured to meet every target: feasible whatever the model predicts (measurements win, both ways).
    met: frozenset[str] = frozenset()
    near: frozenset[str] = frozenset()  # measured to meet every target but not every limit (the margin)
    # The points no faster than one of ``near`` (rules.Dominance.dominated_by): none meets its limit, so a step down
    # to one is a bet on the model's error in that step alone, tried from a best point measured to meet (``met``),
    # not from one predicted to.
    under_near: frozenset[str] = frozenset()
    # The points one step below a ``met`` point on an axis the measurements have not isolated
    # (rules.Dominance.probes): one of them is tried where the model's uncertainty says it may meet every target.
    probes: frozenset[str] = frozenset()


@dataclass(frozen=True)
class Steps:
    """The points one step from a point on a single axis (rules.Dominance); None: none is tried."""

    # One step below: tried (explored) from the best point while the model may be wrong about them.
    below: Callable[[str], set[str]] | None = None
    # One step above: tried from a point of ``Evidence.near`` where the model predicts them nearer the margin (the
    # others count as measured: no_nearer_above).
    above: Callable[[str], set[str]] | None = None


def choose(predictions: list[JointPrediction], current: JointPrediction, *, violations: dict[str, float],
           settings: ChoiceSettings, evidence: Evidence = Evidence(), steps: Steps = Steps(),
           provisional: bool = False, fastest: JointPrediction | None = None) -> Choice:
    """The point to run next: the one predicted to draw least among those that meet every target, held
    against hysteresis, or one worth trying while ``settings.explore`` (``_exploration``).
    ``violations``: per stream that missed, its measured percentile over its limit; only
    points predicted faster for that stream than the current one by that factor qualify.
    ``provisional``: the current point is a stopgap (an exploration, an escape) that hysteresis
    does not protect: it stays only while it is predicted the best.
    ``fastest``: the truly fastest point (it dominates every other one in clocks and cores),
    where the choice goes and stays while nothing is predicted to meet the targets; ``None``:
    the point predicted fastest for the binding stream."""
    if steps.above is not None:  # steps above no nearer the margin count as measured
        evidence = replace(evidence, measured=evidence.measured | no_nearer_above(predictions, evidence.near,
                                                                                   steps.above))
    fastest = fastest or min(predictions, key=lambda p: max((s.latency_s / s.limit_s for s in p.streams), default=0))
    pool = predictions
    if violations:
        def faster_where_missed(p: JointPrediction) -> bool:
            return all((s := p.stream(name)) is not None and (c := current.stream(name)) is not None
                       and s.latency_s <= c.latency_s / scale for name, scale in violations.items())
        pool = [p for p in predictions if faster_where_missed(p)] or [fastest]
    feasible = [p for p in pool if p.meets() or p.point.name in evidence.met]
    if not feasible:
        return Choice(fastest, "no point is predicted to meet the target: fastest point")
    best = min(feasible, key=lambda p: (p.power_w, caps_order(p.point)))
    if settings.explore and (tried := _exploration(pool, feasible, best, current, bool(violations), settings,
                                                   evidence, steps)) is not None:
        return tried
    cheapest, best = best, insured(best, feasible) or best
    if violations:
        worst = max(violations, key=violations.get)
        where = f" ({worst})" if len(current.streams) > 1 else ""
        return Choice(best, f"measured percentile {violations[worst]:.2f} x target{where}: faster point")
    current_meets = current.meets() or current.point.name in evidence.met
    if current_meets and not provisional and best.power_w > current.power_w * (1.0 - settings.hysteresis):
        if (cover := insured(current, feasible)) is not None:
            return Choice(cover, INSURED, insured=True)
        return Choice(current, "holding: no point saves enough energy")
    if best is not cheapest:
        return Choice(best, INSURED, insured=True)
    return Choice(best, "lowest predicted energy meeting the target")


INSURED = "insured: one outlier would make inputs late at the cheapest point; as cheap within the power model's error"


def insured(held: JointPrediction, feasible: list[JointPrediction]) -> JointPrediction | None:
    """Where one outlier not seen yet would make an input late at ``held`` (``outlier_exposed``), the cheapest point
    of ``feasible`` where it would not and whose predicted power is within ``held``'s uncertainty of it; None where
    ``held`` is not exposed or no such point is. The cheapest point meeting a percentile may be busy nearly all of each
    period: a burst there makes every input late until its backlog drains, a lump over the 1 % a stream may have
    late, which no window showed before it came; a point the model cannot tell dearer does not pay that risk."""
    if not held.outlier_exposed():
        return None
    covers = [p for p in feasible if not p.outlier_exposed() and p.power_w <= held.power_w + held.power_std_w]
    return min(covers, key=lambda p: (p.power_w, caps_order(p.point)), default=None)


def _exploration(pool: list[JointPrediction], feasible: list[JointPrediction], best: JointPrediction,
                 current: JointPrediction, missed: bool, settings: ChoiceSettings, evidence: Evidence,
                 steps: Steps) -> Choice | None:
    """The point ``choose`` tries instead of ``best``, if any, by the first of its rules that offers one.
    ``missed``: a stream missed (an escape: only the uncertain feasible points are tried)."""
    measured = evidence.measured
    # A point measured to meet every target but not the margin: a point one step above it
    # on a single axis meets the targets too (it is at least as fast) and likely the
    # margin. The cheapest unmeasured one cheaper than the best is tried: no risk of a miss.
    above = set().union(*map(steps.above, evidence.near)) if steps.above is not None and not missed else set()
    ups = [p for p in pool if p.point.name in above and p.point.name not in measured and p.power_w < best.power_w]
    if ups:
        return Choice(min(ups, key=lambda p: p.power_w), "exploring one step above a point that met the targets "
                      "inside the margin", True)
    # Worth a look: not measured yet, uncertain, and possibly cheaper than the best. Of
    # those, the one predicted cheapest: exploring it costs least and it is the likeliest
    # to be the real best (the most uncertain one is usually an expensive corner).
    uncertain = [p for p in feasible if p.point.name not in measured
                 and p.power_std_w > settings.explore_min_rel_std * p.power_w
                 and p.power_low_w < best.power_w]
    if uncertain:
        pick = min(uncertain, key=lambda p: p.power_w)
        if pick.point != current.point:
            return Choice(pick, "exploring an uncertain point that may save energy", True)
    # Latency uncertainty can hide every cheaper point (a tight target): try the cheapest of
    # the unmeasured points whose predicted mean meets it and that would save much (one jump
    # instead of a walk down the clocks); a miss is caught within a few inferences and the
    # point is not tried again.
    promising = [p for p in pool if p.point.name not in measured and not p.meets() and p.meets(optimistic=True)
                 and p.power_w < best.power_w * (1.0 - 2 * settings.hysteresis)]
    if promising and not missed:
        pick = min(promising, key=lambda p: p.power_w)
        return Choice(pick, "exploring a point that may meet the target and save much energy", True)
    # Where the model's features miss how this device's latency moves along an axis (it
    # has been wrong at the points it visited), its prediction below the best point is not
    # to be trusted and only measuring tells: one step down a single axis (less power
    # whatever the model says), the cheapest such point that may meet every target if the
    # model is as wrong there. A miss costs a few inferences (caught early) and rules it
    # and every point below it out. Under a point measured inside the margin nothing meets
    # its limit: a step there bets on the model's error in that one step, from a best measured
    # to meet; from one only predicted to, the best's own error is stacked on the bet
    # (agx_batch_change@seed24: a step 1.2 x over the limit under a point at 0.99 x target, 4 late).
    below = steps.below(best.point.name) if steps.below is not None and not missed else set()
    downs = [p for p in pool if p.point.name in below and p.point.name not in measured and p.within_model_error()
             and (best.point.name in evidence.met or p.point.name not in evidence.under_near)]
    if downs:
        pick = min(downs, key=lambda p: p.power_w)
        return Choice(pick, "exploring one step down from the best point", True, True)
    # An axis no two measured points differ on alone: the model's term for it is a prior
    # (every measured point shares its clock, or it moved only with others), and the model
    # may be wrong there by more than its error so far shows. One step down that axis from
    # a point measured to meet the targets, where the model's own uncertainty says it may
    # meet them too and may save energy: of those, the likeliest to meet. Measured, it isolates
    # the axis (no second probe on it); a miss is caught early and rules it out.
    tries = [p for p in pool if p.point.name in evidence.probes and p.point.name not in measured
             and p.power_low_w < best.power_w and p.may_meet()] if not missed else []
    if tries:
        pick = min(tries, key=lambda p: (p.closeness, p.power_w))
        return Choice(pick, "exploring one step down an axis the measurements have not isolated", True)
    return None
