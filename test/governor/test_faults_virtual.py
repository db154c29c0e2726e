"""Faults on the virtual Jetson: failing writes, a cap file made read-only mid-run, power rail
files removed mid-run. The governor falls back within a second, says why (the reason
GovernorState carries), and the device ends as found; a file it cannot write is named in one
line and its crash record kept for the next start."""

import json
import os
import subprocess

import pytest

from edge_roofline.models import zoo
from edge_roofline.clock import SimClock
from edge_roofline.governor.config import GovernorConfig
from edge_roofline.governor.board_lock import board_lock_path
from edge_roofline.governor.core import Governor
from edge_roofline.governor.outside import switch_note
from edge_roofline.governor.runtime import GovernorRuntime
from edge_roofline.platforms import create_platform
from edge_roofline.platforms.base import ApplyError, OperatingPoint
from edge_roofline.telemetry import modes
from edge_roofline.roofline.ceilings import preset_ceilings
from edge_roofline.roofline.costs import analyze_model
from edge_roofline.roofline.model import analyze_roofline
from edge_roofline.virtual.board import VirtualBoard
from edge_roofline.virtual.platform import VirtualPlatform
from test.governor.test_crash_record import runtime_params
from test.nodes.virtual_rig import DEVICE, cap_files


@pytest.fixture(scope="module")
def resnet18():
    cost = analyze_model(zoo.build("resnet18"), precision="fp16")
    return cost, analyze_roofline(cost, preset_ceilings("agx_orin_64gb", "MAXN", "fp16"))


def run(gov, board, platform, cost, seconds, rate_hz=30.0):
    """Inferences at ``rate_hz``, power at 20 Hz, governor steps at 10 Hz; the decisions."""
    decisions, end = [], board.now_s + seconds
    next_inf, next_power, next_step = board.now_s, board.now_s, board.now_s
    while board.now_s < end:
        t = min(next_inf, next_power, next_step)
        board.advance_to(t)
        if t == next_inf:
            gov.observe_inference(board.run_inference(cost, "fp16").latency_s, board.now_s)
            next_inf += 1.0 / rate_hz
        if t == next_power:
            sample = platform.sample()
            gov.observe_power(sample.total_power_w, board.now_s, sample.temperatures_c)
            next_power += 0.05
        if t == next_step:
            decisions.append((board.now_s, gov.step(board.now_s)))
            next_step += 0.1
    return decisions


def test_failing_writes_fall_back_within_a_second_with_the_reason(resnet18, tmp_path):
    cost, analysis = resnet18
    board = VirtualBoard("agx_orin_64gb", mode_id=0, clock=SimClock())
    platform = VirtualPlatform(board)
    config = GovernorConfig.from_dict({"target_latency_ms": 20.0, "state_path": str(tmp_path / "s.json")})
    gov = Governor(platform, config, analysis, board.clock)
    run(gov, board, platform, cost, 8.0)
    assert gov.current.name != "MAXN"  # it moved to a cheaper point
    platform.fail_apply = True  # every sysfs / nvpmodel write fails from now on
    gov.set_target(1.0, 95.0)  # the cheap point misses this: the governor must move, and cannot
    t_fail = board.now_s
    decisions = run(gov, board, platform, cost, 3.0)
    fallback = [(t, d) for t, d in decisions if d.state == "fallback"]
    assert fallback, [d.reason for _, d in decisions]
    t, d = fallback[0]
    assert t - t_fail <= 1.0
    assert d.fallback_active and "failed" in d.reason and "simulated failure" in d.reason
    assert d.point == gov.safe_point and gov.safe_point.name == "MAXN"
    platform.fail_apply = False  # writes work again: the safe point is put back
    run(gov, board, platform, cost, 3.0)
    gov.shutdown()
    assert platform.current_operating_point() == OperatingPoint("MAXN", nvpmodel_id=0)
    assert board.state.gpu_max_freq_hz == 1300.5e6 and all(board.state.cpu_online)


# ---- faults on a virtual Jetson's files, through the real Jetson backend -----------------------

def drive_tree(gov, t_s, seconds, power_of=lambda t: (10.0, "test")):
    """Latencies of 5 ms at 30 Hz, power at 20 Hz (``power_of(t)``: (W, source), or None for
    none), a step every 0.1 s, on simulated time; the decisions."""
    decisions = []
    for k in range(int(seconds / 0.05)):
        t = t_s + k * 0.05
        gov.observe_inference(0.005, t)
        power = power_of(t)
        if power is not None:
            gov.observe_power(power[0], t, {"tj-thermal": 50.0}, power[1])
        if k % 2:
            decisions.append(gov.step(t))
    return decisions


def read_only(path, on=True):
    """chmod a-w, and for root (whom the mode bits do not stop) the immutable flag as well."""
    if on:
        path.chmod(0o444)
    if os.geteuid() == 0:
        subprocess.run(["chattr", "+i" if on else "-i", str(path)], check=True)
    if not on:
        path.chmod(0o644)


def moved_file(found: dict, now: dict) -> str:
    """A cap file the governor changed (a core's online flag where it turned one off)."""
    return min((k for k, v in now.items() if v != found[k]), key=lambda k: not k.endswith("/online"))


def names_file(text: str, path) -> bool:
    """Whether ``text`` names ``path`` under any of its names (cpu0/cpufreq/x and policy0/x are one file)."""
    tokens = (t.rstrip(":") for t in text.replace(";", " ").replace(",", " ").split())
    return any(t.startswith("/") and os.path.exists(t) and os.path.samefile(t, path) for t in tokens)


def moved_governor(tree, logs):
    """A governor (active, in MAXN's caps grid only) that has moved the board off what it found."""
    runtime = GovernorRuntime(runtime_params(tree, mode="active", **{"points.include_presets": False}, dwell_s=0.5),
                              SimClock(0.0), log=logs.append)
    gov = runtime.governor
    t = 0.0
    while gov.current == gov.found:
        drive_tree(gov, t, 1.0)
        t += 1.0
        assert t < 30, "the governor never moved"
    return runtime, t


def test_cap_file_made_read_only_mid_run(tree):  # noqa: F811
    found, logs = cap_files(tree), []
    runtime, t = moved_governor(tree, logs)
    gov = runtime.governor
    rel = moved_file(found, cap_files(tree))
    locked = tree / rel
    read_only(locked)
    try:
        decisions = drive_tree(gov, t, 2.0, power_of=lambda _: None)  # stale telemetry: back to the safe point
        last = decisions[-1]
        assert last.fallback_active and last.state == "fallback", [d.reason for d in decisions]
        assert "stale telemetry" in last.reason and "safe point failed" in last.reason
        assert names_file(last.reason, locked) and "read-only" in last.reason
        now = cap_files(tree)
        assert {k for k in found if now[k] != found[k]} == {rel}, now  # the safe point as far as it goes
        assert runtime.close() is False  # the node exits 1 on it
        line = logs[-1]
        print(f"GovernorState reason: {last.reason}\nat shutdown: {line}")
        assert "\n" not in line and line.startswith("could not restore as found: ") and names_file(line, locked)
        assert "crash record" in line and (tree / "var/lib/governor_state.json").exists()
        # While the file stays read-only, the next start refuses in one line and keeps the record.
        with pytest.raises(ApplyError) as err:
            GovernorRuntime(runtime_params(tree, mode="off"), SimClock(0.0), log=logs.append)
        assert str(err.value).startswith("crash record ") and names_file(str(err.value), locked)
        assert "the record is kept" in str(err.value) and "\n" not in str(err.value)
        assert (tree / "var/lib/governor_state.json").exists()
    finally:
        read_only(locked, on=False)
    logs.clear()
    assert GovernorRuntime(runtime_params(tree, mode="off"), SimClock(0.0), log=logs.append).close() is True
    assert cap_files(tree) == found, logs
    assert any("did not shut down: restored MAXN as found" in line for line in logs)


def test_power_rail_files_removed_mid_run(tree):  # noqa: F811
    found, logs = cap_files(tree), []
    runtime, t = moved_governor(tree, logs)
    gov, platform = runtime.governor, runtime.platform
    hwmon_inputs = [f for dev in (tree / "sys/bus/i2c/drivers/ina3221").iterdir()
                    for f in dev.resolve().glob("hwmon/hwmon*/*_input")]
    assert hwmon_inputs
    for path in hwmon_inputs:
        path.unlink()

    def measured(_):
        # The full sample, as the power monitor takes at 10 Hz: it checks that the open rail files
        # are still there (on this plain-file tree an open file keeps reading its old value;
        # real sysfs fails the read).
        sample = platform.sample()
        return sample.total_power_w, sample.source
    decisions = drive_tree(gov, t, 1.0, power_of=measured)
    first = next((d for d in decisions if d.fallback_active), None)
    assert first is not None and first.state == "fallback", [d.reason for d in decisions]
    print(f"GovernorState reason: {first.reason}")
    assert "implausible measurement: power None W from" in first.reason and "safe point applied" in first.reason
    assert cap_files(tree) == found  # the safe point is the state found
    runtime.close()
    assert cap_files(tree) == found and not (tree / "var/lib/governor_state.json").exists()


def test_mode_set_outside_an_active_governor_is_yielded_to_and_left(tree):  # noqa: F811
    """The power monitor's set_mode (its own platform on the same board) while mode active moves the
    board: the governor reads the point in force, yields (mode off, the reason says why) instead of
    holding on to its last move, and its shutdown leaves the mode the person chose."""
    logs = []
    runtime, t = moved_governor(tree, logs)
    gov = runtime.governor
    monitor = create_platform(f"virtual:{DEVICE}", sysfs_root=str(tree), nvpmodel_cmd="nvpmodel")
    before = monitor.current_operating_point()
    assert modes.set_mode(monitor, "MODE_50W")[0]
    # What the power monitor's reply adds, read from the board's lock (this process holds it).
    note = switch_note(board_lock_path(f"virtual:{DEVICE}", str(tree)), before, monitor.current_operating_point())
    assert f"a governor holds this board (pid {os.getpid()}, " in note and "in mode active it yields" in note, note
    chosen = cap_files(tree)
    decisions = drive_tree(gov, t, 1.0)
    assert gov.mode == "off" and gov.current.name == "MODE_50W", [d.reason for d in decisions]
    assert not any(d.applied for d in decisions) and decisions[-1].state == "disabled"
    assert "changed outside the governor to MODE_50W" in decisions[-1].reason and "yielded" in decisions[-1].reason
    assert cap_files(tree) == chosen
    assert runtime.close() is True and cap_files(tree) == chosen, logs
    assert not (tree / "var/lib/governor_state.json").exists()
    after = monitor.current_operating_point()
    assert switch_note(board_lock_path(f"virtual:{DEVICE}", str(tree)), before, after) == ""  # none holds it now


def test_the_preset_in_force_set_again_outside_is_not_yielded_to_and_the_caller_is_told(tree):  # noqa: F811
    """set_mode of the preset the governor already runs in rewrites the preset's caps but is no preset switch:
    mode active goes on governing, and the power monitor's reply says so rather than promise a yield."""
    logs = []
    runtime, t = moved_governor(tree, logs)
    monitor = create_platform(f"virtual:{DEVICE}", sysfs_root=str(tree), nvpmodel_cmd="nvpmodel")
    before = monitor.current_operating_point()
    assert modes.set_mode(monitor, "MAXN")[0]
    note = switch_note(board_lock_path(f"virtual:{DEVICE}", str(tree)), before, monitor.current_operating_point())
    assert "the preset did not change, which it does not yield to" in note and "yields to this preset" not in note
    drive_tree(runtime.governor, t, 1.0)
    assert runtime.governor.mode == "active" and runtime.governor.yielded == "", logs
    runtime.close()


def test_a_cap_that_reads_back_lower_under_the_same_preset_is_not_taken_for_a_person(tree):  # noqa: F811
    """A thermal limit lowers a CPU policy's scaling_max_freq with no one moving the board: the
    governor keeps governing (yielding to it would leave the board ungoverned whenever it is hot)."""
    logs = []
    runtime, t = moved_governor(tree, logs)
    gov = runtime.governor
    policy = sorted(tree.glob("sys/devices/system/cpu/cpufreq/policy*/scaling_max_freq"))[0]
    policy.write_text(str(min(int(policy.read_text()), 422400)))
    drive_tree(gov, t, 1.0)
    assert gov.mode == "active" and not getattr(gov, "yielded", ""), logs
    runtime.close()


def test_mode_set_outside_an_advising_governor_is_followed_without_a_write(tree):  # noqa: F811
    """In mode advise the governor writes nothing: a preset switched outside it (the power monitor's
    set_mode) becomes its current point, the point its advice starts from, and it keeps advising
    (no yield: there is no control to hand back). Its shutdown, and a restart after a crash (the
    crash record), leave the preset chosen instead of putting back the one found at start."""
    logs = []
    runtime = GovernorRuntime(runtime_params(tree, mode="advise", dwell_s=0.5), SimClock(0.0), log=logs.append)
    gov = runtime.governor
    drive_tree(gov, 0.0, 2.0)
    assert gov.current.name == "MAXN", logs
    monitor = create_platform(f"virtual:{DEVICE}", sysfs_root=str(tree), nvpmodel_cmd="nvpmodel")
    assert modes.set_mode(monitor, "MODE_50W")[0]
    chosen = cap_files(tree)
    decisions = drive_tree(gov, 2.0, 2.0)
    assert gov.current.name == "MODE_50W" and gov.current.nvpmodel_id == 3, [d.reason for d in decisions]
    assert gov.mode == "advise" and gov.yielded == "" and not any(d.applied for d in decisions)
    assert all(d.state != "disabled" for d in decisions), [d.reason for d in decisions]
    assert cap_files(tree) == chosen
    record = json.loads((tree / "var/lib/governor_state.json").read_text())
    assert record["found_point"]["name"] == "MODE_50W" and record["platform"]["nvpmodel_id"] == 3, record
    assert runtime.close() is True and cap_files(tree) == chosen, logs
