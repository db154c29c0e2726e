"""``edge-roofline report DIR``: one self-contained HTML page from a sweep database (charts as
base64 PNG, tables sortable by a small inline script, a SIMULATION banner for virtual sweeps),
plus the charts as files and the operating-point tables the governor can load."""

from __future__ import annotations

import base64
import html
import math
from pathlib import Path
from typing import Any, Sequence

from edge_roofline.roofline.devices import UnknownDeviceError, get_device

from . import charts
from .predict import accuracy
from .results import ModelSummary, energy_roofline_fits, operating_point_table, summarise, write_table
from .store import DB_NAME, Store, StoreError

REPORT_NAME = "report.html"

_SCRIPT = """
document.querySelectorAll('table.sortable').forEach(function (table) {
  table.querySelectorAll('th').forEach(function (th, col) {
    th.addEventListener('click', function () {
      var body = table.tBodies[0], rows = Array.from(body.rows);
      var asc = th.dataset.order !== 'asc';
      table.querySelectorAll('th').forEach(function (h) { delete h.dataset.order; });
      th.dataset.order = asc ? 'asc' : 'desc';
      rows.sort(function (a, b) {
        var x = a.cells[col].dataset.v || a.cells[col].textContent,
            y = b.cells[col].dataset.v || b.cells[col].textContent;
        var nx = parseFloat(x), ny = parseFloat(y);
        var c = (!isNaN(nx) && !isNaN(ny)) ? nx - ny : x.localeCompare(y);
        return asc ? c : -c;
      });
      rows.forEach(function (r) { body.appendChild(r); });
    });
  });
});
"""

_STYLE = """
body { font-family: sans-serif; margin: 1.5em; color: #222; }
.banner { background: #b00020; color: white; font-weight: bold; padding: .6em 1em; font-size: 1.2em; }
table { border-collapse: collapse; font-size: 12px; margin: .5em 0 1.5em; }
th, td { border: 1px solid #ccc; padding: 2px 6px; text-align: right; }
th { background: #eee; cursor: pointer; user-select: none; }
th[data-order=asc]::after { content: ' \\25B2'; } th[data-order=desc]::after { content: ' \\25BC'; }
td.t, th.t { text-align: left; }
tr.pareto td { background: #fff3e0; }
img { max-width: 100%; border: 1px solid #ddd; margin: .3em 0; }
.fail { color: #b00020; }
"""


def _fmt(value: Any, digits: int = 4) -> str:
    if value is None or (isinstance(value, float) and not math.isfinite(value)):
        return "-"
    if isinstance(value, float):
        return f"{value:.{digits}g}"
    return str(value)


def _table(headers: Sequence[str], rows: Sequence[Sequence[Any]], row_classes: Sequence[str] = ()) -> str:
    head = "".join(f"<th class=\"{'t' if i == 0 else ''}\">{html.escape(h)}</th>" for i, h in enumerate(headers))
    body = []
    for k, row in enumerate(rows):
        cls = f" class=\"{row_classes[k]}\"" if k < len(row_classes) and row_classes[k] else ""
        cells = []
        for i, v in enumerate(row):
            sort_key = f" data-v=\"{v}\"" if isinstance(v, (int, float)) and math.isfinite(v) else ""
            cells.append(f"<td class=\"{'t' if isinstance(v, str) else ''}\"{sort_key}>{html.escape(_fmt(v))}</td>")
        body.append(f"<tr{cls}>{''.join(cells)}</tr>")
    return f"<table class=\"sortable\"><thead><tr>{head}</tr></thead><tbody>{''.join(body)}</tbody></table>"


def _img(path: Path | None, alt: str) -> str:
    if path is None:
        return ""
    data = base64.b64encode(Path(path).read_bytes()).decode("ascii")
    return f"<img alt=\"{html.escape(alt)}\" src=\"data:image/png;base64,{data}\">"


def _load_cost(source: str, precision: str):
    """The model's cost for roofline charts, or None when its source is not available here."""
    from edge_roofline.models.source import load_model
    from edge_roofline.roofline.costs import analyze_model

    try:
        return analyze_model(load_model(source), precision=precision)
    except Exception:  # noqa: BLE001 - a missing or changed model only drops two charts
        return None


def _model_section(store: Store, sweep, summary: ModelSummary, fits, chart_dir: Path, device,
                   simulated: bool) -> str:
    """One model's part of the page; ``device``: the catalogue device swept (None: not catalogued,
    no roofline charts)."""
    m, prec = summary.model, summary.precision
    settings = sweep.settings
    measured = store.results(m, prec, status="ok")
    predicted = store.predictions(m, prec)
    parts = [f"<h2>{html.escape(m)} ({prec})</h2>"]
    parts.append(f"<p>{len(measured)} points measured, {len(summary.failures)} failed, "
                 f"{sum(1 for r in summary.rows if r.source == 'predicted')} predicted; sweep wall time "
                 f"{_fmt(sweep.sweep_wall_s, 3)} s; settings: "
                 f"{html.escape(', '.join(f'{k}={v}' for k, v in sorted(settings.items())))}; point found "
                 f"at start (restored after): {html.escape(sweep.original_point)}</p>")
    if predicted:
        acc = accuracy(predicted, measured)
        fitted = predicted[0].fitted_on
        if acc is None:
            parts.append(f"<p>Few-sample mode: fitted on {len(fitted)} points; no full sweep in this "
                         "database to score the predictions against.</p>")
        else:
            parts.append(f"<p>Few-sample predictor (fitted on {len(fitted)} points) against {acc.points} "
                         f"measured points it was not fitted on: latency MAPE "
                         f"<b>{acc.latency_mape_pct:.1f}%</b> (max {acc.latency_max_pct:.1f}%), power "
                         f"MAPE <b>{acc.power_mape_pct:.1f}%</b> (max {acc.power_max_pct:.1f}%), energy "
                         f"MAPE {acc.energy_mape_pct:.1f}%.</p>")
    parts.append(_img(charts.pareto_chart(summary, chart_dir / f"pareto_{m}_{prec}.png", simulated=simulated),
                      "Pareto chart"))
    parts.append(_img(charts.heatmap_chart(summary, chart_dir / f"heatmap_{m}_{prec}.png", simulated=simulated),
                      "heatmaps"))
    parts.append("<h3>Energy-optimal point per latency target</h3>")
    parts.append(_table(["latency target (ms)", "point", "source", "latency (ms)", "energy (mJ)", "power (W)"],
                        [[c.target_ms, c.choice.name if c.choice else "none meets it",
                          c.choice.source if c.choice else "", c.choice.latency_ms if c.choice else None,
                          1e3 * c.choice.energy_per_inference_j if c.choice else None,
                          c.choice.power_w if c.choice else None] for c in summary.choices]))
    cost = _load_cost(settings.get("model_source", ""), prec) if device else None
    if cost is not None:
        layer_times = {r.name: r.layer_times_s for r in measured if r.layer_times_s}
        parts.append(_img(charts.time_roofline_chart(summary, cost, device, layer_times,
                                                     chart_dir / f"time_roofline_{m}_{prec}.png",
                                                     simulated=simulated), "time roofline"))
        parts.append(_img(charts.energy_roofline_chart(fits, summary, cost, device,
                                                       chart_dir / f"energy_roofline_{m}_{prec}.png",
                                                       simulated=simulated), "energy roofline"))
    parts.append("<h3>All points (click a header to sort; Pareto points shaded)</h3>")
    front = {r.name for r in summary.front}
    ordered = sorted(summary.rows, key=lambda r: r.latency_ms)
    parts.append(_table(
        ["point", "source", "cores", "CPU MHz", "GPU MHz", "EMC MHz", "latency mean (ms)", "p95 (ms)",
         "energy (mJ)", "power (W)", "idle power (W)", "runs"],
        [[r.name, r.source, r.point.cpu_online_cores, _mhz(r.point.cpu_max_freq_hz), _mhz(r.point.gpu_max_freq_hz),
          _mhz(r.point.emc_max_freq_hz), r.latency_ms, r.latency_p95_ms, 1e3 * r.energy_per_inference_j,
          r.power_w, r.idle_power_w, r.runs] for r in ordered],
        ["pareto" if r.name in front else "" for r in ordered]))
    if summary.failures:
        parts.append("<h3 class=\"fail\">Failed points</h3>")
        parts.append(_table(["point", "error"], [[f.name, f.error] for f in summary.failures]))
    return "\n".join(p for p in parts if p)


def _mhz(hz: float | None) -> float | None:
    return None if hz is None else round(hz / 1e6, 1)


def render(out_dir: str | Path, targets_ms: list[float] | None = None) -> Path:
    """Write ``report.html``, charts under ``charts/`` and one operating-point table per model."""
    out_dir = Path(out_dir)
    no_sweep = (f"{out_dir} holds no sweep ({DB_NAME} %s); run `edge-roofline sweep MODEL --out {out_dir}` first")
    if not (out_dir / DB_NAME).is_file():
        raise FileNotFoundError(no_sweep % "missing")
    chart_dir = out_dir / "charts"
    with Store(out_dir) as store:
        if not store.sweeps():  # an empty report would look like a sweep that measured nothing
            raise StoreError(no_sweep % "is empty")
        meta = store.meta()
        simulated = meta.get("simulated") == "1"
        try:
            device = get_device(meta.get("device", ""))
        except UnknownDeviceError:
            device = None
        sections = []
        fits_by_precision: dict[str, dict] = {}
        for sweep in store.sweeps():
            fits = fits_by_precision.setdefault(sweep.precision, energy_roofline_fits(store, sweep.precision))
            summary = summarise(store, sweep.model, sweep.precision, targets_ms)
            write_table(out_dir, operating_point_table(store, summary))
            sections.append(_model_section(store, sweep, summary, fits, chart_dir, device, simulated))
        fit_rows = [[name, precision, len(models), fit.eps_flop_j * 1e12, fit.eps_byte_j * 1e12, fit.pi0_w, fit.r2]
                    for precision, fits in fits_by_precision.items() for name, (fit, models) in fits.items()]
    title = f"edge-roofline characterisation: {meta.get('device', '?')}"
    banner = ("<div class=\"banner\">SIMULATION - virtual Jetson: every number on this page comes "
              "from the simulator, not from a device</div>" if simulated else "")
    fit_text = ("<p>Fitted per point across the models swept into this database (one sample per model: "
                "FLOPs, DRAM bytes, mean latency, energy per inference); needs 3+ models at a point. "
                "Model-to-model differences beyond W, Q and T land in the residual (R2); with exactly three "
                "models the fit is exactly determined, so R2 = 1 says nothing: sweep four or more "
                "to test the model.</p>"
                + _table(["point", "precision", "models", "eps_flop (pJ/FLOP)", "eps_byte (pJ/B)", "pi0 (W)", "R2"],
                         fit_rows) if fit_rows else
                "<p>No energy-roofline fits: they need three or more models swept into the same "
                "--out (one sample per model at each point).</p>")
    page = (f"<!DOCTYPE html><html><head><meta charset=\"utf-8\"><title>{html.escape(title)}</title>"
            f"<style>{_STYLE}</style></head><body>{banner}<h1>{html.escape(title)}</h1>"
            f"<p>platform: {html.escape(meta.get('platform', '?'))}</p>{''.join(sections)}"
            f"<h2>Energy roofline parameters per point</h2>{fit_text}{banner}"
            f"<script>{_SCRIPT}</script></body></html>")
    path = out_dir / REPORT_NAME
    path.write_text(page)
    return path
