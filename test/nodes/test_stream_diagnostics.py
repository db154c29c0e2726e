"""Real rclpy: /diagnostics carries a frequency and a timestamp status for power/telemetry
(power monitor) and inference/stats (inference node), as rqt_robot_monitor shows them. A stream
that flows is OK; stop it and its statuses go ERROR (no events) and WARN (no data). Every status
names its hardware."""

import os
import time

import numpy as np
from diagnostic_msgs.msg import DiagnosticArray, DiagnosticStatus
from sensor_msgs.msg import Image

from edge_roofline.ros import topics
from edge_roofline.virtual.live import LiveVirtualJetson
from test.nodes.rosutil import log_text, start_node, stop_node, watcher

FAST_DIAGNOSTICS = {"diagnostics_rate_hz": 5.0}  # the 5-period frequency window spans 1 s


def latest(diagnostics: list, name: str) -> DiagnosticStatus | None:
    for array in reversed(diagnostics):
        for status in array.status:
            if status.name == name:
                return status
    return None


def level_is(diagnostics, name, level):
    return lambda: (status := latest(diagnostics, name)) is not None and status.level == level


def assert_hardware_named(diagnostics):
    statuses = [s for array in diagnostics for s in array.status]
    assert statuses and all(s.hardware_id for s in statuses), {s.name: s.hardware_id for s in statuses}


def test_power_telemetry_stall_shows_in_diagnostics(ros_env, tmp_path):
    board = LiveVirtualJetson(tmp_path / "orin", "agx_orin_64gb", mode_id=0).start()
    frequency = f"edge_roofline: {topics.POWER_TELEMETRY} topic frequency"
    timestamp = f"edge_roofline: {topics.POWER_TELEMETRY} topic timestamp"
    diagnostics = []
    log = tmp_path / "power_monitor.log"
    params = {"platform": "virtual:agx_orin_64gb", "sysfs_root": str(board.root), **FAST_DIAGNOSTICS}
    rail = None
    try:
        with watcher(ros_env) as (node, spin_until):
            node.create_subscription(DiagnosticArray, topics.DIAGNOSTICS, diagnostics.append, 50)
            proc = start_node("power_monitor", ros_env, params, log)
            try:
                assert spin_until(level_is(diagnostics, frequency, DiagnosticStatus.OK), timeout_s=40, procs=[proc]), \
                    (latest(diagnostics, frequency), log_text(log))
                flowing = latest(diagnostics, timestamp)
                # A hung I2C bus: reading a rail blocks. A FIFO in place of one rail file blocks
                # the sampler's read the same way; telemetry still goes out every period, with
                # no fresh sample in it.
                board.stop()
                ina3221 = board.root / "sys" / "bus" / "i2c" / "drivers" / "ina3221"
                rail = next(ina3221.glob("*/hwmon/hwmon*/in*_input"))
                rail.unlink()
                os.mkfifo(rail)
                assert spin_until(level_is(diagnostics, frequency, DiagnosticStatus.ERROR), timeout_s=20,
                                  procs=[proc]), (latest(diagnostics, frequency), log_text(log))
                stalled = latest(diagnostics, timestamp)
            finally:
                if rail is not None:  # release the blocked read
                    os.close(os.open(rail, os.O_WRONLY | os.O_NONBLOCK))
                assert stop_node(proc) == 0, log_text(log)
    finally:
        board.stop()
    assert flowing.level == DiagnosticStatus.OK
    assert latest(diagnostics, frequency).message == "No events recorded."
    assert (stalled.level, stalled.message) == (DiagnosticStatus.WARN, "No data since last update.")
    assert_hardware_named(diagnostics)


def test_inference_stats_stall_shows_in_diagnostics(ros_env, tmp_path):
    frequency = f"edge_roofline: {topics.INFERENCE_STATS} topic frequency"
    timestamp = f"edge_roofline: {topics.INFERENCE_STATS} topic timestamp"
    diagnostics = []
    log = tmp_path / "inference.log"
    # Catalogue roofs: the host CPU ceilings would be measured at start (slow, host-dependent).
    params = {"model": "zoo:tiny_cnn", "device": "agx_orin_64gb", "publish_outputs": False, "publish_chart": False,
              "profile_every_frames": 0, "profile_every_s": 0.0, **FAST_DIAGNOSTICS}
    pixels = np.random.default_rng(0).integers(0, 255, (48, 64, 3), dtype=np.uint8)
    with watcher(ros_env) as (node, spin_until):
        node.create_subscription(DiagnosticArray, topics.DIAGNOSTICS, diagnostics.append, 50)
        camera = node.create_publisher(Image, "image", 10)
        proc = start_node("inference", ros_env, params, log)

        def send_frame():
            image = Image(height=48, width=64, encoding="bgr8", step=64 * 3, data=pixels.tobytes())
            image.header.stamp = node.get_clock().now().to_msg()
            camera.publish(image)

        timer = node.create_timer(0.05, send_frame)  # a 20 Hz camera
        try:
            assert spin_until(level_is(diagnostics, timestamp, DiagnosticStatus.OK), timeout_s=60, procs=[proc]), \
                (latest(diagnostics, timestamp), log_text(log))
            assert latest(diagnostics, frequency).level == DiagnosticStatus.OK
            node.destroy_timer(timer)  # the camera stops
            stopped_s = time.monotonic()
            assert spin_until(level_is(diagnostics, frequency, DiagnosticStatus.ERROR), timeout_s=20,
                              procs=[proc]), (latest(diagnostics, frequency), log_text(log))
            stall_seen_s = time.monotonic() - stopped_s
            stalled = latest(diagnostics, timestamp)
        finally:
            assert stop_node(proc) == 0, log_text(log)
    assert (stalled.level, stalled.message) == (DiagnosticStatus.WARN, "No data since last update.")
    assert stall_seen_s < 10.0  # within a few diagnostics periods, not a timeout
    assert_hardware_named(diagnostics)
