"""What one governor step reports: the point chosen and why, each stream's measured and
predicted state, and the headline numbers of the stream that binds."""

from __future__ import annotations

import math
from dataclasses import dataclass
from typing import Iterable

import numpy as np

from edge_roofline.platforms.base import OperatingPoint

from .policy import JointPrediction
from .streams import Stream, StreamStatus, StreamWindow


@dataclass(frozen=True)
class Decision:
    point: OperatingPoint  # chosen (active: applied or in force; advise: recommended)
    applied: bool  # a change was applied to the device in this step
    reason: str
    # disabled | waiting | fallback | settling | measuring | exploring | settled | advising (states.py)
    state: str
    # The binding stream's numbers (the only stream's, with one):
    predicted_latency_s: float
    predicted_energy_j: float  # per inference, over every stream's inferences
    measured_latency_s: float  # the target percentile over the window (NaN: too few samples)
    measured_energy_per_inference_j: float
    violation_rate: float
    fallback_active: bool
    predicted_latency_std_s: float = math.nan  # the predictor's uncertainty of that latency
    window_samples: int = 0  # latencies in the measured window
    streams: tuple[StreamStatus, ...] = ()
    binding_stream: str = ""  # the stream whose target limits the choice ("" none)
    predicted_power_w: float = math.nan  # module power at the chosen point
    measured_power_w: float = math.nan  # mean over the window
    transition: str = ""  # the rule that made this decision (states.Transition)


def report(point: OperatingPoint, applied: bool, reason: str, state: str, pred: JointPrediction | None,
           streams: Iterable[Stream], windows: dict[str, StreamWindow | None], power_w: float,
           fallback: bool = False, transition: str = "") -> Decision:
    """``pred``: the prediction at ``point`` (None: none made); ``windows``: each stream's
    measured window; ``power_w``: mean module power over the window."""
    nan = math.nan
    statuses = []
    for s in streams:
        sp = pred.stream(s.name) if pred is not None else None
        statuses.append(s.status(windows.get(s.name), sp.latency_s if sp else nan, sp.latency_std_s if sp else nan))
    binding = pred.binding if pred is not None else None
    # The headline numbers: the binding stream's, else the one furthest over its target.
    head = max(statuses, key=lambda st: (
        binding is not None and st.name == binding.name, st.active,
        np.nan_to_num(st.measured_latency_s * 1e3 / st.target_latency_ms, nan=-1.0)))
    rates = [w.rate_hz for w in windows.values() if w is not None]
    measured_energy = power_w / sum(rates) if rates and sum(rates) > 0 else nan
    predicted_energy = nan
    if pred is not None and pred.streams:
        predicted_energy = pred.power_w / sum(sp.input_rate_hz for sp in pred.streams)
    return Decision(point, applied, reason, state, head.predicted_latency_s, predicted_energy,
                    head.measured_latency_s, measured_energy,
                    max((st.violation_rate for st in statuses), default=0.0), fallback,
                    head.predicted_latency_std_s, head.window_samples, tuple(statuses),
                    binding.name if binding is not None else "", pred.power_w if pred is not None else nan,
                    power_w, transition)
