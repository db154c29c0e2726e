"""Real rclpy (issue 23, finding 7): the inference node on `platform: cpu` with
`device: agx_orin_64gb` (ONNX Runtime on this host's CPU, timed against the AGX Orin's GPU roofs)
says on every roofline report and on /diagnostics that the roofs do not match where the model
runs, with the parameter to set; the matching setup says nothing of the kind."""

import pytest
from diagnostic_msgs.msg import DiagnosticArray, DiagnosticStatus

from edge_roofline.msg import RooflineReport
from edge_roofline.ros import topics
from test.nodes.rosutil import log_text, start_node, stop_node, watcher


@pytest.mark.parametrize("params,mismatch", [
    ({"platform": "cpu", "device": "agx_orin_64gb", "engine": "gpu"}, True),
    ({"device": "agx_orin_64gb", "engine": "cpu"}, False),
])
def test_every_report_and_diagnostics_say_when_the_roofs_do_not_match(ros_env, tmp_path, params, mismatch):
    log = tmp_path / "inference.log"
    reports: list[RooflineReport] = []
    roofs: list[DiagnosticStatus] = []

    def on_diagnostics(array: DiagnosticArray) -> None:
        roofs.extend(s for s in array.status if s.name.endswith(": roofs"))

    proc = start_node("inference", ros_env, {"model": "zoo:tiny_cnn", "profile_every_s": 0.5,
                                             "profile_budget_fraction": 1.0, "publish_chart": False, **params}, log)
    with watcher(ros_env) as (node, spin_until):
        node.create_subscription(RooflineReport, topics.ROOFLINE_REPORT, reports.append, 10)
        node.create_subscription(DiagnosticArray, topics.DIAGNOSTICS, on_diagnostics, 10)
        try:
            assert spin_until(lambda: len(reports) >= 3 and roofs, timeout_s=90, procs=[proc]), log_text(log)
        finally:
            assert stop_node(proc) == 0, log_text(log)
    if mismatch:
        assert all(r.warnings and "do not match where the model runs" in r.warnings[0] for r in reports)
        assert "-p device:=''" in reports[0].warnings[0]
        assert roofs[-1].level == DiagnosticStatus.WARN and "this host's CPU" in roofs[-1].message
        assert "do not match where the model runs" in log_text(log)
    else:
        assert not any(r.warnings for r in reports) and roofs[-1].level == DiagnosticStatus.OK
