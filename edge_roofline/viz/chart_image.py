"""Roofline charts as PNG bytes, for the image topic rqt_image_view and Foxglove show."""

from __future__ import annotations

import tempfile
from pathlib import Path
from typing import Callable, Sequence

from edge_roofline.roofline.charts import phase_roofline_chart, roofline_chart
from edge_roofline.roofline.model import RooflineAnalysis
from edge_roofline.roofline.phases import PhaseBound


def _png(draw: Callable[[Path], Path]) -> bytes:
    with tempfile.TemporaryDirectory(prefix="edge_roofline_chart_") as tmp:
        return draw(Path(tmp) / "chart.png").read_bytes()


def roofline_png(analysis: RooflineAnalysis, title: str) -> bytes:
    return _png(lambda path: roofline_chart(analysis, path, title=title))


def phase_roofline_png(phases: Sequence[PhaseBound], title: str) -> bytes:
    """A language model's phases (prefill, decode) on the roofline of their operating point."""
    return _png(lambda path: phase_roofline_chart(phases, path, title=title))
