"""Charts of a sweep (matplotlib via ``roofline.charts``' Agg setup): the latency/energy
Pareto plot, latency and energy heatmaps over GPU x EMC caps (one panel per core count and
CPU cap), and time and energy rooflines at chosen points. Every title of a simulated sweep
says SIMULATION."""

from __future__ import annotations

import math
from pathlib import Path
from edge_roofline.roofline import charts as roof_charts
from edge_roofline.roofline.devices import DeviceSpec
from edge_roofline.roofline.energy import EnergyRooflineFit
from edge_roofline.roofline.model import analyze_roofline

from .results import ModelSummary, Row

SIM_TAG = "SIMULATION - "


def _title(text: str, simulated: bool) -> str:
    return (SIM_TAG if simulated else "") + text


def pareto_chart(summary: ModelSummary, path: str | Path, *, simulated: bool) -> Path:
    plt = roof_charts._pyplot()
    fig, ax = plt.subplots(figsize=(8, 5.5))
    for source, marker in (("measured", "o"), ("predicted", "x")):
        pts = [r for r in summary.rows if r.source == source]
        if pts:
            sc = ax.scatter([r.latency_ms for r in pts], [1e3 * r.energy_per_inference_j for r in pts],
                            c=[(r.point.gpu_max_freq_hz or math.nan) / 1e6 for r in pts], cmap="viridis",
                            marker=marker, s=30, label=f"{source} ({len(pts)})", zorder=2)
    if summary.rows:
        fig.colorbar(sc, ax=ax, label="GPU cap (MHz)")
    front = summary.front
    ax.plot([r.latency_ms for r in front], [1e3 * r.energy_per_inference_j for r in front], "r-", lw=1.5,
            label=f"Pareto front ({len(front)})", zorder=3)
    for c in summary.choices:
        if c.choice is not None:
            ax.axvline(c.target_ms, color="grey", lw=0.6, ls=":")
            ax.scatter([c.choice.latency_ms], [1e3 * c.choice.energy_per_inference_j], s=120,
                       facecolors="none", edgecolors="r", zorder=4)
    ax.set_xscale("log")
    ax.set_xlabel("latency per inference, mean (ms)")
    ax.set_ylabel("energy per inference (mJ)")
    ax.set_title(_title(f"{summary.model} ({summary.precision}): latency vs energy; circles = "
                        f"energy-optimal per target (dotted)", simulated), fontsize=9)
    ax.grid(True, which="both", alpha=0.25)
    ax.legend(fontsize=8)
    return roof_charts._save(fig, path)


def heatmap_chart(summary: ModelSummary, path: str | Path, *, simulated: bool) -> Path | None:
    """Latency (top) and energy (bottom) over GPU x EMC caps, one column per (cores, CPU cap);
    None when the points are not a caps grid."""
    grid = [r for r in summary.rows if r.point.gpu_max_freq_hz and r.point.emc_max_freq_hz]
    if not grid:
        return None
    plt = roof_charts._pyplot()
    import numpy as np

    slices = sorted({(r.point.cpu_online_cores or 0, r.point.cpu_max_freq_hz or 0.0) for r in grid},
                    reverse=True)
    gpus = sorted({r.point.gpu_max_freq_hz for r in grid})
    emcs = sorted({r.point.emc_max_freq_hz for r in grid})
    fig, axes = plt.subplots(2, len(slices), figsize=(2.3 * len(slices) + 1.5, 6.2), squeeze=False)
    for row, (label, value_of, cmap) in enumerate(
            (("latency (ms)", lambda r: r.latency_ms, "magma_r"),
             ("energy (mJ)", lambda r: 1e3 * r.energy_per_inference_j, "viridis_r"))):
        values = [value_of(r) for r in grid]
        vmin, vmax = min(values), max(values)
        for col, (cores, cpu) in enumerate(slices):
            ax = axes[row][col]
            m = np.full((len(gpus), len(emcs)), np.nan)
            for r in grid:
                if (r.point.cpu_online_cores or 0, r.point.cpu_max_freq_hz or 0.0) == (cores, cpu):
                    m[gpus.index(r.point.gpu_max_freq_hz), emcs.index(r.point.emc_max_freq_hz)] = value_of(r)
            im = ax.imshow(m, origin="lower", cmap=cmap, aspect="auto",
                           norm=_log_norm(vmin, vmax))
            for (i, j), v in np.ndenumerate(m):
                if math.isfinite(v):
                    ax.text(j, i, f"{v:.3g}", ha="center", va="center", fontsize=6,
                            color="w" if (math.log(v) - math.log(vmin)) / max(math.log(vmax / vmin), 1e-9) > 0.5
                            else "k")
            ax.set_xticks(range(len(emcs)))
            ax.set_xticklabels([f"{e / 1e6:.0f}" for e in emcs], fontsize=7)
            ax.set_yticks(range(len(gpus)))
            ax.set_yticklabels([f"{g / 1e6:.0f}" for g in gpus] if col == 0 else [], fontsize=7)
            if row == 0:
                ax.set_title(f"{cores} cores @ {cpu / 1e6:.0f} MHz", fontsize=8)
            if row == 1:
                ax.set_xlabel("EMC cap (MHz)", fontsize=8)
            if col == 0:
                ax.set_ylabel(f"{label}\nGPU cap (MHz)", fontsize=8)
        fig.colorbar(im, ax=list(axes[row]), shrink=0.9)
    fig.suptitle(_title(f"{summary.model} ({summary.precision}): latency and energy per inference over "
                        "GPU x EMC caps", simulated), fontsize=10)
    return roof_charts._save(fig, path)


def _log_norm(vmin: float, vmax: float):
    from matplotlib.colors import LogNorm
    return LogNorm(vmin=vmin, vmax=max(vmax, vmin * 1.0001))


def point_ceilings(device: DeviceSpec, precision: str, point, label: str):
    """Spec ceilings at the clocks ``point`` lands on."""
    from edge_roofline.governor.points import clocks_ceilings, effective_clocks

    return clocks_ceilings(device, precision, effective_clocks(device, point), label=label)


def showcase_points(summary: ModelSummary, count: int = 4) -> list[Row]:
    """Up to ``count`` measured points along the Pareto front, fastest to most frugal."""
    front = [r for r in summary.front if r.source == "measured"]
    if len(front) <= count:
        return front
    return [front[round(i * (len(front) - 1) / (count - 1))] for i in range(count)]


def time_roofline_chart(summary: ModelSummary, cost, device: DeviceSpec, layer_times: dict[str, dict],
                        path: str | Path, *, simulated: bool) -> Path | None:
    """Time rooflines at the showcase points; layers of the first (measured per-layer times
    where the sweep profiled layers)."""
    chosen = showcase_points(summary)
    if not chosen:
        return None
    analyses = [analyze_roofline(cost, point_ceilings(device, summary.precision, r.point, r.name),
                                 layer_times.get(r.name)) for r in chosen]
    return roof_charts.time_roofline_chart(
        analyses, path, title=_title(f"Time roofline: {summary.model} at Pareto points; layers at "
                                     f"{chosen[0].name}", simulated))


def energy_roofline_chart(fits: dict[str, tuple[EnergyRooflineFit, list[str]]], summary: ModelSummary,
                          cost, device: DeviceSpec, path: str | Path, *, simulated: bool) -> Path | None:
    """Energy rooflines (fitted across models) at the showcase points that have a fit."""
    chosen = [r for r in summary.front if r.source == "measured" and r.name in fits][:4]
    if not chosen:
        return None
    points = {r.name: (fits[r.name][0], point_ceilings(device, summary.precision, r.point, r.name))
              for r in chosen}
    analysis = analyze_roofline(cost, points[chosen[0].name][1])
    return roof_charts.energy_roofline_chart(
        points, path, analysis=analysis,
        title=_title(f"Energy roofline per point (fitted across {len(fits[chosen[0].name][1])} models); "
                     f"dot = {summary.model}", simulated))

