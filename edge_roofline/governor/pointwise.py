"""Latency and energy learned point by point, for platforms outside the device catalogue (an
NVIDIA discrete GPU through NVML: power limits and application clocks), where no clock tables
let a roofline carry what one point measured to another.

A measured point is predicted from its own windows: a stream's latency as a running mean
(``PointwisePredictor``), the module's power as ``idle + busy x duty`` (``PointwisePower``; duty =
the streams' latency x input rate, a two-term Bayesian fit per point, so energy follows the input
rates). An unmeasured point is predicted as the average of the measured ones with a wide
uncertainty, so the policy explores it when it might save energy and never trusts it to meet a
target before it has been measured.
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
class _LatencyEstimate:
    latency_s: float
    latency_var_s2: float


class PointwisePredictor:
    """A stream's latency per point, learned by measuring (``Predictor``'s latency interface:
    ``update``, ``predict``, ``forget``, ``observations``, ``gpu_time_s``)."""

    def __init__(self) -> None:
        self.input_rate_hz: float | None = None
        self.observations = 0
        self._points: dict[str, _LatencyEstimate] = {}

    def update(self, point: OperatingPoint, latency_s: float, *, input_rate_hz: float | None = None,
               samples: int = 1, latency_var_s2: float = 0.0) -> None:
        if samples <= 0 or not (math.isfinite(latency_s) and latency_s > 0):
            return
        if input_rate_hz is not None:
            self.input_rate_hz = input_rate_hz
        var = latency_var_s2 / samples + (_MODEL_REL_ERR * latency_s) ** 2
        est = self._points.get(point.name)
        if est is None:
            self._points[point.name] = _LatencyEstimate(latency_s, var)
        else:  # inverse-variance running mean
            w = est.latency_var_s2 / (est.latency_var_s2 + var)
            est.latency_s += w * (latency_s - est.latency_s)
            est.latency_var_s2 = max(est.latency_var_s2 * var / (est.latency_var_s2 + var),
                                     (_MODEL_REL_ERR * est.latency_s) ** 2)
        self.observations += 1

    def forget(self, fraction: float) -> None:
        """The workload changed: what the points measured counts less."""
        for est in self._points.values():
            est.latency_var_s2 /= max(1.0 - fraction, 1e-3)

    def predict(self, point: OperatingPoint, input_rate_hz: float | None = None) -> Prediction:
        """Latency only (energy is the module's, ``PointwisePower``)."""
        est = self._points.get(point.name)
        if est is not None:
            latency_s, latency_std_s = est.latency_s, math.sqrt(est.latency_var_s2)
        elif self._points:
            latency_s = float(np.mean([e.latency_s for e in self._points.values()]))
            latency_std_s = UNMEASURED_REL_STD * latency_s
        else:
            return Prediction(point, math.nan, math.inf, math.nan, math.nan, math.inf, math.nan)
        rate = sustained_rate(input_rate_hz if input_rate_hz is not None else self.input_rate_hz, latency_s)
        return Prediction(point, latency_s, latency_std_s, math.nan, math.nan, math.inf, rate)

    def gpu_time_s(self, point: OperatingPoint) -> float:
        """Without a roofline nothing splits host from GPU time: all of it is taken as shared."""
        latency_s = self.predict(point).latency_s
        return latency_s if math.isfinite(latency_s) else 0.0


class PointwisePower:
    """The module's power per point as ``idle + busy x duty``, learned by measuring."""

    def __init__(self) -> None:
        self._points: dict[str, BayesLinear] = {}

    @property
    def has_energy(self) -> bool:
        return bool(self._points)

    def update(self, point: OperatingPoint, power_w: float, duty: float) -> None:
        model = self._points.get(point.name)
        if model is None:  # idle and busy shares: apart only once a second duty is seen
            model = self._points[point.name] = BayesLinear(prior_mean=(0.5 * power_w, 0.5 * power_w),
                                                           prior_std=(0.5 * power_w, 0.5 * power_w))
        model.update(np.array([1.0, min(1.0, duty)]), power_w, (_MODEL_REL_ERR * power_w) ** 2)

    def forget(self, fraction: float) -> None:
        for model in self._points.values():
            model.forget(fraction)

    def predict(self, point: OperatingPoint, duty: float) -> tuple[float, float]:
        """(power W, its std) at ``duty``; NaN before any point was measured."""
        own = self._points.get(point.name)
        models = [own] if own is not None else list(self._points.values())
        if not models:
            return math.nan, math.inf
        powers = [m.predict(np.array([1.0, min(1.0, duty)])) for m in models]
        power_w = float(np.mean([p for p, _ in powers]))
        power_std_w = math.sqrt(float(np.mean([v for _, v in powers])) + (_MODEL_REL_ERR * power_w) ** 2)
        if own is None:
            if point.power_limit_w is not None:  # the one thing known about an unmeasured limit
                power_w = min(power_w, point.power_limit_w)
            power_std_w = max(power_std_w, UNMEASURED_REL_STD * power_w)
        return power_w, power_std_w
