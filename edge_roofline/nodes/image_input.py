"""The inference node's input side: the subscription QoS from parameters, and the frames lost
before the node, counted two ways and reported in InferenceStats, /diagnostics and the log:
- upstream: gaps in the input's header stamps (edge_roofline.telemetry.frame_loss), whatever lost
  them (transport, the reader's queue, the camera);
- transport: the samples DDS itself reports lost (the writer's sequence numbers skip them)."""

from __future__ import annotations

import time

from rclpy.node import Node
from rclpy.qos import DurabilityPolicy, HistoryPolicy, QoSProfile, ReliabilityPolicy

from edge_roofline.ros.stamps import stamp_ns
from edge_roofline.suite.env import profile_variable
from edge_roofline.telemetry.frame_loss import LossSample, LossWindow, StampGapCounter, input_status

try:
    from rclpy.event_handler import SubscriptionEventCallbacks
except ImportError:  # Humble
    from rclpy.qos_event import SubscriptionEventCallbacks

RELIABILITY = {"best_effort": ReliabilityPolicy.BEST_EFFORT, "reliable": ReliabilityPolicy.RELIABLE}
LOG_EVERY_S = 5.0  # one log line per this long at most while frames are being lost


def input_qos(reliability: str, depth: int, warn_fraction: float) -> QoSProfile:
    """The input parameters checked (before the node builds anything), and the subscription's
    QoS: KEEP_LAST ``depth``, volatile, best effort or reliable (sensor data QoS: best effort, 5)."""
    problems = []
    if reliability not in RELIABILITY:
        problems.append(f"image_reliability must be one of {sorted(RELIABILITY)}, got {reliability!r}")
    if depth < 1:
        problems.append(f"image_depth must be >= 1, got {depth}")
    if not 0 <= warn_fraction <= 1:
        problems.append(f"lost_frames_warn_fraction must be in [0, 1], got {warn_fraction}")
    if problems:
        raise ValueError("invalid input parameters: " + "; ".join(problems))
    return QoSProfile(history=HistoryPolicy.KEEP_LAST, depth=depth, reliability=RELIABILITY[reliability],
                      durability=DurabilityPolicy.VOLATILE)


class InputLossMonitor:
    """Counts frames lost before ``node``'s input into ``counters`` (the pipeline's) and reports
    them as a diagnostic status (the node publishes it with its others), with one log line while
    frames are being lost."""

    def __init__(self, node: Node, counters, topic: str, warn_fraction: float) -> None:
        self.node = node
        self.counters = counters
        self.gaps = StampGapCounter()
        self.window = LossWindow()
        self.name = f"{node.get_name()}: input {node.resolve_topic_name(topic)}"
        self.warn_fraction = warn_fraction
        self._logged = (0, 0)  # (upstream, transport) totals at the last log line
        self._last_log_s = -LOG_EVERY_S

    def event_callbacks(self) -> SubscriptionEventCallbacks:
        return SubscriptionEventCallbacks(message_lost=self.on_message_lost)

    def on_message_lost(self, info) -> None:
        self.counters.lost_transport = info.total_count
        self._update_upstream()

    def observe(self, stamp) -> None:
        self.gaps.observe(stamp_ns(stamp))
        self._update_upstream()

    def _update_upstream(self) -> None:
        # DDS's count is exact where the stamp estimate is not (most frames lost: no period to
        # learn); frames lost in transport are upstream losses too.
        self.counters.lost_upstream = max(self.gaps.lost, self.counters.lost_transport)

    def status(self):
        """The input's loss status now (and one log line while frames are being lost)."""
        c = self.counters
        totals = LossSample(time.monotonic(), c.received, c.lost_upstream, c.lost_transport)
        self.window.add(totals)
        status = input_status(self.name, self.window, totals, self.warn_fraction)
        new_upstream, new_transport = totals.lost_upstream - self._logged[0], totals.lost_transport - self._logged[1]
        if (new_upstream or new_transport) and totals.time_s - self._last_log_s >= LOG_EVERY_S:
            self.node.get_logger().warning(
                f"{max(new_upstream, new_transport)} input frame(s) lost before the node since the last report "
                f"({totals.lost_upstream} in all, {totals.lost_transport} of them reported by DDS, "
                f"{totals.received} received in all): give the camera process this package's Fast DDS profile "
                f"({profile_variable()}=.../config/fastdds_localhost.xml) or, for a reliable camera, "
                f"-p image_reliability:=reliable; see docs/nodes.md 'Lost frames'")
            self._logged = (totals.lost_upstream, totals.lost_transport)
            self._last_log_s = totals.time_s
        return status
