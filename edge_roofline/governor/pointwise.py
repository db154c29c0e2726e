"""Latency and energy learned point by point, for platforms outside the device catalogue (an
NVIDIA discrete GPU through NVML: power limits and application clocks), where no clock tables
let a roofline carry what one point measured to another.

A measured point is predicted from its own windows: latency as a running mean, power as
``idle + busy x duty`` (duty = latency x input rate, a two-term Bayesian fit per point, so its
energy follows the input rate). An unmeasured point is predicted as the average of the measured
ones with a wide uncertainty, so the policy explores it when it might save energy and never
trusts it to meet a target before it has been measured.
"""

from __future__ import annotations

import math
from dataclasses import dataclass

import numpy as np

from edge_roofline.platforms.base import OperatingPoint

from .predictor import BayesLinear, Prediction, sustained_rate

UNMEASURED_REL_STD = 0.5  # an unmeasured point: anywhere within about +-50 % of the measured ones
_MODEL_REL_ERR = 0.03  # error a measured point keeps (drift, window to window)


@dataclass
class _PointEstimate:
    latency_s: float
    latency_var_s2: float
    power: BayesLinear | None = None  # (idle W, busy W), from the first energy measured


class PointwisePredictor:
    """``Predictor``'s interface (``update``, ``predict``, ``forget``, ``observations``,
    ``has_energy``) without a roofline."""

    def __init__(self) -> None:
        self.input_rate_hz: float | None = None
        self.observations = 0
        self._points: dict[str, _PointEstimate] = {}

    @property
    def has_energy(self) -> bool:
        """Some energy was measured (the governor waits for it)."""
        return any(e.power is not None for e in self._points.values())

    def update(self, point: OperatingPoint, latency_s: float, energy_j: float = math.nan, *,
               input_rate_hz: float | None = None, samples: int = 1, latency_var_s2: float = 0.0) -> None:
        if samples <= 0 or not (math.isfinite(latency_s) and latency_s > 0):
            return
        if input_rate_hz is not None:
            self.input_rate_hz = input_rate_hz
        rate = sustained_rate(input_rate_hz, latency_s)
        var = latency_var_s2 / samples + (_MODEL_REL_ERR * latency_s) ** 2
        est = self._points.get(point.name)
        if est is None:
            est = self._points[point.name] = _PointEstimate(latency_s, var)
        else:  # inverse-variance running mean
            w = est.latency_var_s2 / (est.latency_var_s2 + var)
            est.latency_s += w * (latency_s - est.latency_s)
            est.latency_var_s2 = max(est.latency_var_s2 * var / (est.latency_var_s2 + var),
                                     (_MODEL_REL_ERR * est.latency_s) ** 2)
        self.observations += 1
        if math.isfinite(energy_j) and energy_j > 0:
            power_w = energy_j * rate
            if est.power is None:  # idle and busy shares: apart only once a second rate is seen
                est.power = BayesLinear(prior_mean=(0.5 * power_w, 0.5 * power_w),
                                        prior_std=(0.5 * power_w, 0.5 * power_w))
            est.power.update(np.array([1.0, min(1.0, latency_s * rate)]), power_w, (_MODEL_REL_ERR * power_w) ** 2)

    def forget(self, fraction: float) -> None:
        """The workload changed: what the points measured counts less."""
        for est in self._points.values():
            est.latency_var_s2 /= max(1.0 - fraction, 1e-3)
            if est.power is not None:
                est.power.forget(fraction)

    def predict(self, point: OperatingPoint, input_rate_hz: float | None = None) -> Prediction:
        est = self._points.get(point.name)
        measured = list(self._points.values())
        if est is None:
            if not measured:
                return Prediction(point, math.nan, math.inf, math.nan, math.nan, math.inf, math.nan)
            latency_s = float(np.mean([e.latency_s for e in measured]))
            latency_std_s = UNMEASURED_REL_STD * latency_s
        else:
            latency_s, latency_std_s = est.latency_s, math.sqrt(est.latency_var_s2)
        rate = sustained_rate(input_rate_hz if input_rate_hz is not None else self.input_rate_hz, latency_s)
        own = est is not None and est.power is not None
        with_power = [est] if own else [e for e in measured if e.power is not None]
        if not with_power:
            return Prediction(point, latency_s, latency_std_s, math.nan, math.nan, math.inf, rate)
        powers = [e.power.predict(np.array([1.0, min(1.0, latency_s * rate)])) for e in with_power]
        power_w = float(np.mean([p for p, _ in powers]))
        power_std_w = math.sqrt(float(np.mean([v for _, v in powers])) + (_MODEL_REL_ERR * power_w) ** 2)
        if not own:
            if point.power_limit_w is not None:  # the one thing known about an unmeasured limit
                power_w = min(power_w, point.power_limit_w)
            power_std_w = max(power_std_w, UNMEASURED_REL_STD * power_w)
        return Prediction(point, latency_s, latency_std_s, power_w, power_w / rate, power_std_w / rate, rate)

