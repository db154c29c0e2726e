"""governor: inference latency (inference/stats) and power (power/telemetry) in, the device's
operating point out (active), or recommended (advise); GovernorState with the reason for every
decision on governor/state; services to enable/disable it and to set the latency target.

What was found at start (every cap file and the mode, as they were) is put back on shutdown,
Ctrl-C, SIGTERM, an exception, when disabled, and on the next start after a crash (the state
file), each logged as "restored ...". A second governor on the same board refuses to start.
The core is edge_roofline.governor.core; edge_roofline.governor.runtime opens the platform and
restores.
"""

from __future__ import annotations

import sys
from functools import partial

from dataclasses import replace

from builtin_interfaces.msg import Time
from rcl_interfaces.msg import SetParametersResult
from rclpy.node import Node
from rclpy.parameter import Parameter
from std_srvs.srv import SetBool

from edge_roofline.ros import topics
from edge_roofline.clock import Clock
from edge_roofline.governor.node_parameters import PARAMETERS
from edge_roofline.governor.runtime import GovernorRuntime
from edge_roofline.governor.settings import parameter_values
from edge_roofline.msg import GovernorState, InferenceStats, PowerTelemetry
from edge_roofline.nodes import convert
from edge_roofline.nodes.common import check_topic_name, declare_parameters, run_node
from edge_roofline.ros.stamps import stamp_s
from edge_roofline.telemetry.repeated_lines import RepeatedLines
from edge_roofline.srv import SetTarget

REPEATED_LINES_S = 5.0  # a log line that only counts on comes at most this often


class _NodeClock(Clock):
    """ROS time in seconds: the stamps of power telemetry and of the steps share one clock."""

    def __init__(self, node: Node) -> None:
        self.node = node

    def now_s(self) -> float:
        return stamp_s(self.node.get_clock().now())


class GovernorNode(Node):
    def __init__(self) -> None:
        super().__init__("governor")
        # Its own callback refuses a change after start, save the sync that shows what is in force.
        p = declare_parameters(self, PARAMETERS, runtime=PARAMETERS)
        self.clock = _NodeClock(self)
        self.runtime = GovernorRuntime(p, self.clock, log=self.get_logger().warning, info=self.get_logger().info,
                                       owner=f"node {self.get_fully_qualified_name()}")
        try:
            self._start(p)
        except BaseException:  # a setting refused here, or a Ctrl-C while starting: nothing was moved
            self.runtime.abandon()
            raise

    def _start(self, p: dict) -> None:
        self._syncing = False
        self.add_on_set_parameters_callback(self._on_set_parameters)
        self._sync_parameters()
        # One thread: a multi-threaded executor busy-spins while a mutually exclusive group is
        # taken, which on a small machine starved the step timer for seconds (fallback late).
        # Power telemetry carries its own stamps, so samples queued behind a step keep their time.
        self.state_pub = self.create_publisher(GovernorState, topics.GOVERNOR_STATE, 10)
        # Without a streams parameter, the one stream is the suite's own inference/stats.
        self.stats_topics = {s.name: self._stats_topic(s.name, s.stats_topic or (
            f"{s.name}/{topics.INFERENCE_STATS}" if p["streams"] else topics.INFERENCE_STATS))
            for s in self.runtime.streams}
        for name, topic in self.stats_topics.items():
            self.create_subscription(InferenceStats, topic, partial(self.on_stats, name), 50)
        self.create_subscription(PowerTelemetry, topics.POWER_TELEMETRY, self.on_power, 10)
        self.create_service(SetBool, topics.GOVERNOR_ENABLE, self.on_enable)
        self.create_service(SetTarget, topics.GOVERNOR_SET_TARGET, self.on_set_target)
        self.create_timer(1.0 / p["step_rate_hz"], self.on_step)
        self.last_change = Time()
        self.last_reason = ""
        self.repeated = RepeatedLines(interval_s=REPEATED_LINES_S)
        gov = self.runtime.governor
        sim = " (SIMULATION)" if self.runtime.simulated else ""
        judged = {"prefill": " TTFT", "decode": " TPOT"}
        targets = ", ".join(f"{s.name}{judged.get(s.phase, '')} p{s.percentile:g} <= {s.target_latency_ms:g} ms "
                            f"on {self.stats_topics[s.name]}" for s in self.runtime.streams)
        self.get_logger().info(f"governor {gov.mode} on {self.runtime.platform.identity().model}{sim}: "
                               f"{targets}; {len(gov.candidates)} candidate points, found {gov.found.name}")

    def _stats_topic(self, stream: str, topic: str) -> str:
        check_topic_name(topic, f"stream {stream}: stats_topic", "name it like /det/inference/stats")
        return self.resolve_topic_name(topic)

    def on_stats(self, stream: str, msg: InferenceStats) -> None:
        if self.runtime.observe_stats(stream, msg.model_id, convert.latency_s_from_stats(msg), self.clock.now_s(),
                                      msg.phase, msg.end_to_end_ms / 1e3):
            self.on_step()  # a late inference is acted on at once, not at the next tick

    def on_power(self, msg: PowerTelemetry) -> None:
        self.runtime.governor.observe_power(convert.power_w_from_telemetry(msg), stamp_s(msg.header.stamp),
                                            convert.temperatures_from_msg(msg), msg.source)

    def on_step(self) -> None:
        for line in self.runtime.follow_models():
            self.get_logger().info(line)
        now_s = self.clock.now_s()
        for line in self.runtime.glitch_lines():
            if (line := self.repeated.admit(line, now_s)) is not None:
                self.get_logger().warning(line)
        decision = self.runtime.step(now_s)
        stamp = self.get_clock().now().to_msg()
        if decision.applied:
            self.last_change = stamp
        if decision.reason != self.last_reason:
            self.last_reason = decision.reason
            # Every move is logged; a reason that only counts on (fallback: "no power sample for
            # 1.23 s", 10 times a second) once per interval, with how many were held back.
            line = f"{decision.state} {decision.point.name}: {decision.reason}"
            if decision.applied or (line := self.repeated.admit(line, now_s)) is not None:
                self.get_logger().info(line)
        gov = self.runtime.governor
        self.state_pub.publish(convert.governor_state_msg(
            decision, gov.config, mode=gov.mode, model_id=gov.model_id, model_note=gov.model_note,
            stats_topics=self.stats_topics, current=gov.current, safe_point=gov.safe_point, switches=gov.switches,
            stamp=stamp, last_change_stamp=self.last_change, simulated=self.runtime.simulated))

    def _sync_parameters(self) -> None:
        """`ros2 param get` reads the settings in force: the state_path chosen for an empty one,
        a target set through governor/set_target, the mode after governor/enable."""
        gov = self.runtime.governor
        current = {name: self.get_parameter(name).value for name in PARAMETERS}
        stale = parameter_values(replace(gov.config, mode=gov.mode), current)
        if stale:
            self._syncing = True
            try:
                self.set_parameters([Parameter(name, value=value) for name, value in stale.items()])
            finally:
                self._syncing = False

    def _on_set_parameters(self, params: list[Parameter]) -> SetParametersResult:
        # A parameter set after start would read as in force while nothing used it: refused.
        names = ", ".join(p.name for p in params if p.name in PARAMETERS)
        if self._syncing or not names:
            return SetParametersResult(successful=True)
        return SetParametersResult(successful=False, reason=(
            f"{names}: the governor reads its parameters at start only; a new target: the governor/set_target "
            f"service; on or off: governor/enable; anything else: restart it with -p NAME:=VALUE"))

    def on_enable(self, request, response):
        response.success, response.message = self.runtime.set_enabled(request.data)
        self._sync_parameters()
        (self.get_logger().info if response.success else self.get_logger().error)(response.message)
        return response

    def on_set_target(self, request, response):
        response.success, response.message = self.runtime.set_target(request.target_latency_ms, request.percentile,
                                                                      request.stream)
        self._sync_parameters()
        self.get_logger().info(response.message)
        return response

    def destroy_node(self) -> None:
        if hasattr(self, "runtime"):  # absent when start-up failed (rclpy's shutdown still destroys the node)
            # A board not put back as found is a failed exit (the log line names the files).
            self.exit_code = 0 if self.runtime.close() else 1
        super().destroy_node()


def main(argv: list[str] | None = None) -> int:
    return run_node(GovernorNode, argv)


if __name__ == "__main__":
    sys.exit(main(sys.argv))
