"""What a sweep database says, per model: one row per point (measured where measured, else
predicted by the few-sample fit), the Pareto front, energy-optimal points for latency
targets, energy-roofline fits per point across the models swept, and the operating-point
table the governor can load as its prior."""

from __future__ import annotations

import json
import math
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from edge_roofline.governor.prior_table import TABLE_FORMAT
from edge_roofline.platforms.base import OperatingPoint
from edge_roofline.roofline.energy import EnergyFitError, EnergyRooflineFit, EnergySample, fit_energy_roofline

from .pareto import TargetChoice, default_targets_ms, energy_optimal, pareto_front
from .store import PointResult, Store, point_to_dict

TABLE_NAME = "operating_points_{model}_{precision}.json"


@dataclass(frozen=True)
class Row:
    """One point of one model: measured, or predicted (few-sample mode)."""

    point: OperatingPoint
    source: str  # "measured" | "predicted"
    latency_ms: float  # mean
    latency_p95_ms: float | None  # measured only
    energy_per_inference_j: float
    power_w: float
    idle_power_w: float | None
    runs: int = 0
    latency_std_ms: float | None = None

    @property
    def name(self) -> str:
        return self.point.name


def rows(store: Store, model: str, precision: str) -> list[Row]:
    """Measured points with energy, then predicted points that were not measured."""
    out = [Row(r.point, "measured", r.latency_ms_mean, r.latency_ms_p95, r.energy_per_inference_j,
               r.power_w, r.idle_power_w, r.runs, r.latency_ms_std)
           for r in store.results(model, precision, status="ok") if r.energy_per_inference_j is not None]
    have = {r.name for r in out}
    out += [Row(p.point, "predicted", p.latency_ms, None, p.energy_per_inference_j, p.power_w, None,
                latency_std_ms=p.latency_std_ms)
            for p in store.predictions(model, precision)
            if p.name not in have and math.isfinite(p.energy_per_inference_j)]
    return out


@dataclass
class ModelSummary:
    model: str
    precision: str
    rows: list[Row]
    front: list[Row]
    choices: list[TargetChoice[Row]]
    failures: list[PointResult] = field(default_factory=list)


def summarise(store: Store, model: str, precision: str, targets_ms: list[float] | None = None) -> ModelSummary:
    all_rows = rows(store, model, precision)
    front = pareto_front(all_rows, lambda r: r.latency_ms, lambda r: r.energy_per_inference_j)
    if not targets_ms and all_rows:
        targets_ms = default_targets_ms([r.latency_ms for r in all_rows])
    choices = energy_optimal(all_rows, targets_ms or [], lambda r: r.latency_ms,
                             lambda r: r.energy_per_inference_j)
    return ModelSummary(model, precision, all_rows, front, choices,
                        store.results(model, precision, status="failed"))


def energy_roofline_fits(store: Store, precision: str) -> dict[str, tuple[EnergyRooflineFit, list[str]]]:
    """Per point, E = eps_flop W + eps_byte Q + pi0 T fitted across the models measured there
    (one sample per model: its FLOPs, DRAM bytes, mean latency and energy per inference).
    Needs three models at a point; points with fewer, or a degenerate set, are left out. The
    fit attributes model-to-model differences to W, Q and T only, so its R^2 says how far that
    holds."""
    sweeps = {s.model: s for s in store.sweeps() if s.precision == precision}
    samples: dict[str, list[tuple[str, EnergySample]]] = {}
    for model, sweep in sweeps.items():
        for r in store.results(model, precision, status="ok"):
            if r.energy_per_inference_j is not None:
                samples.setdefault(r.name, []).append(
                    (model, EnergySample(sweep.flops, sweep.dram_bytes, r.latency_ms_mean / 1e3,
                                         r.energy_per_inference_j)))
    fits = {}
    for name, items in samples.items():
        if len(items) < 3:
            continue
        try:
            fits[name] = (fit_energy_roofline(s for _, s in items), [m for m, _ in items])
        except EnergyFitError:
            continue
    return fits


# ---- the operating-point table ------------------------------------------------------------

def operating_point_table(store: Store, summary: ModelSummary) -> dict[str, Any]:
    """The governor-facing table (format ``edge_roofline.operating_points/1``; docs/characterise.md)."""
    meta = store.meta()
    simulated = meta.get("simulated") == "1"
    front = {r.name for r in summary.front}
    points = []
    for r in summary.rows:
        entry = point_to_dict(r.point) | {
            "source": r.source, "latency_ms": r.latency_ms, "latency_p95_ms": r.latency_p95_ms,
            "latency_std_ms": r.latency_std_ms, "energy_per_inference_j": r.energy_per_inference_j,
            "power_w": r.power_w, "idle_power_w": r.idle_power_w, "runs": r.runs,
            "pareto": r.name in front}
        points.append({k: v for k, v in entry.items() if v is not None})
    return {"format": TABLE_FORMAT,
            "simulated": simulated,
            "label": "SIMULATION (virtual Jetson)" if simulated else "measured",
            "device": meta.get("device", ""), "platform": meta.get("platform", ""),
            "model": summary.model, "precision": summary.precision,
            "conditions": "inferences back to back; latency ms per inference, energy J per "
                          "inference, power W averaged over the measured window",
            "points": points}


def write_table(out_dir: str | Path, table: dict[str, Any]) -> Path:
    path = Path(out_dir) / TABLE_NAME.format(model=table["model"], precision=table["precision"])
    path.write_text(json.dumps(table, indent=2))
    return path
