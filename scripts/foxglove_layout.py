"""Writes config/foxglove_layout.json, the suite's Foxglove layout, built with the Foxglove
SDK's layout classes (foxglove.layouts) so the file follows Foxglove's own schema.

    python scripts/foxglove_layout.py [OUT]     (default: config/foxglove_layout.json)

Panels: latency vs target, power per rail, energy per inference, operating point and clocks,
the governor's state and reason, the per-layer roofline table and the roofline chart image.
test/viz/test_foxglove_layout.py checks the file is current and that every topic and field it
names is one the suite publishes.
"""

from __future__ import annotations

import json
import sys
from pathlib import Path

from foxglove.layouts import (ImageConfig, ImageModeConfig, ImagePanel, Layout, PlotConfig, PlotPanel, PlotSeries,
                              RawMessagesConfig, RawMessagesPanel, SplitContainer, SplitItem, StateTransitionsConfig,
                              StateTransitionsPanel, StateTransitionsSeries, TabContainer, TabItem, TableConfig,
                              TablePanel)

from edge_roofline.ros import topics

OUT = Path(__file__).resolve().parent.parent / "config" / "foxglove_layout.json"


def path(topic: str, field: str) -> str:
    return f"/{topic}.{field}"


def plot(title: str, series: list[tuple[str, str, str]], y_label: str, **series_options) -> PlotPanel:
    return PlotPanel(title=title, config=PlotConfig(
        paths=[PlotSeries(value=path(topic, field), label=label, enabled=True, timestamp_method="receiveTime",
                          **series_options) for topic, field, label in series],
        y_axis_label=y_label, show_legend=True, time_window_mode="sliding", following_view_width=60.0))


def build() -> Layout:
    gov, stats, power = topics.GOVERNOR_STATE, topics.INFERENCE_STATS, topics.POWER_TELEMETRY
    latency = plot("latency vs target (ms)", [
        (stats, "latency_ms", "per frame"), (gov, "measured_latency_ms", "measured percentile"),
        (gov, "target_latency_ms", "target"), (gov, "predicted_latency_ms", "predicted")], "ms")
    rails = PlotPanel(title="power per rail (W)", config=PlotConfig(paths=[
        PlotSeries(value=path(power, "rails[:].power_w"), label="rail", enabled=True, array_expansion="byIndex",
                   dynamic_label_field="name", timestamp_method="receiveTime"),
        PlotSeries(value=path(power, "total_power_w"), label="module total", enabled=True,
                   timestamp_method="receiveTime")], y_axis_label="W", show_legend=True,
        time_window_mode="sliding", following_view_width=60.0))
    energy = plot("energy per inference (J)", [
        (gov, "measured_energy_per_inference_j", "measured"),
        (gov, "predicted_energy_per_inference_j", "predicted")], "J")
    clocks = plot("clocks (Hz)", [(power, "gpu_freq_hz", "GPU"), (power, "emc_freq_hz", "EMC")], "Hz")
    point = StateTransitionsPanel(title="operating point", config=StateTransitionsConfig(paths=[
        StateTransitionsSeries(value=path(gov, "current_point.name"), label="in force", timestamp_method="receiveTime"),
        StateTransitionsSeries(value=path(gov, "state"), label="governor state", timestamp_method="receiveTime"),
        StateTransitionsSeries(value=path(power, "nvpmodel_mode"), label="nvpmodel", timestamp_method="receiveTime")]))
    reason = RawMessagesPanel(title="governor (reason for every change)",
                              config=RawMessagesConfig(topic_path=f"/{gov}"))
    layers = TablePanel(title="per-layer roofline",
                        config=TableConfig(topic_path=path(topics.ROOFLINE_REPORT, "layers")))
    chart = ImagePanel(title="roofline chart", config=ImageConfig(
        image_mode=ImageModeConfig(image_topic=f"/{topics.ROOFLINE_CHART}")))
    live = SplitContainer(direction="column", items=[
        SplitItem(content=SplitContainer(direction="row",
                                         items=[SplitItem(content=latency), SplitItem(content=energy)])),
        SplitItem(content=SplitContainer(direction="row",
                                         items=[SplitItem(content=rails), SplitItem(content=clocks)])),
        SplitItem(content=SplitContainer(direction="row", items=[SplitItem(content=point), SplitItem(content=reason)])),
    ])
    roofline = SplitContainer(direction="row", items=[SplitItem(content=chart), SplitItem(content=layers)])
    return Layout(content=TabContainer(tabs=[TabItem(title="governor and power", content=live),
                                             TabItem(title="roofline", content=roofline)]))


def render() -> str:
    return json.dumps(json.loads(build().to_json()), indent=1) + "\n"


def main(argv: list[str]) -> int:
    out = Path(argv[1]) if len(argv) > 1 else OUT
    out.write_text(render())
    print(f"wrote {out}")
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv))
