"""The governor's crash record and its one-per-board lock on a virtual AGX Orin tree
(SIMULATION), through the real Jetson backend and the emulated nvpmodel; no rclpy. A governor
process killed with -9 leaves the record, and the next start writes back every file exactly as
found: EMC's 0 (uncapped), user-set minimum clocks, online cores, the nvpmodel mode."""

import json
import signal
import subprocess
import sys
import textwrap

import pytest

from edge_roofline.clock import SimClock
from edge_roofline.governor.config import ConfigError
from edge_roofline.governor.board_lock import GovernorBusyError
from edge_roofline.governor.runtime import GovernorRuntime
from edge_roofline.platforms.base import OperatingPoint
from edge_roofline.platforms.jetson.privileged_write import allowed
from test.governor.test_runtime import params
from test.nodes.virtual_rig import DEVICE, cap_files

from test.governor.conftest import POLICY0_MIN
EMC_ISO_CAP = "sys/kernel/nvpmodel_emc_cap/emc_iso_cap"

# A governor process that moves the board through the given points and waits to be killed.
CRASHING_GOVERNOR = textwrap.dedent("""
    import json, sys, time
    from edge_roofline.clock import Clock
    from edge_roofline.governor.runtime import GovernorRuntime
    from edge_roofline.platforms.base import OperatingPoint
    runtime = GovernorRuntime(json.loads(sys.argv[1]), Clock(), owner="crashing test governor")
    for point in json.loads(sys.argv[2]):
        runtime.platform.apply(OperatingPoint(**point))
    print("moved", flush=True)
    time.sleep(600)
""")
LOW = {"cpu_online_cores": 4, "gpu_max_freq_hz": 612e6, "emc_max_freq_hz": 2133e6}
# The case: caps inside the mode found (EMC capped where it was 0); and a mode switch,
# which also rewrites the user's minimum clocks.
MOVES = {"caps in MAXN": ([{"name": "low", "nvpmodel_id": 0, **LOW}], ("wrote cpu4/online=1", "emc_iso_cap=0")),
         "MODE_50W": ([{"name": "MODE_50W", "nvpmodel_id": 3}, {"name": "low 50W", "nvpmodel_id": 3, **LOW}],
                      ("wrote nvpmodel MAXN, cpu0/scaling_min_freq=729600",))}


def runtime_params(root, **extra):
    return {**params(root), "platform": f"virtual:{DEVICE}", "sysfs_root": str(root),
            "state_path": str(root / "var/lib/governor_state.json"), **extra}


@pytest.mark.parametrize("move", MOVES)
def test_kill_9_then_restart_puts_back_every_file_as_found(tree, move):
    points, written = MOVES[move]
    found = cap_files(tree)
    assert found[EMC_ISO_CAP] == "0" and found[POLICY0_MIN] == "729600"
    crashing = subprocess.Popen([sys.executable, "-c", CRASHING_GOVERNOR, json.dumps(runtime_params(tree)),
                                 json.dumps(points)], stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True)
    try:
        assert crashing.stdout.readline().strip() == "moved", crashing.stdout.read()
    finally:
        crashing.send_signal(signal.SIGKILL)
        crashing.wait()
    moved = cap_files(tree)
    assert moved[EMC_ISO_CAP] == "2133000000" and moved["sys/devices/system/cpu/cpu4/online"] == "0", moved
    record = json.loads((tree / "var/lib/governor_state.json").read_text())
    assert record["format"] == 2 and record["platform"]["files"][str(tree / EMC_ISO_CAP)] == "0"
    # Every path in the record is one the privileged helper accepts (as it is on a real board).
    for path in record["platform"]["files"]:
        real = "/" + str((tree / path).resolve().relative_to(tree.resolve()))
        assert allowed(real, "1"), real

    logs = []
    runtime = GovernorRuntime(runtime_params(tree, mode="off"), SimClock(0.0), log=logs.append)  # the lock died with -9
    assert cap_files(tree) == found, logs
    restored = [line for line in logs if "did not shut down" in line]
    assert len(restored) == 1 and f"restored MAXN as found: {written[0]}" in restored[0] \
        and all(w in restored[0] for w in written) and "from crash record" in restored[0], logs
    assert runtime.governor.found.name == "MAXN" and record["found_point"]["name"] == "MAXN"
    runtime.close()
    assert cap_files(tree) == found and not (tree / "var/lib/governor_state.json").exists()
    assert logs[-1].startswith("restored MAXN as found: wrote nothing"), logs


def moved_away(root):
    """The board as a governor left it: MODE_50W's caps over MAXN, fewer cores, EMC capped."""
    runtime = GovernorRuntime(runtime_params(root, mode="off"), SimClock(0.0), log=print)
    point = OperatingPoint("low", nvpmodel_id=0, cpu_online_cores=6, gpu_max_freq_hz=612e6, emc_max_freq_hz=2133e6)
    runtime.platform.apply(point)
    runtime.lock.release()  # as a kill -9 would: no restore, the lock gone with the process
    return point


def test_old_format_record_is_recovered_by_applying_its_point_and_says_so(tree):
    found = cap_files(tree)
    moved_away(tree)
    state = tree / "var/lib/governor_state.json"
    state.write_text(json.dumps({"format": 1, "found_point": {"name": "MAXN", "nvpmodel_id": 0}}))
    logs = []
    runtime = GovernorRuntime(runtime_params(tree, mode="off"), SimClock(0.0), log=logs.append)
    line = next(line for line in logs if "did not shut down" in line)
    assert "restored MAXN by applying it: a format-1 record holds no cap files" in line, logs
    now = cap_files(tree)
    assert all(now[k] == found[k] for k in found if "online" in k or "devfreq" in k and "max_freq" in k)
    runtime.close()


@pytest.mark.parametrize("text", ["{not json", '{"format": 7, "found_point": {"name": "MAXN"}}',
                                  '{"format": 2, "found_point": {"name": "MAXN"}, "platform": [1]}'])
def test_unreadable_record_is_refused_in_one_line_and_nothing_is_written(tree, text):
    (tree / "var/lib").mkdir(parents=True, exist_ok=True)
    (tree / "var/lib/governor_state.json").write_text(text)
    found = cap_files(tree)
    with pytest.raises(ConfigError, match="governor state file .* is unreadable") as err:
        GovernorRuntime(runtime_params(tree), SimClock(0.0))
    assert "\n" not in str(err.value) and cap_files(tree) == found


def test_a_second_governor_refuses_naming_the_first_and_touches_nothing(tree):
    first = GovernorRuntime(runtime_params(tree, mode="active"), SimClock(0.0), owner="node /robot/governor")
    first.platform.apply(OperatingPoint("low", nvpmodel_id=0, cpu_online_cores=6))  # the first one moved
    board, record = cap_files(tree), (tree / "var/lib/governor_state.json").read_text()
    with pytest.raises(GovernorBusyError) as err:
        GovernorRuntime(runtime_params(tree, mode="off"), SimClock(0.0), owner="node /governor")
    message = str(err.value)
    assert "\n" not in message and "another governor already runs on this board" in message
    assert f"pid {__import__('os').getpid()}, node /robot/governor" in message
    assert str(tree / "run/lock/edge_roofline_governor.lock") in message
    assert cap_files(tree) == board and (tree / "var/lib/governor_state.json").read_text() == record
    first.close()
    second = GovernorRuntime(runtime_params(tree, mode="off"), SimClock(0.0))  # free once the first is gone
    second.close()


def test_a_second_governor_with_its_own_state_path_is_refused_and_the_board_ends_as_found(tree, tmp_path):
    """The issue's case: another user's governor, another crash record, in another process.
    The lock belongs to the board, so it is refused before it reads or writes anything."""
    found = cap_files(tree)
    first = GovernorRuntime(runtime_params(tree, mode="active"), SimClock(0.0), owner="node /robot/governor")
    first.platform.apply(OperatingPoint("low", nvpmodel_id=0, **LOW))  # the first one moved the board
    moved = cap_files(tree)
    other_record = tmp_path / "other_user/.ros/edge_roofline/governor_state.json"
    starts_and_stops = ("import json, sys; from edge_roofline.clock import Clock; "
                        "from edge_roofline.governor.runtime import GovernorRuntime; "
                        "GovernorRuntime(json.loads(sys.argv[1]), Clock()).close(); print('it ran')")
    second = subprocess.run([sys.executable, "-c", starts_and_stops,
                             json.dumps(runtime_params(tree, mode="off", state_path=str(other_record)))],
                            capture_output=True, text=True, timeout=120)
    assert second.returncode != 0 and "GovernorBusyError: another governor already runs on this board" in second.stderr
    assert "node /robot/governor" in second.stderr, second.stderr
    assert cap_files(tree) == moved and not other_record.exists()
    assert first.close() is True
    assert cap_files(tree) == found and not (tree / "var/lib/governor_state.json").exists()


def test_disable_restores_as_found_and_enable_records_again(tree):
    found = cap_files(tree)
    runtime = GovernorRuntime(runtime_params(tree, mode="active"), SimClock(0.0))
    runtime.platform.apply(OperatingPoint("low", nvpmodel_id=0, **LOW))
    ok, message = runtime.set_enabled(False)
    assert ok and message.startswith("governor off; restored MAXN as found: wrote ") and "emc_iso_cap=0" in message
    assert cap_files(tree) == found and not (tree / "var/lib/governor_state.json").exists()
    assert runtime.set_enabled(True) == (True, "governor active")
    record = json.loads((tree / "var/lib/governor_state.json").read_text())
    assert record["platform"]["files"][str(tree / "sys/devices/system/cpu/cpu0/cpufreq/scaling_min_freq")] == "729600"
    runtime.close()
    assert cap_files(tree) == found


def test_a_start_stopped_after_recording_leaves_no_crash_record(tree, monkeypatch):
    """A governor stopped by Ctrl-C in the middle of its start moved nothing: its crash record
    (written as it starts) goes with it, or the next start says "a previous governor did not shut
    down" of a board nobody touched (a start refused by a setting: test_runtime)."""
    from edge_roofline.suite.signals import StartInterrupted
    state = tree / "var/lib/governor_state.json"

    def interrupted(self, *args):
        raise StartInterrupted("SIGINT")
    monkeypatch.setattr(GovernorRuntime, "_nothing_to_govern", interrupted)
    with pytest.raises(StartInterrupted):
        GovernorRuntime(runtime_params(tree, mode="active"), SimClock(0.0), log=print)
    monkeypatch.undo()
    assert not state.exists(), state.read_text()
    logs = []
    runtime = GovernorRuntime(runtime_params(tree, mode="active"), SimClock(0.0), log=logs.append)  # the lock free
    runtime.close()
    assert not any("did not shut down" in line for line in logs), logs
