"""Real rclpy and a Foxglove WebSocket client (issue 23, finding 4): with the virtual AGX Orin's
shipped parameters and no camera at all (as `edge-roofline up` starts it), the first roofline
report comes within 5 s of the inference node's start, and a Foxglove client that connects
later still gets a report and the chart (the layout's Table and Image panels) within the
configured cadence, not after 40 s or never."""

import asyncio
import re
import time

import yaml

from edge_roofline.msg import RooflineReport
from edge_roofline.paths import config_file
from edge_roofline.ros import topics
from test.nodes.rosutil import log_text, start_node, stop_node, watcher
from test.suite.test_foxglove_client import decode, free_port, receive


def test_reports_come_without_a_camera_and_reach_a_late_foxglove_client(board, ros_env, tmp_path):
    shipped = yaml.safe_load(config_file("virtual_agx_orin.yaml").read_text())["inference"]["ros__parameters"]
    params = {**shipped, "sysfs_root": str(board), "model": "zoo:tiny_cnn"}
    every_s = params["profile_every_s"]
    port = free_port()
    log, bridge_log = tmp_path / "inference.log", tmp_path / "bridge.log"
    reports: list[tuple[float, RooflineReport]] = []
    bridge = start_node("foxglove_bridge", ros_env, {"port": port, "topics": [topics.ROOFLINE_REPORT,
                                                                                topics.ROOFLINE_CHART]}, bridge_log)
    with watcher(ros_env) as (node, spin_until):
        node.create_subscription(RooflineReport, topics.ROOFLINE_REPORT,
                                 lambda m: reports.append((time.monotonic(), m)), 5)
        inference = start_node("inference", ros_env, params, log)
        try:
            assert spin_until(lambda: "serving" in log_text(log), timeout_s=90, procs=[inference]), log_text(log)
            ready_s = time.monotonic()
            assert spin_until(lambda: reports, timeout_s=30, procs=[inference]), log_text(log)
            first_s = reports[0][0] - ready_s
            spin_until(lambda: False, timeout_s=2.0)  # the client connects after the first report
            connected_s = time.monotonic()
            got = asyncio.run(receive(port, {topics.ROOFLINE_REPORT, topics.ROOFLINE_CHART},
                                      timeout_s=every_s + 10))
            waited_s = time.monotonic() - connected_s
        finally:
            stop_node(inference)
            stop_node(bridge)
    assert first_s < 5.0, f"first report {first_s:.1f} s after the node was ready"
    assert set(got) == {topics.ROOFLINE_REPORT, topics.ROOFLINE_CHART}, log_text(bridge_log)
    assert waited_s < every_s + 5, f"the late client waited {waited_s:.1f} s"
    report = decode(*got[topics.ROOFLINE_REPORT])
    assert report.model_id == "zoo:tiny_cnn" and report.simulated and re.match(r"MAXN", report.operating_point.name)
    assert not report.warnings  # the virtual backend on the virtual Orin: the roofs match
