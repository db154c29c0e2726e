"""Which point to run: the lowest predicted energy per inference whose predicted latency
percentile meets the target with margin, with measured-percentile feedback, hysteresis and a
bounded amount of exploration of uncertain points."""

from __future__ import annotations

from dataclasses import dataclass

from .predictor import Prediction


@dataclass(frozen=True)
class Choice:
    prediction: Prediction
    reason: str
    exploring: bool = False


# Periodic input: a point busy more than this fraction of the input period has no room left for
# jitter, and one busy longer than the period queues without bound.
MAX_UTILISATION = 0.95


def meets_target(p: Prediction, jitter_ratio: float, limit_s: float, optimistic: bool = False) -> bool:
    """Predicted percentile under ``limit_s`` and the input rate sustainable; ``optimistic``
    drops the model uncertainty (a point that may meet the target)."""
    latency_s = p.latency_s if optimistic else p.latency_s + p.latency_std_s
    return latency_s * jitter_ratio <= limit_s and latency_s * p.input_rate_hz <= MAX_UTILISATION


def choose(predictions: list[Prediction], current: Prediction, *, limit_s: float,
           jitter_ratio: float, violation_scale: float | None, hysteresis: float,
           explore: bool, explore_min_rel_std: float, measured: frozenset[str] = frozenset(),
           provisional: bool = False, fastest: Prediction | None = None) -> Choice:
    """``limit_s`` = target x (1 - margin). ``violation_scale``: measured percentile over the
    target; only points predicted faster than the current one by that factor qualify.
    ``measured``: names of points already measured under this workload (not explored again).
    ``provisional``: the current point is a stopgap (an exploration, an escape) that hysteresis
    does not protect: it stays only while it is predicted the best.
    ``fastest``: the truly fastest point (it dominates every other one in clocks and cores),
    where the choice goes and stays while nothing is predicted to meet the target; ``None``:
    the point predicted fastest."""
    fastest = fastest or min(predictions, key=lambda p: p.latency_s)
    pool = predictions
    if violation_scale is not None:
        pool = [p for p in predictions if p.latency_s <= current.latency_s / violation_scale] or [fastest]
    feasible = [p for p in pool if meets_target(p, jitter_ratio, limit_s)]
    if not feasible:
        return Choice(fastest, "no point is predicted to meet the target: fastest point")
    best = min(feasible, key=lambda p: p.energy_per_inference_j)
    if explore:
        # Worth a look: not measured yet, uncertain, and possibly cheaper than the best. Of
        # those, the one predicted cheapest: exploring it costs least and it is the likeliest
        # to be the real best (the most uncertain one is usually an expensive corner).
        uncertain = [p for p in feasible if p.point.name not in measured
                     and p.energy_std_j > explore_min_rel_std * p.energy_per_inference_j
                     and p.energy_per_inference_j - p.energy_std_j < best.energy_per_inference_j]
        if uncertain:
            pick = min(uncertain, key=lambda p: p.energy_per_inference_j)
            if pick.point != current.point:
                return Choice(pick, "exploring an uncertain point that may save energy", True)
        # Latency uncertainty can hide every cheaper point (a tight target): try the cheapest of
        # the unmeasured points whose predicted mean meets it and that would save much (one jump
        # instead of a walk down the clocks); a miss is caught within a few inferences and the
        # point is not tried again.
        promising = [p for p in pool if p.point.name not in measured
                     and not meets_target(p, jitter_ratio, limit_s)
                     and meets_target(p, jitter_ratio, limit_s, optimistic=True)
                     and p.energy_per_inference_j < best.energy_per_inference_j * (1.0 - 2 * hysteresis)]
        if promising and violation_scale is None:
            pick = min(promising, key=lambda p: p.energy_per_inference_j)
            return Choice(pick, "exploring a point that may meet the target and save much energy", True)
    if violation_scale is not None:
        return Choice(best, f"measured percentile {violation_scale:.2f} x target: faster point")
    cur_ok = meets_target(current, jitter_ratio, limit_s)
    if cur_ok and not provisional and best.energy_per_inference_j > current.energy_per_inference_j * (1.0 - hysteresis):
        return Choice(current, "holding: no point saves enough energy")
    return Choice(best, "lowest predicted energy meeting the target")
