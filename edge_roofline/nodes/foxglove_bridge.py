"""foxglove_bridge: serves the suite's topics to Foxglove over WebSocket (127.0.0.1 by default)
and/or records them to MCAP, for pip-only machines where the ROS foxglove_bridge and rosbag2
are not installable. Messages are forwarded as CDR with their ros2msg schemas, so Foxglove
decodes them exactly as it would from the standard bridge."""

from __future__ import annotations

import sys

from rclpy.node import Node

from edge_roofline.ros import topics
from edge_roofline.nodes.common import declare_parameters, run_node
from edge_roofline.ros.schema import message_class
from edge_roofline.viz.foxglove_sink import FoxgloveSink, describe_server

PARAMETERS = {
    "serve": (True, "run the Foxglove WebSocket server"),
    "host": ("127.0.0.1", "address the server binds (loopback by default)"),
    "port": (8765, "WebSocket port (0: any free port)"),
    "mcap_path": ("", "record to this MCAP file (empty: no recording)"),
    "topics": (list(topics.TYPES), "topics to forward (types from edge_roofline.ros.topics; the language model's "
                                   "llm/generation/stats, llm/generation/tokens, llm/inference/stats, ... too)"),
}


class FoxgloveBridge(Node):
    def __init__(self) -> None:
        super().__init__("foxglove_bridge")
        p = declare_parameters(self, PARAMETERS)
        unknown = [t for t in p["topics"] if t not in topics.KNOWN_TYPES]
        if unknown:
            raise ValueError(f"foxglove_bridge: no known type for topics {unknown}; known: {list(topics.KNOWN_TYPES)}")
        self.sink = FoxgloveSink(serve=p["serve"], host=p["host"], port=p["port"], mcap_path=p["mcap_path"] or None)
        for topic in p["topics"]:
            type_name = topics.KNOWN_TYPES[topic]
            resolved = self.resolve_topic_name(topic)
            # Advertise every channel now, not on its first message: a client that connected
            # meanwhile could otherwise subscribe to a channel the server has not registered yet
            # (foxglove-sdk then answers "unknown channel" and never sends it).
            self.sink.channel(resolved, type_name)
            self.create_subscription(message_class(type_name), topic, self._forwarder(resolved, type_name), 10,
                                     raw=True)
        where = describe_server(p["host"], self.sink.port) if p["serve"] else "no Foxglove server"
        self.get_logger().info(f"{where}; recording: {p['mcap_path'] or 'off'}")

    def _forwarder(self, topic: str, type_name: str):
        def forward(cdr: bytes) -> None:
            self.sink.log(topic, type_name, cdr, self.get_clock().now().nanoseconds)
        return forward

    def destroy_node(self) -> None:
        self.sink.close()  # finalises the MCAP file
        summary = self.sink.recording_summary()
        if summary is not None:
            (self.get_logger().info if self.sink.logged else self.get_logger().warning)(summary)
        super().destroy_node()


def main(argv: list[str] | None = None) -> int:
    return run_node(FoxgloveBridge, argv)


if __name__ == "__main__":
    sys.exit(main(sys.argv))
