"""Faults through the governor node (real rclpy, a live virtual AGX Orin in MAXN): the test
plays inference and power monitor on the topics, so each fault is injected at a known instant.
NaN latency, a thermal alarm and stale telemetry each send the governor to its safe point
within a second (stale: within a second of the telemetry being stale), with the state and the
cause in GovernorState, and the device's control files at the point found at start."""

import math
import signal
import time

from edge_roofline.ros import topics
from edge_roofline.msg import GovernorState, InferenceStats, PowerTelemetry
from test.nodes.rosutil import log_text, start_node, stop_node, watcher
from test.nodes.virtual_rig import cap_files, governor_params

STALE_S = 1.0


def test_faults_fall_back_within_a_second(board, ros_env, tmp_path):
    found = cap_files(board)
    state_path = tmp_path / "state.json"
    log = tmp_path / "governor.log"
    fake = {"latency_ms": 5.0, "temperature_c": 50.0, "power": True}
    states = []
    with watcher(ros_env) as (node, spin_until):
        stats_pub = node.create_publisher(InferenceStats, topics.INFERENCE_STATS, 50)
        power_pub = node.create_publisher(PowerTelemetry, topics.POWER_TELEMETRY, 10)
        node.create_subscription(GovernorState, topics.GOVERNOR_STATE,
                                 lambda m: states.append((time.monotonic(), m)), 50)

        def publish_stats():
            stats_pub.publish(InferenceStats(latency_ms=fake["latency_ms"], simulated=True))

        def publish_power():
            if fake["power"]:
                msg = PowerTelemetry(average_power_w=12.0, total_power_w=12.0, simulated=True,
                                     temperature_names=["tj-thermal"], temperatures_c=[fake["temperature_c"]])
                msg.header.stamp = node.get_clock().now().to_msg()
                power_pub.publish(msg)
                fake["last_power_s"] = time.monotonic()
        node.create_timer(1 / 30, publish_stats)
        node.create_timer(1 / 20, publish_power)
        gov = start_node("governor", ros_env, governor_params(board, state_path, stale_telemetry_s=STALE_S), log)
        try:
            def healthy():
                return states and not states[-1][1].fallback_active and states[-1][1].state != "fallback"

            def fallback_with(cause):
                def check():
                    return states and states[-1][1].fallback_active and states[-1][1].state == "fallback" \
                        and cause in states[-1][1].reason
                return check

            def inject(cause, fault, limit_s, since=None):
                assert spin_until(healthy, timeout_s=90, procs=[gov]), \
                    f"{[s.reason for _, s in states[-3:]]}\n{log_text(log)}"
                fault()
                t0 = since() if since else time.monotonic()
                assert spin_until(fallback_with(cause), timeout_s=10, procs=[gov]), \
                    f"{[s.reason for _, s in states[-3:]]}\n{log_text(log)}"
                first = next(t for t, s in states if t >= t0 and s.fallback_active)
                last = states[-1][1]
                print(f"{cause}: fallback {first - t0:.2f} s after the fault: {last.reason}")
                assert first - t0 <= limit_s, (f"{cause}: fallback after {first - t0:.2f} s; states since: "
                                               f"{[(round(t - t0, 2), s.state) for t, s in states if t >= t0]}"
                                               f"\n{log_text(log)}")
                assert last.current_point.name == last.safe_point.name == "MAXN"
                assert cap_files(board) == found

            def nan():
                fake["latency_ms"] = math.nan

            def hot():
                fake["latency_ms"] = 5.0
                fake["temperature_c"] = 93.0

            def stale():
                fake["temperature_c"] = 50.0
                fake["power"] = False

            inject("implausible measurement: latency nan", nan, 1.0)
            fake["latency_ms"] = 5.0
            inject("thermal: tj-thermal at 93.0 C", hot, 1.0)
            fake["temperature_c"] = 50.0
            inject("stale telemetry", stale, STALE_S + 1.0, since=lambda: fake["last_power_s"])
        finally:
            code = stop_node(gov, signal.SIGTERM, timeout_s=30)
    assert code == 0, log_text(log)
    assert cap_files(board) == found and not state_path.exists()
