"""Real rclpy: the power monitor on a live virtual AGX Orin (the real Jetson backend over the
virtual tree). A background GPU load is switched on: published power, energy and /diagnostics
respond, and everything says SIMULATION."""

import os
import re
from contextlib import contextmanager

from diagnostic_msgs.msg import DiagnosticArray, DiagnosticStatus

from edge_roofline.governor.board_lock import BoardLock, board_lock_path
from edge_roofline.ros import topics
from edge_roofline.msg import PowerTelemetry
from edge_roofline.srv import SetPowerMode
from edge_roofline.virtual.live import LiveVirtualJetson, set_background_load
from test.nodes.rosutil import log_text, start_node, stop_node, watcher
from test.nodes.test_power_monitor_node import call


def test_power_monitor_follows_the_virtual_load(ros_env, tmp_path):
    board = LiveVirtualJetson(tmp_path / "orin", "agx_orin_64gb", mode_id=0).start()
    telemetry, diagnostics = [], []
    log = tmp_path / "power_monitor.log"
    params = {"platform": "virtual:agx_orin_64gb", "sysfs_root": str(board.root), "sample_rate_hz": 200.0,
              "power_warn_w": 30.0, "power_error_w": 60.0}
    try:
        with watcher(ros_env) as (node, spin_until):
            node.create_subscription(PowerTelemetry, topics.POWER_TELEMETRY, telemetry.append, 100)
            node.create_subscription(DiagnosticArray, topics.DIAGNOSTICS, diagnostics.append, 10)
            proc = start_node("power_monitor", ros_env, params, log)
            try:
                assert spin_until(lambda: len(telemetry) >= 20 and diagnostics, timeout_s=40, procs=[proc]), \
                    log_text(log)
                idle = telemetry[-1]
                idle_diag = diagnostics[-1]
                set_background_load(board.root, gpu_load=0.8)
                n = len(telemetry)
                assert spin_until(lambda: len(telemetry) >= n + 30, timeout_s=30, procs=[proc]), log_text(log)
                busy = telemetry[-1]
                nd = len(diagnostics)
                assert spin_until(lambda: len(diagnostics) >= nd + 2, timeout_s=20, procs=[proc]), log_text(log)
                busy_diag = diagnostics[-1]
            finally:
                assert stop_node(proc) == 0, log_text(log)
    finally:
        board.stop()

    assert idle.simulated and "SIMULATION" in idle.source and "virtual" in idle.device.lower()
    assert busy.total_power_w > idle.total_power_w + 10, (idle.total_power_w, busy.total_power_w)
    assert busy.window_energy_j > 1.5 * idle.window_energy_j
    assert busy.energy_j > idle.energy_j
    assert busy.gpu_load_pct > 50 > idle.gpu_load_pct
    assert {r.name for r in busy.rails} >= {"VDD_GPU_SOC", "VDD_CPU_CV", "VIN_SYS_5V0"}
    # 200 Hz is the cap; the virtual INA3221s convert every 13 ms (update_interval), so that is the rate in force.
    rate_hz = sum(m.sample_rate_hz for m in telemetry[-20:]) / 20  # one 50 ms window holds 3-4 samples
    assert 50 < rate_hz <= 1.05 * 1000 / 13
    assert "power sampled at 76.9 Hz (the power sensor's update interval of 13 ms)" in log_text(log)

    def power_level(array):
        return next(s.level for s in array.status if s.name.endswith("power"))
    assert power_level(idle_diag) == DiagnosticStatus.OK
    assert power_level(busy_diag) == DiagnosticStatus.WARN  # over power_warn_w with the GPU busy


@contextmanager
def monitored_orin(ros_env, tmp_path, before_start=lambda root: None):
    """A live virtual AGX Orin (``before_start(root)`` run on it first) and the power monitor on it: (watcher node,
    spin_until, the monitor's process, its log, the board's root); the monitor must stop cleanly."""
    board = LiveVirtualJetson(tmp_path / "orin", "agx_orin_64gb", mode_id=0).start()
    log = tmp_path / "power_monitor.log"
    try:
        before_start(board.root)
        with watcher(ros_env) as (node, spin_until):
            proc = start_node("power_monitor", ros_env, {"platform": "virtual:agx_orin_64gb",
                                                         "sysfs_root": str(board.root)}, log)
            try:
                yield node, spin_until, proc, log, board.root
            finally:
                assert stop_node(proc) == 0, log_text(log)
    finally:
        board.stop()


def test_set_mode_tells_the_caller_of_the_governor_holding_the_board(ros_env, tmp_path):
    """power/set_mode on a board whose governor lock is held (here by this process): the reply says a governor
    holds it and what it does with the switch; once the lock is free, it says nothing of one."""
    with monitored_orin(ros_env, tmp_path) as (node, spin_until, proc, _, root):
        lock = BoardLock(board_lock_path("virtual:agx_orin_64gb", str(root)))
        lock.acquire("node /governor", None)
        try:
            held = call(node, spin_until, SetPowerMode, topics.POWER_SET_MODE, SetPowerMode.Request(mode="MODE_50W"),
                        [proc])
        finally:
            lock.release()
        free = call(node, spin_until, SetPowerMode, topics.POWER_SET_MODE, SetPowerMode.Request(mode="MAXN"), [proc])
    assert held.success and held.message.startswith("power mode now MODE_50W (3); "), held.message
    assert f"a governor holds this board (pid {os.getpid()}, node /governor): in mode active it yields" \
        in held.message, held.message
    assert free.success and free.message == "power mode now MAXN (0)", free.message


def test_a_total_rail_no_channel_carries_is_logged_as_a_warning_of_the_node(ros_env, tmp_path):
    """The platform's line for a rail the module total sums that no channel is labelled with comes from Python's
    logging: it must read as the node's other warnings do ([WARN] and the node's name), not bare on stderr."""
    def relabel(root):  # another carrier board's label
        label = next(f for f in (root / "sys/bus/i2c/drivers/ina3221").glob("*/hwmon/hwmon*/in*_label")
                     if f.read_text() == "VIN_SYS_5V0\n")
        label.write_text("VIN_SYS_5V0_X\n")
    with monitored_orin(ros_env, tmp_path, relabel) as (_, spin_until, proc, log, _):
        assert spin_until(lambda: "VIN_SYS_5V0 missing" in log_text(log), timeout_s=30, procs=[proc]), log_text(log)
    lines = [line for line in log_text(log).splitlines() if "VIN_SYS_5V0 missing" in line]
    assert len(lines) == 1 and re.fullmatch(r"\[WARN\] \[[\d.]+\] \[power_monitor\]: power rail VIN_SYS_5V0 missing: "
                                            r"no power monitor channel is labelled VIN_SYS_5V0 .*", lines[0]), lines
