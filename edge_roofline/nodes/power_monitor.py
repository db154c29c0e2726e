"""power_monitor: samples rail power at the sensor's rate (<= 200 Hz; clocks and temperatures
at 10 Hz), publishes
PowerTelemetry (20 Hz) and /diagnostics (1 Hz), and serves nvpmodel preset get/set."""

from __future__ import annotations

import sys

from diagnostic_msgs.msg import DiagnosticArray
from rclpy.node import Node

from edge_roofline.governor.board_lock import board_lock_path
from edge_roofline.governor.outside import switch_note
from edge_roofline.ros import topics
from edge_roofline.ros.stamps import stamp_s
from edge_roofline.msg import PowerTelemetry
from edge_roofline.nodes import convert
from edge_roofline.nodes.common import declare_parameters, run_node
from edge_roofline.platforms import create_platform_or_degraded
from edge_roofline.srv import GetPowerMode, SetPowerMode
from edge_roofline.telemetry import diagnostics, modes
from edge_roofline.telemetry.sampler import PowerSampler
from edge_roofline.telemetry.stream_health import StreamHealth

PARAMETERS = {
    "platform": ("auto", "auto | jetson | nvml | cpu | virtual:DEVICE (e.g. virtual:agx_orin_64gb)"),
    "sysfs_root": ("/", "root of the sysfs/procfs tree (a live virtual Jetson's root, as `edge-roofline "
                        "virtual-jetson --root DIR` renders it)"),
    "nvpmodel_cmd": ("nvpmodel", "nvpmodel executable"),
    "sample_rate_hz": (200.0, "upper bound on the power sampling rate (the sensor's own update rate when slower)"),
    "publish_rate_hz": (20.0, "PowerTelemetry publish rate"),
    "diagnostics_rate_hz": (1.0, "/diagnostics publish rate"),
    "temperature_warn_c": (85.0, "WARN at or above this temperature"),
    "temperature_error_c": (95.0, "ERROR at or above this temperature"),
    "power_warn_w": (0.0, "WARN at or above this module power (0: off)"),
    "power_error_w": (0.0, "ERROR at or above this module power (0: off)"),
}


class PowerMonitor(Node):
    def __init__(self) -> None:
        super().__init__("power_monitor")
        p = declare_parameters(self, PARAMETERS)
        self.platform, problem = create_platform_or_degraded(
            p["platform"], sysfs_root=p["sysfs_root"], nvpmodel_cmd=p["nvpmodel_cmd"])
        if problem:
            self.get_logger().error(problem)
        self.identity = self.platform.identity()
        self.governor_lock = board_lock_path(p["platform"], p["sysfs_root"])  # where a governor of this board holds it
        self.sampler = PowerSampler(self.platform, rate_hz=p["sample_rate_hz"])
        self.thresholds = diagnostics.Thresholds(
            temperature_warn_c=p["temperature_warn_c"], temperature_error_c=p["temperature_error_c"],
            power_warn_w=p["power_warn_w"], power_error_w=p["power_error_w"],
            min_sample_rate_hz=0.75 * self.sampler.rate_hz)
        self.telemetry_pub = self.create_publisher(PowerTelemetry, topics.POWER_TELEMETRY, 10)
        self.diagnostics_pub = self.create_publisher(DiagnosticArray, topics.DIAGNOSTICS, 10)
        # Counts only messages with fresh samples: a window without one repeats stale data.
        self.telemetry_health = StreamHealth(f"edge_roofline: {topics.POWER_TELEMETRY}",
                                             stamp_s(self.get_clock().now()), min_rate_hz=p["publish_rate_hz"])
        self.create_timer(1.0 / p["publish_rate_hz"], self.publish_telemetry)
        self.create_timer(1.0 / p["diagnostics_rate_hz"], self.publish_diagnostics)
        self.create_service(GetPowerMode, topics.POWER_GET_MODE, self.on_get_mode)
        self.create_service(SetPowerMode, topics.POWER_SET_MODE, self.on_set_mode)
        self._last_window = None
        self.sampler.start()
        self.get_logger().info(f"monitoring {self.identity.model} ({self.identity.kind}): power sampled at "
                               f"{self.sampler.rate_hz:.1f} Hz ({self.sampler.rate_reason})")

    def publish_telemetry(self) -> None:
        # A tick right after a late one (the timer catching up) finds no reading yet: skipped,
        # not published as a NaN window (telemetry/sampler.py).
        window = self.sampler.take_window(defer_empty=True)
        if window is None:
            return
        self._last_window = window
        now = self.get_clock().now()
        msg = convert.power_telemetry_msg(window, now.to_msg(), self.identity.model, self._current_point())
        self.telemetry_pub.publish(msg)
        if window.samples:
            self.telemetry_health.tick(stamp_s(now), stamp_s(msg.header.stamp))

    def publish_diagnostics(self) -> None:
        window = self._last_window
        # Before the first window only the stream's health: taking a window here would withhold
        # its energy from the telemetry.
        statuses = [] if window is None else diagnostics.evaluate(window, self.thresholds, self.identity.model)
        statuses += self.telemetry_health.statuses(stamp_s(self.get_clock().now()))
        self.diagnostics_pub.publish(
            convert.diagnostic_array_msg(statuses, self.get_clock().now().to_msg(), self.identity.model))

    def _current_point(self):
        try:
            return self.platform.current_operating_point()
        except Exception as exc:  # a platform read failing must not stop telemetry
            self.get_logger().warning(f"cannot read the operating point: {exc}", throttle_duration_sec=10.0)
            return None

    def on_get_mode(self, request, response):
        point = self._current_point()
        infos = modes.list_modes(self.platform)
        response.active_mode = point.name if point else ""
        response.active_mode_id = point.nvpmodel_id if point and point.nvpmodel_id is not None else -1
        response.available_modes = [m.name for m in infos]
        response.reachable_without_reboot = [m.reachable_without_reboot for m in infos]
        response.operating_point = convert.operating_point_msg(point)
        return response

    def on_set_mode(self, request, response):
        before = self._current_point()
        response.success, response.message = modes.set_mode(self.platform, request.mode)
        point = self._current_point()
        if response.success:  # a governor on this board reacts to the switch: the caller is told how
            response.message += switch_note(self.governor_lock, before, point)
        (self.get_logger().info if response.success else self.get_logger().warning)(response.message)
        response.active_mode = point.name if point else ""
        return response

    def destroy_node(self) -> None:
        # Modes set through the service persist, as with nvpmodel itself; only the governor
        # restores what it found.
        self.sampler.stop()
        super().destroy_node()


def main(argv: list[str] | None = None) -> int:
    return run_node(PowerMonitor, argv)


if __name__ == "__main__":
    sys.exit(main(sys.argv))
