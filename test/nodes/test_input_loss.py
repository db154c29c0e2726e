"""Real rclpy and Fast DDS: frames lost before the inference node are counted (stamp gaps, and
what DDS reports lost), reported in InferenceStats, on /diagnostics and in one log line; every
node applies the shipped Fast DDS profile (its shared-memory segment) when the user set none."""

import os
import time
from pathlib import Path

import numpy as np
from diagnostic_msgs.msg import DiagnosticArray, DiagnosticStatus
from sensor_msgs.msg import Image

from edge_roofline.ros import topics
from edge_roofline.msg import InferenceStats
from edge_roofline.suite.env import PROFILE_VARIABLES, profile_variable
from test.nodes.rosutil import log_text, start_node, stop_node, watcher

NODE = {"model": "zoo:tiny_cnn", "device": "agx_orin_64gb", "engine": "cpu", "publish_chart": False,
        "profile_every_frames": 0, "profile_every_s": 0.0}
PERIOD_NS = 33_333_333
SKIPPED = range(40, 45)  # the frames the camera "loses"

# Fast DDS's own transports (512 KB shared-memory segment) with the suite's quick discovery: the
# profile this package shipped before, which a camera driver without our profile still runs.
DEFAULT_TRANSPORTS_PROFILE = """<?xml version="1.0" encoding="UTF-8" ?>
<profiles xmlns="http://www.eprosima.com/XMLSchemas/fastRTPS_Profiles">
  <participant profile_name="default_transports" is_default_profile="true"><rtps><builtin><discovery_config>
    <initialAnnouncements><count>10</count><period><sec>0</sec><nanosec>20000000</nanosec></period>
    </initialAnnouncements>
    <leaseAnnouncement><sec>0</sec><nanosec>250000000</nanosec></leaseAnnouncement>
  </discovery_config></builtin></rtps></participant>
</profiles>
"""


def _image(index: int) -> Image:
    msg = Image(height=48, width=64, encoding="bgr8", step=64 * 3,
                data=np.full(64 * 48 * 3, index % 255, np.uint8).tobytes())
    stamp_ns = 1_700_000_000 * 10**9 + index * PERIOD_NS
    msg.header.stamp.sec, msg.header.stamp.nanosec = divmod(stamp_ns, 10**9)
    return msg


def test_stamp_gaps_are_counted_in_stats_diagnostics_and_log(ros_env, tmp_path):
    stats, statuses = [], []
    log = tmp_path / "inference.log"
    with watcher(ros_env) as (node, spin_until):
        pub = node.create_publisher(Image, "image", 10)  # reliable, as the node is told to be: no transport loss
        node.create_subscription(InferenceStats, topics.INFERENCE_STATS, stats.append, 100)
        node.create_subscription(DiagnosticArray, topics.DIAGNOSTICS,
                                 lambda m: statuses.extend(s for s in m.status if "input" in s.name), 10)
        proc = start_node("inference", ros_env, NODE | {"image_reliability": "reliable", "image_depth": 10,
                                                        "queue_depth": 100}, log)
        try:
            assert spin_until(lambda: pub.get_subscription_count() > 0, timeout_s=60, procs=[proc]), log_text(log)
            for index in (i for i in range(90) if i not in SKIPPED):
                pub.publish(_image(index))
                spin_until(lambda: False, timeout_s=PERIOD_NS / 1e9)
            ok = spin_until(lambda: len(stats) >= 85 and any(s.level == DiagnosticStatus.WARN for s in statuses)
                            and "lost before the node" in log_text(log), timeout_s=30, procs=[proc])
            assert ok, f"stats={len(stats)} statuses={[s.message for s in statuses]}\n{log_text(log)}"
        finally:
            stop_node(proc)
    last = stats[-1]
    assert last.frames_received == 85 and last.frames_lost_upstream == len(SKIPPED)
    assert last.frames_lost_transport == 0 and last.frames_dropped == 0
    warn = next(s for s in statuses if s.level == DiagnosticStatus.WARN)
    assert {v.key: v.value for v in warn.values}["frames_lost_upstream"] == str(len(SKIPPED))
    assert sum("lost before the node" in line for line in log_text(log).splitlines()) == 1


def _largest_fastdds_segment_bytes(pid: int) -> int:
    sizes = [0]
    for line in Path(f"/proc/{pid}/maps").read_text().splitlines():
        segment = line.split("/dev/shm/")[-1]
        if segment.startswith(("fastdds_", "fastrtps_")) and "_el" not in segment and "_port" not in segment:
            start, end = (int(v, 16) for v in line.split()[0].split("-"))
            sizes.append(end - start)
    return max(sizes)


def test_a_node_applies_the_shipped_profile_when_the_user_set_none(ros_env, tmp_path):
    env = {k: v for k, v in ros_env.items() if k not in PROFILE_VARIABLES}
    proc = start_node("synthetic_camera", env, {"width": 64, "height": 48}, tmp_path / "camera.log")
    try:
        deadline = time.monotonic() + 30
        while _largest_fastdds_segment_bytes(proc.pid) < 16 * 2**20 and time.monotonic() < deadline:
            assert proc.poll() is None, log_text(tmp_path / "camera.log")
            time.sleep(0.2)
        assert _largest_fastdds_segment_bytes(proc.pid) >= 16 * 2**20  # Fast DDS's own default: 512 KB
    finally:
        stop_node(proc)


def test_transport_loss_from_a_camera_without_the_profile_is_counted(ros_env, tmp_path):
    """A camera on Fast DDS's default transports (512 KB shared memory) into the best-effort
    input loses most 640x480 frames before the node (issue 14); the node now counts them."""
    profile = tmp_path / "default_transports.xml"
    profile.write_text(DEFAULT_TRANSPORTS_PROFILE)
    camera_env = ros_env | {profile_variable(ros_env): str(profile)}
    stats = []
    log = tmp_path / "inference.log"
    with watcher(ros_env) as (node, spin_until):
        node.create_subscription(InferenceStats, topics.INFERENCE_STATS, stats.append, 100)
        procs = [start_node("inference", ros_env, NODE, log),
                 start_node("synthetic_camera", camera_env, {"width": 640, "height": 480, "rate_hz": 30.0,
                                                             "encoding": "bgr8", "distinct_frames": 2})]
        try:
            ok = spin_until(lambda: stats and stats[-1].frames_lost_transport >= 20
                            and stats[-1].frames_lost_upstream >= 10, timeout_s=60, procs=procs)
            assert ok, f"{stats[-1] if stats else 'no stats'}\n{log_text(log)}"
        finally:
            for p in procs:
                stop_node(p)
    assert "lost before the node" in log_text(log)
    assert os.environ.get(profile_variable()) != str(profile)  # the node kept the shipped one
