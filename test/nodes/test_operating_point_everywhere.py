"""Real rclpy (issue 23, finding 3): one truth for the operating point. A live virtual AGX Orin,
the power monitor, the inference node (virtual backend), the console and a recording
(foxglove_bridge to MCAP); another process moves the board to capped clocks, as the governor
does. Within one publish period every PowerTelemetry names the new point with its caps, a
roofline report profiled at it follows, the console prints it, and `edge-roofline recording`
lists it. Before, all four kept the point each process had cached at start."""

import subprocess
import sys
import textwrap
import time

from sensor_msgs.msg import Image

from edge_roofline.msg import PowerTelemetry, RooflineReport
from edge_roofline.platforms.grid import caps_grid
from edge_roofline.roofline.devices import get_device
from edge_roofline.ros import topics
from edge_roofline.ros.recording import read_recording
from edge_roofline.ros.stamps import stamp_s
from test.nodes.rosutil import REPO, log_text, start_node, stop_node, watcher
from test.nodes.virtual_rig import DEVICE

ORIN = get_device(DEVICE)


def move_board(root, point_name: str) -> None:
    """Apply a point from another process, through the platform a governor uses."""
    code = textwrap.dedent(f"""
        from edge_roofline.platforms import create_platform
        p = create_platform("virtual:{DEVICE}", sysfs_root={str(root)!r})
        p.apply(next(pt for pt in p.operating_points() if pt.name == {point_name!r}))
    """)
    subprocess.run([sys.executable, "-c", code], cwd=REPO, check=True, timeout=60)


def test_a_move_shows_in_telemetry_reports_console_and_recording(board, ros_env, tmp_path):
    grid = caps_grid(ORIN, ORIN.preset(0))
    top_gpu_hz = max(p.gpu_max_freq_hz for p in grid)
    target = next(p for p in grid if p.cpu_online_cores < 12 and p.gpu_max_freq_hz < top_gpu_hz)
    virtual = {"platform": f"virtual:{DEVICE}", "sysfs_root": str(board)}
    logs = {name: tmp_path / f"{name}.log" for name in ("power_monitor", "inference", "console", "bridge")}
    mcap = tmp_path / "session.mcap"
    telemetry: list[PowerTelemetry] = []
    reports: list[RooflineReport] = []
    with watcher(ros_env) as (node, spin_until):
        node.create_subscription(PowerTelemetry, topics.POWER_TELEMETRY, telemetry.append, 50)
        node.create_subscription(RooflineReport, topics.ROOFLINE_REPORT, reports.append, 10)
        camera = node.create_publisher(Image, "image", 5)
        image = Image(height=64, width=64, encoding="rgb8", step=64 * 3, data=bytes(64 * 64 * 3))

        def publish_frame():
            image.header.stamp = node.get_clock().now().to_msg()
            camera.publish(image)

        node.create_timer(1.0 / 15.0, publish_frame)
        procs = {
            "bridge": start_node("foxglove_bridge", ros_env, {
                "serve": False, "mcap_path": str(mcap),
                "topics": [topics.POWER_TELEMETRY, topics.ROOFLINE_REPORT, topics.INFERENCE_STATS]}, logs["bridge"]),
            "power_monitor": start_node("power_monitor", ros_env, virtual, logs["power_monitor"]),
            "inference": start_node("inference", ros_env, {
                **virtual, "model": "zoo:tiny_cnn", "backend": "virtual", "precision": "fp16", "device": DEVICE,
                "engine": "gpu", "profile_every_frames": 0, "profile_every_s": 0.0, "publish_chart": False},
                logs["inference"]),
            "console": start_node("console", ros_env, {"period_s": 0.5}, logs["console"]),
        }

        def everything() -> str:
            return "\n".join(f"--- {n}\n{log_text(p)}" for n, p in logs.items())

        try:
            assert spin_until(lambda: len(telemetry) >= 20 and reports and "point MAXN" in log_text(logs["console"]),
                              timeout_s=90, procs=list(procs.values())), everything()
            assert reports[-1].operating_point.name == "MAXN"
            move_board(board, target.name)
            moved_s = stamp_s(node.get_clock().now())
            after = lambda: [m for m in telemetry if stamp_s(m.header.stamp) > moved_s + 0.001]  # noqa: E731
            assert spin_until(lambda: len(after()) >= 10, timeout_s=30, procs=list(procs.values()))
            assert spin_until(lambda: any(r.operating_point.name == target.name for r in reports), timeout_s=10,
                              procs=list(procs.values())), [r.operating_point.name for r in reports]
            report_s = time.monotonic()
            assert spin_until(lambda: f"point {target.name}" in log_text(logs["console"]), timeout_s=10), \
                log_text(logs["console"])[-2000:]
            console_s = time.monotonic() - report_s
        finally:
            for name in ("console", "inference", "power_monitor", "bridge"):
                stop_node(procs[name])
    # Every PowerTelemetry published after the move names it, caps included (read at publish).
    for m in after():
        p = m.operating_point
        assert p.name == target.name, p.name
        assert (p.cpu_online_cores, p.cpu_max_freq_hz, p.gpu_max_freq_hz, p.emc_max_freq_hz) == \
            (target.cpu_online_cores, target.cpu_max_freq_hz, target.gpu_max_freq_hz, target.emc_max_freq_hz)
    assert console_s < 10
    summary = read_recording(mcap)
    assert summary.operating_points[0] == "MAXN" and target.name in summary.operating_points, summary.lines()
    assert target.name in summary.report_points, summary.lines()
    printed = subprocess.run([sys.executable, "-m", "edge_roofline.cli", "recording", str(mcap)], cwd=REPO,
                             capture_output=True, text=True, timeout=120)
    # (A move writes file after file: a reading in between may list an intermediate state too.)
    line = next(line for line in printed.stdout.splitlines() if line.startswith("operating points: "))
    assert line.startswith("operating points: MAXN -> ") and line.endswith(target.name), printed.stdout
