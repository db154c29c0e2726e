"""latency_probe: the latency of a serving node we did not write (Isaac ROS TensorRT, a YOLO node,
a vendor SDK), measured from its input and output topics, published as InferenceStats so the
governor consumes it like our own inference node's.

Both topics may be of any message type with a std_msgs/Header ``header``; empty type parameters
are resolved from the ROS graph once the topics appear. Outputs are paired to inputs by
``header.stamp`` (edge_roofline.telemetry.latency_probe).

``mode: generation`` watches a language-model node instead: input_topic its requests, output_topic
its tokens (each carrying its request's header.stamp); it publishes one InferenceStats per token
(phase, context) on inference/stats and one GenerationStats per request on generation/stats, with
energy per token from power_topic (edge_roofline.inference.token_probe).
"""

from __future__ import annotations

import sys
import time

from rclpy.node import Node
from rclpy.qos import HistoryPolicy, QoSProfile, ReliabilityPolicy, qos_profile_sensor_data

from edge_roofline.inference.generation_requests import Request, Served, TokenOut, not_measured
from edge_roofline.inference.token_probe import TokenProbe
from edge_roofline.ros import topics
from edge_roofline.msg import GenerationStats, InferenceStats, PowerTelemetry
from edge_roofline.nodes import convert
from edge_roofline.nodes.common import declare_parameters, run_node
from edge_roofline.ros.stamps import stamp_ns, stamp_s
from edge_roofline.telemetry.energy_meter import AwaitingEnergy, EnergyMeter
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
    "mode": ("frames", "frames (inputs and outputs) | generation (a language model's requests and tokens: the tokens "
                       "carry their request's header.stamp)"),
    "idle_s": (2.0, "generation: a request whose tokens stopped this long without a done message has ended"),
    "power_topic": ("/power/telemetry", "generation: PowerTelemetry whose energy counter gives energy per token"),
}


class LatencyProbe(Node):
    def __init__(self) -> None:
        super().__init__("latency_probe")
        p = declare_parameters(self, PARAMETERS)
        if not p["input_topic"] or not p["output_topic"]:
            raise ValueError("latency_probe needs input_topic and output_topic: "
                             "-p input_topic:=/image_raw -p output_topic:=/detections")
        if p["mode"] not in ("frames", "generation"):
            raise ValueError(f"latency_probe: mode must be frames or generation, got {p['mode']!r}")
        if self.resolve_topic_name(p["input_topic"]) == self.resolve_topic_name(p["output_topic"]):
            # Each message would be its own output: latency 0, every inference 'met'.
            raise ValueError(f"latency_probe: input_topic and output_topic are both "
                             f"{self.resolve_topic_name(p['input_topic'])}: give the node's input and its output")
        self.pairer = StampPairer(p["timeout_s"])
        self.model_id = p["model"] or p["model_id"] or p["output_topic"]
        self.backend = f"external:{self.resolve_topic_name(p['output_topic'])}"
        self.stats_pub = self.create_publisher(InferenceStats, topics.INFERENCE_STATS, 200)
        self.tokens = None
        if p["mode"] == "generation":
            self.tokens = TokenProbe(Served(self.model_id, self.backend, False), p["timeout_s"], p["idle_s"])
            self.meter = EnergyMeter()
            self.awaiting = AwaitingEnergy(self.meter)
            self.request_stats_pub = self.create_publisher(GenerationStats, topics.GENERATION_STATS, 50)
            self.create_subscription(PowerTelemetry, p["power_topic"],
                                     lambda m: self.meter.add(stamp_s(m.header.stamp), m.energy_j, m.source), 20)
        generation = self.tokens is not None
        on_input, on_output = (self.on_request, self.on_token) if generation else (self.on_input, self.on_output)
        self._topics = {"input": (p["input_topic"], p["input_type"], on_input),
                        "output": (p["output_topic"], p["output_type"], on_output)}
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
        # Best effort matches reliable and best-effort publishers alike (a token stream: a deep history).
        qos = qos_profile_sensor_data if self.tokens is None else QoSProfile(
            depth=500, reliability=ReliabilityPolicy.BEST_EFFORT, history=HistoryPolicy.KEEP_LAST)
        self.create_subscription(cls, topic, callback, qos)
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
        if self.tokens is not None:
            for end in self.tokens.expire(time.monotonic()):
                self._publish_end(end)
            for end in self.awaiting.ready(stamp_s(self.get_clock().now())):
                self.request_stats_pub.publish(convert.generation_stats_msg(end))
            return
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


    # ---- generation mode ----------------------------------------------------------------
    def on_request(self, msg) -> None:
        stamp = msg.header.stamp
        request = Request(arrival_s=time.monotonic(), arrival_wall_s=stamp_s(self.get_clock().now()), stamp=stamp,
                          frame_id=msg.header.frame_id,
                          request_id=getattr(msg, "request_id", "") or f"{stamp.sec}.{stamp.nanosec:09d}")
        for end in self.tokens.request_seen(stamp_ns(stamp), request, len(getattr(msg, "prompt_token_ids", ()))):
            self._publish_end(end)

    def on_token(self, msg) -> None:
        done = getattr(msg, "done", False)
        for item in self.tokens.token_seen(stamp_ns(msg.header.stamp), time.monotonic(),
                                           stamp_s(self.get_clock().now()), token_id=getattr(msg, "token_id", 0),
                                           done=done, stop_reason=getattr(msg, "stop_reason", "") if done else "",
                                           context=getattr(msg, "context_tokens", 0) or None):  # 0: not given
            if isinstance(item, TokenOut):
                self.stats_pub.publish(convert.step_stats_msg(item))
            else:
                self._publish_end(item)

    def _publish_end(self, end) -> None:
        if end.stats is None:
            self.get_logger().warning(f"request {end.request.request_id}: {end.outcome} ({end.error})",
                                      throttle_duration_sec=5.0)
            self.request_stats_pub.publish(convert.generation_stats_msg(not_measured(end)))
        else:
            self.awaiting.add(end)


def main(argv: list[str] | None = None) -> int:
    return run_node(LatencyProbe, argv)


if __name__ == "__main__":
    sys.exit(main(sys.argv))
