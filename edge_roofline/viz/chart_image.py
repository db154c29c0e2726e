"""The roofline chart as PNG bytes, for the image topic rqt_image_view and Foxglove show."""

from __future__ import annotations

import tempfile
from pathlib import Path

from edge_roofline.roofline.charts import roofline_chart
from edge_roofline.roofline.model import RooflineAnalysis


def roofline_png(analysis: RooflineAnalysis, title: str) -> bytes:
    with tempfile.TemporaryDirectory(prefix="edge_roofline_chart_") as tmp:
        path = roofline_chart(analysis, Path(tmp) / "roofline.png", title=title)
        return path.read_bytes()
