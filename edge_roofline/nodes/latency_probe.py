"""latency_probe: the latency of a serving node we did not write (Isaac ROS TensorRT, a YOLO node,
a vendor SDK), measured from its input and output topics, published as InferenceStats so the
governor consumes it like our own inference node's.

Both topics may be of any message type with a std_msgs/Header ``header``; empty type parameters
are resolved from the ROS graph once the topics appear. Outputs are paired to inputs by
``header.stamp`` (edge_roofline.telemetry.latency_probe).
"""

from __future__ import annotations

import sys
import time

from rclpy.node import Node
from rclpy.qos import qos_profile_sensor_data

from edge_roofline.ros import topics
from edge_roofline.msg import InferenceStats
from edge_roofline.nodes.common import declare_parameters, run_node
from edge_roofline.ros.stamps import stamp_ns
from edge_roofline.telemetry.latency_probe import MessageTypeError, StampPairer, stamped_message_class

PARAMETERS = {
    "input_topic": ("", "topic the serving node subscribes (e.g. /image_raw)"),
    "output_topic": ("", "topic it publishes its results on, with the input's header.stamp"),
    "input_type": ("", "message type of input_topic, pkg/msg/Type (empty: from the ROS graph)"),
    "output_type": ("", "message type of output_topic (empty: from the ROS graph)"),
    "model": ("", "ONNX model the node serves (path or zoo:NAME): the governor's roofline for this stream "
                  "(empty: the governor learns the stream by measuring)"),
    "model_id": ("", "name published as InferenceStats.model_id when model is empty"),
    "timeout_s": (1.0, "an input with no output within this long counts as dropped"),
}


class LatencyProbe(Node):
    def __init__(self) -> None:
        super().__init__("latency_probe")
        p = declare_parameters(self, PARAMETERS)
        if not p["input_topic"] or not p["output_topic"]:
            raise ValueError("latency_probe needs input_topic and output_topic: "
                             "-p input_topic:=/image_raw -p output_topic:=/detections")
        self.pairer = StampPairer(p["timeout_s"])
        self.model_id = p["model"] or p["model_id"] or p["output_topic"]
        self.backend = f"external:{self.resolve_topic_name(p['output_topic'])}"
        self.stats_pub = self.create_publisher(InferenceStats, topics.INFERENCE_STATS, 50)
        self._topics = {"input": (p["input_topic"], p["input_type"], self.on_input),
                        "output": (p["output_topic"], p["output_type"], self.on_output)}
        self._subscribed: set[str] = set()
        self._last_drops = 0
        # Types given up front are checked now (a typo is a start-up error); the others wait for
        # the graph.
        for role, (topic, type_name, callback) in self._topics.items():
            if type_name:
                self._subscribe(role, stamped_message_class(type_name))
        self._waiting_logged = False
        self.create_timer(0.5, self.on_timer)
        self.get_logger().info(f"probing {p['input_topic']} -> {p['output_topic']} as {self.model_id!r}")

    def _subscribe(self, role: str, cls) -> None:
        topic, _, callback = self._topics[role]
        # Best effort matches reliable and best-effort publishers alike.
        self.create_subscription(cls, topic, callback, qos_profile_sensor_data)
        self._subscribed.add(role)

    def _discover(self) -> None:
        graph = dict(self.get_topic_names_and_types())
        for role, (topic, _, _) in self._topics.items():
            if role in self._subscribed:
                continue
            types = graph.get(self.resolve_topic_name(topic), [])
            if len(types) != 1:
                if not self._waiting_logged:
                    self.get_logger().info(f"waiting for {topic} to appear with one type (seen: {types})")
                    self._waiting_logged = True
                continue
            try:
                self._subscribe(role, stamped_message_class(types[0]))
            except MessageTypeError as exc:
                self.get_logger().error(f"cannot probe {topic}: {exc}", throttle_duration_sec=30.0)

    def on_timer(self) -> None:
        if len(self._subscribed) < len(self._topics):
            self._discover()
        self.pairer.expire(time.monotonic())
        drops = self.pairer.counters.dropped
        if drops > self._last_drops:
            self.get_logger().warning(f"{drops - self._last_drops} input(s) got no output within "
                                      f"{self.pairer.timeout_s} s ({drops} in all)")
            self._last_drops = drops

    def on_input(self, msg) -> None:
        self.pairer.input_seen(stamp_ns(msg.header.stamp), time.monotonic())

    def on_output(self, msg) -> None:
        latency_s = self.pairer.output_seen(stamp_ns(msg.header.stamp), time.monotonic())
        if latency_s is None:
            return
        c = self.pairer.counters
        arrived_ns = self.get_clock().now().nanoseconds
        self.stats_pub.publish(InferenceStats(
            header=msg.header, frame_index=c.paired, model_id=self.model_id, backend=self.backend, batch=1,
            latency_ms=latency_s * 1e3, end_to_end_ms=max(0.0, (arrived_ns - stamp_ns(msg.header.stamp)) * 1e-6),
            frames_received=c.inputs, frames_dropped=c.dropped, errors=c.unmatched_outputs,
            last_error=f"{c.unmatched_outputs} output(s) matched no input" if c.unmatched_outputs else ""))


def main(argv: list[str] | None = None) -> int:
    return run_node(LatencyProbe, argv)


if __name__ == "__main__":
    sys.exit(main(sys.argv))
