"""Few-sample characterisation: fit the governor's roofline-informed predictor
(``governor.predictor``) to K measured points and predict latency and power everywhere else;
score it against measured points it was not fitted on."""

from __future__ import annotations

import math
from dataclasses import dataclass
from typing import Sequence

from edge_roofline.governor.predictor import Observation, Predictor, RooflineWorkload
from edge_roofline.platforms.base import OperatingPoint
from edge_roofline.roofline.ceilings import max_clock_preset, preset_ceilings
from edge_roofline.roofline.devices import DeviceSpec
from edge_roofline.roofline.model import RooflineAnalysis, analyze_roofline

from .store import PointResult, PredictedPoint


def reference_analysis(cost, device: DeviceSpec) -> RooflineAnalysis:
    """The model's roofline at the device's max-clock preset: the predictor moves it to every
    other point by the ratio of ceilings."""
    return analyze_roofline(cost, preset_ceilings(device, max_clock_preset(device).name, cost.precision))


def observation(result: PointResult) -> Observation:
    """A measured point as the predictor sees it: back-to-back inferences (no input rate)."""
    return Observation(result.point, result.latency_ms_mean / 1e3, result.energy_per_inference_j
                       if result.energy_per_inference_j is not None else math.nan,
                       input_rate_hz=None, samples=result.runs,
                       latency_var_s2=(result.latency_ms_std / 1e3) ** 2)


def fit_predictor(analysis: RooflineAnalysis, device: DeviceSpec,
                  measured: Sequence[PointResult]) -> Predictor:
    usable = [r for r in measured if r.ok]
    if not usable:
        raise ValueError("no measured point to fit the predictor to; every profiled point failed")
    return Predictor(RooflineWorkload(analysis, device)).fit(observation(r) for r in usable)


def predict_points(predictor: Predictor, model: str, precision: str, points: Sequence[OperatingPoint],
                   fitted_on: Sequence[str]) -> list[PredictedPoint]:
    out = []
    for point in points:
        p = predictor.predict(point)
        out.append(PredictedPoint(model, precision, point, 1e3 * p.latency_s, 1e3 * p.latency_std_s,
                                  p.power_w, p.energy_per_inference_j, p.energy_std_j, tuple(fitted_on)))
    return out


@dataclass(frozen=True)
class Accuracy:
    """Mean absolute percentage errors of predictions against measured points not fitted on."""

    points: int
    latency_mape_pct: float
    power_mape_pct: float
    energy_mape_pct: float
    latency_max_pct: float
    power_max_pct: float


def accuracy(predicted: Sequence[PredictedPoint], measured: Sequence[PointResult]) -> Accuracy | None:
    """None when no measured point outside the fitted set overlaps the predictions."""
    by_name = {r.name: r for r in measured if r.ok and r.power_w and r.energy_per_inference_j}
    pairs = [(p, by_name[p.name]) for p in predicted if p.name in by_name and p.name not in p.fitted_on]
    if not pairs:
        return None

    def errors(pred_of, meas_of) -> list[float]:
        return [100.0 * abs(pred_of(p) - meas_of(m)) / meas_of(m) for p, m in pairs]

    lat = errors(lambda p: p.latency_ms, lambda m: m.latency_ms_mean)
    pw = errors(lambda p: p.power_w, lambda m: m.power_w)
    en = errors(lambda p: p.energy_per_inference_j, lambda m: m.energy_per_inference_j)
    return Accuracy(len(pairs), sum(lat) / len(lat), sum(pw) / len(pw), sum(en) / len(en), max(lat), max(pw))
