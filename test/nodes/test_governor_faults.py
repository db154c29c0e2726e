"""Faults through the governor node (real rclpy, a live virtual AGX Orin in MAXN): the test
plays inference and power monitor on the topics, so each fault is injected at a known instant.
NaN latency, a thermal alarm and stale telemetry each send the governor to its safe point
within a second (stale: within a second of the telemetry being stale), with the state and the
cause in GovernorState, and the device's control files at the point found at start. Two governors on one board, kill -9
a cap file made read-only mid-run, power rail files removed mid-run: see the last tests."""

import math
import signal
import time

from edge_roofline.ros import topics
from edge_roofline.msg import GovernorState, InferenceStats, PowerTelemetry
from edge_roofline.virtual.live import LiveVirtualJetson
from test.governor.test_faults_virtual import moved_file, names_file, read_only
from test.nodes.rosutil import log_text, start_node, stop_node, watcher
from test.nodes.virtual_rig import DEVICE, cap_files, governor_params

STALE_S = 1.0
FAST_STALE = {"safety.stale_telemetry_s": STALE_S}


def fake_inputs(node, states: list) -> dict:
    """Inference stats at 30 Hz and power telemetry at 20 Hz from ``node``, as the returned dict
    says (latency_ms, temperature_c, power on/off); GovernorState messages into ``states``."""
    fake = {"latency_ms": 5.0, "temperature_c": 50.0, "power": True}
    stats_pub = node.create_publisher(InferenceStats, topics.INFERENCE_STATS, 50)
    power_pub = node.create_publisher(PowerTelemetry, topics.POWER_TELEMETRY, 10)
    node.create_subscription(GovernorState, topics.GOVERNOR_STATE, lambda m: states.append((time.monotonic(), m)), 50)

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
    return fake


def test_faults_fall_back_within_a_second(board, ros_env, tmp_path):  # noqa: F811
    found = cap_files(board)
    state_path = tmp_path / "state.json"
    log = tmp_path / "governor.log"
    states = []
    with watcher(ros_env) as (node, spin_until):
        fake = fake_inputs(node, states)
        gov = start_node("governor", ros_env, governor_params(board, state_path, **FAST_STALE), log)
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


def test_two_governors_kill_9_and_a_read_only_cap_file(board, ros_env, tmp_path):  # noqa: F811
    """A second governor on the board refuses at start (exit 2, one line naming the first) and
    touches nothing; the lock dies with a kill -9, so the next start is not blocked; a cap file
    made read-only mid-run: the fallback reports it in GovernorState, shutdown puts back the rest
    and names it in one line, and the kept crash record puts it back once it is writable."""
    found = cap_files(board)
    state_path = tmp_path / "state.json"
    logs = {name: tmp_path / f"{name}.log" for name in ("first", "second", "third", "fourth")}
    states = []
    params = governor_params(board, state_path, **FAST_STALE, **{"points.include_presets": False})
    with watcher(ros_env) as (node, spin_until):
        fake = fake_inputs(node, states)
        first = start_node("governor", ros_env, {**params, "mode": "advise"}, logs["first"])
        procs = [first]
        try:
            assert spin_until(lambda: states and state_path.exists(), timeout_s=90, procs=procs), \
                log_text(logs["first"])
            record = state_path.read_text()
            second = start_node("governor", ros_env, {**params, "mode": "active"}, logs["second"])
            procs.append(second)
            assert spin_until(lambda: second.poll() is not None, timeout_s=60), log_text(logs["second"])
            procs.remove(second)
            assert second.returncode == 2, log_text(logs["second"])
            refusal = [line for line in log_text(logs["second"]).splitlines() if "another governor" in line]
            assert len(refusal) == 1 and f"pid {first.pid}, node /governor" in refusal[0], log_text(logs["second"])
            assert "Traceback" not in log_text(logs["second"])
            n = len(states)
            assert spin_until(lambda: len(states) > n + 5, timeout_s=10, procs=procs)  # the first still runs
            assert cap_files(board) == found and state_path.read_text() == record

            first.kill()  # kill -9: its lock goes with it
            first.wait()
            procs.remove(first)
            third = start_node("governor", ros_env, params, logs["third"])
            procs.append(third)
            assert spin_until(lambda: cap_files(board) != found, timeout_s=120, procs=procs), log_text(logs["third"])
            assert "did not shut down: restored MAXN as found: wrote nothing" in log_text(logs["third"])

            moved = cap_files(board)
            rel = moved_file(found, moved)
            locked = board / rel
            read_only(locked)
            try:
                fake["power"] = False  # stale telemetry: the governor falls back, and cannot write that file

                def reported():
                    last = states[-1][1]
                    return last.state == "fallback" and "safe point failed" in last.reason \
                        and names_file(last.reason, locked)
                assert spin_until(reported, timeout_s=20, procs=procs), \
                    f"{[s.reason for _, s in states[-3:]]}\n{log_text(logs['third'])}"
                print(f"GovernorState reason: {states[-1][1].reason}")
                now = cap_files(board)
                assert {k for k in found if now[k] != found[k]} == {rel}, now
                # A board not put back as found is a failed exit, not a clean one.
                assert stop_node(third, signal.SIGTERM, timeout_s=30) == 1, log_text(logs["third"])
                procs.remove(third)
                # The shutdown's own line (a fallback's reason may say "could not restore as found" too).
                failed = [line for line in log_text(logs["third"]).splitlines()
                          if "[governor]: could not restore" in line]
                assert len(failed) == 1 and names_file(failed[0], locked) and "crash record" in failed[0], \
                    log_text(logs["third"])
                assert state_path.exists()
            finally:
                read_only(locked, on=False)
            fake["power"] = True
            fourth = start_node("governor", ros_env, {**params, "mode": "off"}, logs["fourth"])
            procs.append(fourth)
            assert spin_until(lambda: states[-1][1].mode == "off", timeout_s=90, procs=procs), log_text(logs["fourth"])
            assert cap_files(board) == found, log_text(logs["fourth"])
            restored = [line for line in log_text(logs["fourth"]).splitlines() if "did not shut down" in line]
            assert len(restored) == 1 and "restored MAXN as found: wrote " in restored[0] \
                and "wrote nothing" not in restored[0], log_text(logs["fourth"])
        finally:
            for proc in procs:
                stop_node(proc, signal.SIGTERM, timeout_s=30)
    assert cap_files(board) == found and not state_path.exists()


def test_power_rail_files_removed_mid_run(ros_env, tmp_path):
    """The real power monitor on a live virtual Orin feeds the governor; the INA3221's files go
    away (the board stops stepping, so nothing writes them again): the governor falls back to
    the safe point naming the missing rails, and everything ends as found."""
    jetson = LiveVirtualJetson(tmp_path / "orin", DEVICE, mode_id=0).start()
    root, states = jetson.root, []
    found = cap_files(root)
    state_path = tmp_path / "state.json"
    logs = {name: tmp_path / f"{name}.log" for name in ("power_monitor", "governor")}
    try:
        with watcher(ros_env) as (node, spin_until):
            fake_inputs(node, states)["power"] = False  # power comes from the power monitor only
            procs = [start_node("power_monitor", ros_env, {"platform": f"virtual:{DEVICE}", "sysfs_root": str(root)},
                                logs["power_monitor"]),
                     start_node("governor", ros_env, governor_params(root, state_path, **FAST_STALE),
                                logs["governor"])]
            try:
                assert spin_until(lambda: states and not states[-1][1].fallback_active and states[-1][1].window_samples,
                                  timeout_s=90, procs=procs), \
                    f"{[s.reason for _, s in states[-3:]]}\n{log_text(logs['governor'])}" \
                    f"{log_text(logs['power_monitor'])}"
                jetson.stop()
                for dev in (root / "sys/bus/i2c/drivers/ina3221").iterdir():
                    for path in dev.resolve().glob("hwmon/hwmon*/*_input"):
                        path.unlink()
                t0 = time.monotonic()
                assert spin_until(lambda: states[-1][1].fallback_active, timeout_s=10, procs=procs), \
                    f"{[s.reason for _, s in states[-3:]]}\n{log_text(logs['governor'])}"
                last = states[-1][1]
                print(f"rails removed: fallback after {time.monotonic() - t0:.2f} s: {last.reason}")
                assert last.state == "fallback" and "rails missing" in last.reason and "VDD_GPU_SOC" in last.reason
                assert last.current_point.name == "MAXN" and cap_files(root) == found
            finally:
                codes = [stop_node(p, signal.SIGTERM, timeout_s=30) for p in reversed(procs)]
            assert codes == [0, 0], log_text(logs["governor"]) + log_text(logs["power_monitor"])
    finally:
        jetson.stop()
    assert cap_files(root) == found and not state_path.exists()
    assert "restored MAXN as found" in log_text(logs["governor"])
