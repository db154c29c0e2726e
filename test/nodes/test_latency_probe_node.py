"""Real rclpy: latency_probe measures a node that is not ours (a plain rclpy stand-in that
answers each image after a fixed delay with the input's header, dropping every 4th) from its
topics alone, types resolved from the graph, and publishes InferenceStats the governor reads."""

import statistics
import subprocess
import sys
from pathlib import Path

from edge_roofline.ros import topics
from edge_roofline.msg import InferenceStats
from test.nodes.rosutil import REPO, log_text, start_node, stop_node, watcher

DELAY_S = 0.04


def test_probe_measures_a_third_party_node(ros_env, tmp_path):
    stats = []
    log = tmp_path / "probe.log"
    with watcher(ros_env) as (node, spin_until):
        node.create_subscription(InferenceStats, f"/det/{topics.INFERENCE_STATS}", stats.append, 50)
        procs = [
            subprocess.Popen([sys.executable, str(Path(__file__).with_name("third_party_detector.py")),
                              "/camera/image", "/det/detections", str(DELAY_S), "4"], env=ros_env, cwd=REPO),
            start_node("latency_probe", ros_env, {"input_topic": "/camera/image", "output_topic": "/det/detections",
                                                  "model_id": "vendor_yolo", "timeout_s": 0.5},
                       log, namespace="/det"),
            start_node("synthetic_camera", ros_env, {"topic": "/camera/image", "width": 64, "height": 48,
                                                     "rate_hz": 15.0}),
        ]
        try:
            ok = spin_until(lambda: len(stats) >= 24 and stats[-1].frames_dropped >= 3, timeout_s=60, procs=procs)
            assert ok, f"stats={len(stats)}\n{log_text(log)}"
        finally:
            for p in procs:
                stop_node(p)

    latencies_ms = [s.latency_ms for s in stats]
    # The stand-in's delay plus two hops of loopback transport and the probe's own callbacks.
    assert DELAY_S * 1e3 <= statistics.median(latencies_ms) <= DELAY_S * 1e3 + 30, latencies_ms
    last = stats[-1]
    assert last.model_id == "vendor_yolo" and last.backend == "external:/det/detections"
    # Every 4th input is never answered: a quarter of the inputs, give or take those in flight.
    answered_or_dropped = last.frame_index + last.frames_dropped
    assert last.frames_received - 2 <= answered_or_dropped <= last.frames_received
    assert 0.15 <= last.frames_dropped / answered_or_dropped <= 0.35
    assert "got no output within 0.5 s" in log_text(log)


def test_probe_refuses_a_type_without_header(ros_env, tmp_path):
    proc = subprocess.run([sys.executable, "-m", "edge_roofline.nodes.latency_probe", "--ros-args",
                           "-p", "input_topic:=/a", "-p", "output_topic:=/b", "-p", "input_type:=std_msgs/msg/String"],
                          env=ros_env, cwd=REPO, capture_output=True, text=True, timeout=60)
    assert proc.returncode == 2
    assert "std_msgs/msg/String has no std_msgs/Header 'header' field" in proc.stderr
    assert "Traceback" not in proc.stderr
