"""The console's summary says where the board is (from the power monitor's reading), where the
per-layer table was profiled, and the governor's own point, so a stale table reads as stale."""

from edge_roofline.viz.console import ConsoleSnapshot, LayerLine, render


def test_the_console_names_the_board_point_and_where_the_table_was_profiled():
    snap = ConsoleSnapshot(device="virtual Jetson AGX Orin 64GB", operating_point="MAXN/c6-cpu1498-gpu612-emc2133",
                           report_point="MAXN", governor_mode="active", governor_state="holding",
                           governor_point="MAXN/c6-cpu1498-gpu612-emc2133",
                           layers=[LayerLine("conv0", "Conv", 1e-3, "compute", 0.5)])
    text = render(snap)
    assert "point MAXN/c6-cpu1498-gpu612-emc2133" in text
    assert "profiled at MAXN; the board is at MAXN/c6-cpu1498-gpu612-emc2133 now, a new report is due" in text
    assert "governor active/holding  point MAXN/c6-cpu1498-gpu612-emc2133" in text
    snap.report_point = snap.operating_point
    assert "a new report is due" not in render(snap)
