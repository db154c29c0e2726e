"""One governor per board: the lock is the board's (per sysfs root, per NVML GPU), in a folder
every user's process sees, never a link planted there, and a holder that did not shut down is
named by the next one with the crash record it left."""

import os
import stat

import pytest

from edge_roofline.clock import SimClock
from edge_roofline.governor.board_lock import (BoardLock, GovernorBusyError, board_lock_path, holder,
                                              previous_record_warning)
from edge_roofline.governor.config import ConfigError
from edge_roofline.governor.runtime import GovernorRuntime
from test.governor.test_crash_record import runtime_params


def test_one_lock_per_board(tmp_path, monkeypatch):
    monkeypatch.delenv("EDGE_ROOFLINE_LOCK_DIR")
    assert board_lock_path("jetson", "/") == board_lock_path("jetson:agx_orin_64gb", "") \
        == board_lock_path("virtual:agx_orin_64gb", "/")
    assert str(board_lock_path("jetson", "/")) == "/run/lock/edge_roofline_governor.lock"
    assert board_lock_path("virtual:agx_orin_64gb", str(tmp_path)) == tmp_path / "run/lock/edge_roofline_governor.lock"
    assert board_lock_path("jetson", str(tmp_path)) == board_lock_path("virtual:orin_nx_16gb", str(tmp_path))
    assert board_lock_path("nvml", "/") == board_lock_path("nvml:0", "/") != board_lock_path("nvml:1", "/")
    monkeypatch.setenv("EDGE_ROOFLINE_LOCK_DIR", str(tmp_path / "shared"))  # a container's shared folder
    assert board_lock_path("jetson", "/") == tmp_path / "shared/edge_roofline_governor.lock"


def test_who_holds_the_lock_is_read_from_the_kernel_not_from_the_line_left_in_the_file(tmp_path):
    """The power monitor tells a set_mode caller of a governor on the board only while one holds the lock: the
    line a holder wrote stays in the file after it let go, so the file alone would name a governor long gone."""
    path = tmp_path / "run/lock/edge_roofline_governor.lock"
    assert holder(path) is None  # no governor ever ran here
    lock = BoardLock(path)
    lock.acquire("node /governor", tmp_path / "state.json")
    assert holder(path) == f"pid {os.getpid()}, node /governor; crash record {tmp_path / 'state.json'}"
    lock.release()
    assert "node /governor" in path.read_text() and holder(path) is None
    planted = tmp_path / "planted/edge_roofline_governor.lock"  # a link in the world-writable folder is not read
    planted.parent.mkdir()
    planted.symlink_to(path)
    lock.acquire("node /governor", None)
    assert holder(path) is not None and holder(planted) is None
    lock.release()


def test_the_lock_refuses_a_second_holder_and_is_free_after_release(tmp_path):
    path = tmp_path / "run/lock/edge_roofline_governor.lock"
    first, second = BoardLock(path), BoardLock(path)
    assert first.acquire("node /a", tmp_path / "a.json") == ""
    assert stat.S_IMODE(path.stat().st_mode) == 0o666  # another user's governor may take it later
    with pytest.raises(GovernorBusyError, match=r"pid \d+, node /a; crash record .*a\.json; lock "):
        second.acquire("node /b", tmp_path / "b.json")
    other_board = BoardLock(tmp_path / "other/run/lock/edge_roofline_governor.lock")
    other_board.acquire("node /c", None)  # another board is not this one
    first.release()
    assert "node /a" in second.acquire("node /b", tmp_path / "b.json")  # what the last holder wrote
    second.release()
    other_board.release()


def test_a_link_planted_at_the_lock_path_is_refused(tmp_path):
    victim = tmp_path / "victim"
    victim.write_text("keep me\n")
    path = tmp_path / "run/lock/edge_roofline_governor.lock"
    path.parent.mkdir(parents=True)
    path.symlink_to(victim)
    with pytest.raises(ConfigError, match="cannot open the board's governor lock") as err:
        BoardLock(path).acquire("node /a", None)
    assert "EDGE_ROOFLINE_LOCK_DIR" in str(err.value) and "\n" not in str(err.value)
    assert victim.read_text() == "keep me\n"
    path.unlink()
    os.mkfifo(path)
    with pytest.raises(ConfigError, match="is not a regular file"):
        BoardLock(path).acquire("node /a", None)


def test_a_holder_that_left_another_crash_record_is_named(tree, tmp_path):
    other = tmp_path / "other_user/governor_state.json"
    other.parent.mkdir()
    other.write_text("{}")
    lock = tree / "run/lock/edge_roofline_governor.lock"
    lock.parent.mkdir(parents=True)
    lock.write_text(f"pid 4242, node /robot/governor; crash record {other}\n")
    logs = []
    runtime = GovernorRuntime(runtime_params(tree, mode="off"), SimClock(0.0), log=logs.append)
    runtime.close()
    named = [line for line in logs if "did not shut down and left its crash record" in line]
    assert len(named) == 1 and "(pid 4242, node /robot/governor)" in named[0], logs
    assert named[0].endswith(f"-p state_path:={other}")
    assert lock.read_text().startswith(f"pid {os.getpid()}, governor; crash record {tree}")


def test_a_holder_that_named_a_directory_left_no_crash_record(tmp_path):
    # A governor refused for state_path:=DIR (a folder, not a record) named it in the lock: every
    # later start warned that it "left its crash record DIR".
    assert previous_record_warning(f"pid 1, node /governor; crash record {tmp_path}", "") is None
    record = tmp_path / "state.json"
    record.write_text("{}")
    assert "left its crash record" in previous_record_warning(f"pid 1, node /governor; crash record {record}", "")
