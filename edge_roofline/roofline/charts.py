"""Charts of roofline analyses (matplotlib, Agg backend; PNG or SVG by the file suffix).

- ``roofline_chart``: FLOP/s against arithmetic intensity, log-log, with the compute roof and
  the DRAM (and L2/L1, dashed) bandwidth roofs of one or several operating points; one point
  per layer at its achieved (measured) or attainable rate, sized by its time, coloured by
  what bounds it.
- ``time_roofline_chart``: time per GFLOP against arithmetic intensity; the roof is
  max(1 / F, 1 / (I x B)), overhead-bound layers float above it.
- ``phase_roofline_chart``: a language model's prefill and decode steps (one per context) on
  the roofs of the operating point, against where the roof puts them.
- ``energy_roofline_chart``: FLOP per joule against arithmetic intensity per operating point.
- ``layer_time_chart``: per-layer attainable time as bars, the roofline part coloured by
  compute- or memory-bound and the fixed overhead on top, measured time as a tick.
"""

from __future__ import annotations

import itertools
from pathlib import Path
from typing import Mapping, Sequence

from edge_roofline.roofline.ceilings import Ceilings
from edge_roofline.roofline.energy import EnergyRooflineFit, attainable_flops_per_joule
from edge_roofline.roofline.model import LayerBound, RooflineAnalysis
from edge_roofline.roofline.phases import PhaseBound

BOUND_COLOURS = {"compute": "#d62728", "memory": "#1f77b4", "overhead": "#7f7f7f"}
_POINT_COLOURS = ("#000000", "#2ca02c", "#9467bd", "#ff7f0e", "#8c564b")


def _pyplot():
    import matplotlib
    matplotlib.use("Agg")
    import matplotlib.pyplot as plt
    return plt


def _save(fig, path: str | Path) -> Path:
    path = Path(path)
    if path.suffix.lower() not in (".png", ".svg"):
        raise ValueError(f"{path}: charts are written as .png or .svg")
    path.parent.mkdir(parents=True, exist_ok=True)
    fig.savefig(path, dpi=130, bbox_inches="tight")
    _pyplot().close(fig)
    return path


def _as_list(analyses) -> list[RooflineAnalysis]:
    return [analyses] if isinstance(analyses, RooflineAnalysis) else list(analyses)


def _layer_time_s(layer: LayerBound) -> float:
    return layer.measured_time_s if layer.measured_time_s else layer.attainable_time_s


def _intensity_range(analyses: list[RooflineAnalysis], ceilings: list[Ceilings]) -> tuple[float, float]:
    values = [l.arithmetic_intensity for a in analyses for l in a.layers if l.arithmetic_intensity > 0]
    values += [c.ridge_point for c in ceilings]
    return min(values) / 4, max(values) * 4


def _logspace(lo: float, hi: float, n: int = 200):
    import numpy as np
    return np.logspace(np.log10(lo), np.log10(hi), n)


def _scatter_layers(ax, analysis: RooflineAnalysis, y_of, label_top: int) -> None:
    import numpy as np

    layers = [l for l in analysis.layers if l.arithmetic_intensity > 0 and _layer_time_s(l) > 0]
    if not layers:
        return
    times = np.array([_layer_time_s(l) for l in layers])
    sizes = 15 + 400 * times / times.max()
    for bound, colour in BOUND_COLOURS.items():
        idx = [i for i, l in enumerate(layers) if l.bound == bound]
        if idx:
            ax.scatter([layers[i].arithmetic_intensity for i in idx], [y_of(layers[i]) for i in idx],
                       s=sizes[idx], c=colour, alpha=0.55, edgecolors="k", linewidths=0.4,
                       label=f"{bound}-bound layers", zorder=3)
    labelled: list[tuple[float, float]] = []
    for i in np.argsort(times)[::-1]:
        if len(labelled) == label_top:
            break
        x, y = layers[i].arithmetic_intensity, y_of(layers[i])
        # Identical layers (repeated blocks) land on one spot: label the spot once.
        if any(abs(np.log10(x / lx)) < 0.05 and abs(np.log10(y / ly)) < 0.05 for lx, ly in labelled):
            continue
        labelled.append((x, y))
        ax.annotate(layers[i].name, (x, y), fontsize=7, xytext=(4, 3), textcoords="offset points")


def _draw_roofs(ax, ceilings: Sequence[Ceilings], x, levels: tuple[str, ...] = ("l2", "l1")) -> None:
    """Each operating point's compute and DRAM roofs (cache roofs dashed), ridge dotted."""
    for c, colour in zip(ceilings, itertools.cycle(_POINT_COLOURS)):  # more roof sets than colours: reuse
        ax.plot(x, [min(c.peak_flops, i * c.dram_bandwidth_bps) for i in x], color=colour, lw=2,
                ls="-" if c.dram_unresolved is None else "-.",  # an unmeasured DRAM roof is a bound
                label=f"{c.label}: {c.peak_flops / 1e12:.2f} TFLOP/s, "
                      f"DRAM {c.dram_text()}")
        for level in levels:
            bw = c.bandwidth_bps(level)
            if bw:
                ax.plot(x, [min(c.peak_flops, i * bw) for i in x], color=colour, lw=1, ls="--",
                        alpha=0.6, label=f"{level.upper()} {bw / 1e9:.0f} GB/s")
        ax.axvline(c.ridge_point, color=colour, lw=0.6, ls=":", alpha=0.6)


def roofline_chart(analyses: RooflineAnalysis | Sequence[RooflineAnalysis], path: str | Path, *,
                   title: str | None = None, label_top: int = 5) -> Path:
    """Classic roofline of one or several analyses (one set of roofs per operating point;
    layers of the first analysis as points)."""
    plt = _pyplot()
    analyses = _as_list(analyses)
    ceilings = [a.ceilings for a in analyses]
    lo, hi = _intensity_range(analyses, ceilings)
    x = _logspace(lo, hi)
    fig, ax = plt.subplots(figsize=(8, 5.5))
    _draw_roofs(ax, ceilings, x)
    first = analyses[0]
    _scatter_layers(ax, first, lambda l: l.flops / _layer_time_s(l), label_top)
    ax.set_xscale("log")
    ax.set_yscale("log")
    ax.set_xlabel("arithmetic intensity (FLOP/byte)")
    what = "achieved (measured)" if first.measured_time_s else "attainable incl. overhead"
    ax.set_ylabel(f"performance (FLOP/s), layers: {what}")
    ax.set_title(title or f"Roofline: {first.model} ({first.precision}, batch {first.batch}); "
                          f"point area ~ layer time")
    ax.grid(True, which="both", alpha=0.25)
    ax.legend(fontsize=7, loc="lower right")
    return _save(fig, path)


def time_roofline_chart(analyses: RooflineAnalysis | Sequence[RooflineAnalysis], path: str | Path,
                        *, title: str | None = None, label_top: int = 5) -> Path:
    """Time per GFLOP against arithmetic intensity: roof max(1/F, 1/(I B)) per operating
    point; layers (of the first analysis) at time / FLOPs, including their overhead."""
    plt = _pyplot()
    analyses = _as_list(analyses)
    ceilings = [a.ceilings for a in analyses]
    lo, hi = _intensity_range(analyses, ceilings)
    x = _logspace(lo, hi)
    ms_per_gflop = 1e3 * 1e9
    fig, ax = plt.subplots(figsize=(8, 5.5))
    for a, colour in zip(analyses, itertools.cycle(_POINT_COLOURS)):
        c = a.ceilings
        ax.plot(x, [ms_per_gflop * max(1 / c.peak_flops, 1 / (i * c.dram_bandwidth_bps)) for i in x],
                color=colour, lw=2, label=f"{c.label}: model {a.attainable_time_s * 1e3:.2f} ms")
    first = analyses[0]
    _scatter_layers(ax, first, lambda l: ms_per_gflop * _layer_time_s(l) / l.flops
                    if l.flops else float("nan"), label_top)
    ax.set_xscale("log")
    ax.set_yscale("log")
    ax.set_xlabel("arithmetic intensity (FLOP/byte)")
    ax.set_ylabel("time per work (ms/GFLOP); lower is faster")
    ax.set_title(title or f"Time roofline: {first.model}; T = max(W/F, Q/B) + overhead")
    ax.grid(True, which="both", alpha=0.25)
    ax.legend(fontsize=7, loc="upper right")
    return _save(fig, path)


def energy_roofline_chart(points: Mapping[str, tuple[EnergyRooflineFit, Ceilings]],
                          path: str | Path, *, analysis: RooflineAnalysis | None = None,
                          title: str | None = None) -> Path:
    """FLOP/J against arithmetic intensity for each operating point (name -> (fit, ceilings));
    the energy balance eps_byte / eps_flop is marked. With ``analysis``, its model sits at
    its overall intensity on each curve."""
    plt = _pyplot()
    ceilings = [c for _, c in points.values()]
    lo, hi = _intensity_range([analysis] if analysis else [], ceilings) if ceilings else (0.1, 1e3)
    x = _logspace(lo, hi)
    fig, ax = plt.subplots(figsize=(8, 5.5))
    for (name, (fit, c)), colour in zip(points.items(), _POINT_COLOURS):
        ax.plot(x, [attainable_flops_per_joule(fit, c, i) / 1e9 for i in x], color=colour, lw=2,
                label=f"{name}: eps_flop {fit.eps_flop_j * 1e12:.2f} pJ, eps_byte "
                      f"{fit.eps_byte_j * 1e12:.1f} pJ, pi0 {fit.pi0_w:.1f} W (R2 {fit.r2:.2f})")
        if 0 < fit.energy_balance < float("inf"):
            ax.axvline(fit.energy_balance, color=colour, lw=0.6, ls=":")
        if analysis is not None and analysis.total_bytes:
            i = analysis.total_flops / analysis.total_bytes
            ax.scatter([i], [attainable_flops_per_joule(fit, c, i) / 1e9], color=colour,
                       edgecolors="k", zorder=3, s=50)
    ax.set_xscale("log")
    ax.set_yscale("log")
    ax.set_xlabel("arithmetic intensity (FLOP/byte)")
    ax.set_ylabel("energy efficiency (GFLOP/J)")
    ax.set_title(title or "Energy roofline: E = eps_flop W + eps_byte Q + pi0 T")
    ax.grid(True, which="both", alpha=0.25)
    ax.legend(fontsize=7, loc="lower right")
    return _save(fig, path)


def phase_roofline_chart(phases: Sequence[PhaseBound], path: str | Path, *,
                         compare: Sequence[Ceilings] = (), title: str | None = None) -> Path:
    """A language model's phases on the roofline of the operating point they were bound
    against (the first phase's ceilings; ``compare`` adds other points' roofs): each step at
    its intensity and its FLOP/s (measured when given, else attainable with its per-layer
    overhead), and where the roof puts it (hollow). Prefill in red, decode in blue, darker with
    a longer context."""
    plt = _pyplot()
    if not phases:
        raise ValueError("no phases to draw")
    ceilings = [phases[0].analysis.ceilings, *compare]
    values = [p.arithmetic_intensity for p in phases if p.arithmetic_intensity > 0]
    values += [c.ridge_point for c in ceilings]
    x = _logspace(min(values) / 4, max(values) * 4)
    fig, ax = plt.subplots(figsize=(8, 5.5))
    _draw_roofs(ax, ceilings, x, levels=())
    roof = ceilings[0]
    decodes = sorted(p.context for p in phases if p.phase == "decode")
    for p in phases:
        if p.phase == "decode":
            shade = 0.4 + 0.6 * (decodes.index(p.context) + 1) / len(decodes)
            colour = plt.cm.Blues(shade)
        else:
            colour = BOUND_COLOURS["compute"]
        i = p.arithmetic_intensity
        ax.scatter([i], [p.achieved_flops], s=90, color=colour, edgecolors="k", zorder=4,
                   label=f"{p.label}: {p.arithmetic_intensity:.2f} FLOP/B, {p.bound}-bound, "
                         f"{p.time_per_token_s * 1e3:.3g} ms/token")
        ax.scatter([i], [min(roof.peak_flops, i * roof.dram_bandwidth_bps)], s=60,
                   facecolors="none", edgecolors=colour, zorder=4)
        # Decode steps sit close together: their context, alternately below and above.
        below = p.phase != "decode" or decodes.index(p.context) % 2 == 0
        text = p.label if p.phase != "decode" else f"@ {p.context}"
        ax.annotate(text, (i, p.achieved_flops), fontsize=7, xytext=(0, -14 if below else 9),
                    textcoords="offset points", ha="center")
    ax.set_xscale("log")
    ax.set_yscale("log")
    ax.set_xlabel("arithmetic intensity (FLOP/byte)")
    measured = all(p.measured_time_s for p in phases)
    ax.set_ylabel("performance (FLOP/s): " + ("measured" if measured else
                                              "attainable incl. per-layer overhead; hollow: the roof"))
    first = phases[0].analysis
    ax.set_title(title or f"Prefill and decode of {first.model} ({first.precision}, batch "
                          f"{first.batch}) on {roof.label}", fontsize=9)
    ax.grid(True, which="both", alpha=0.25)
    ax.legend(fontsize=6, loc="lower right")
    ax.set_ylim(bottom=min(p.achieved_flops for p in phases if p.achieved_flops > 0) / 4
                if any(p.achieved_flops > 0 for p in phases) else None)
    return _save(fig, path)


def layer_time_chart(analysis: RooflineAnalysis, path: str | Path, *, top: int = 30,
                     title: str | None = None) -> Path:
    """Horizontal bars of the ``top`` slowest layers (graph order): the roofline time coloured
    by its bound and the fixed overhead stacked on it (ms); measured time as a black tick."""
    plt = _pyplot()
    slowest = sorted(analysis.layers, key=_layer_time_s, reverse=True)[:top]
    order = {id(l): i for i, l in enumerate(analysis.layers)}
    layers = sorted(slowest, key=lambda l: order[id(l)])
    fig, ax = plt.subplots(figsize=(8, 0.6 + 0.25 * max(len(layers), 4)))
    y = range(len(layers))
    roof_ms = [1e3 * max(l.compute_time_s, l.memory_time_s) for l in layers]
    roof_bound = ["compute" if l.compute_time_s > l.memory_time_s else "memory" for l in layers]
    ax.barh(y, roof_ms, color=[BOUND_COLOURS[b] for b in roof_bound])
    ax.barh(y, [1e3 * l.overhead_time_s for l in layers], left=roof_ms, color=BOUND_COLOURS["overhead"])
    measured = [(i, 1e3 * l.measured_time_s) for i, l in enumerate(layers) if l.measured_time_s]
    if measured:
        ax.scatter([m for _, m in measured], [i for i, _ in measured], marker="|", s=120, c="k",
                   label="measured", zorder=3)
    ax.set_yticks(list(y))
    ax.set_yticklabels([f"{l.name} ({l.op_type})" for l in layers], fontsize=7)
    ax.invert_yaxis()
    ax.set_xlabel("time (ms)")
    from matplotlib.patches import Patch
    handles = [Patch(color=colour, label=f"{bound} (fixed term)" if bound == "overhead" else f"{bound}-bound")
               for bound, colour in BOUND_COLOURS.items()]
    ax.legend(handles=handles + ax.get_legend_handles_labels()[0], fontsize=7, loc="lower right")
    total_ms = 1e3 * analysis.attainable_time_s
    ax.set_title(title or f"Per-layer time, {analysis.model}: {total_ms:.2f} ms attainable "
                          f"({analysis.ceilings.label}); {len(layers)} slowest of {len(analysis.layers)}",
                 fontsize=9)
    ax.grid(True, axis="x", alpha=0.25)
    return _save(fig, path)
