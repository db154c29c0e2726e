"""The root helper ``edge-roofline-write`` against a race: a user who owns a folder on PATH's way
swaps a link between the allow-list check and the write. The check is made to swap (the seam is
``allowed``, which the command calls once it has resolved PATH); the write must land on the file
checked or be refused, never on the file the link points to afterwards, and never create one."""

import os
from pathlib import Path

import pytest

from edge_roofline.platforms.jetson import privileged_write as helper

CAP = "sys/devices/system/cpu/cpu3/online"


@pytest.fixture
def rig(tmp_path):
    """A board tree with one cap file, a victim file only root may change, a user's folder."""
    board, user = tmp_path / "board", tmp_path / "user"
    (board / CAP).parent.mkdir(parents=True)
    (board / CAP).write_text("1\n")
    user.mkdir()
    victim = tmp_path / "etc_shadow"
    victim.write_text("root:secret\n")
    return board, user, victim


def check_then(monkeypatch, swap):
    """The allow-list check passes, and ``swap`` runs right after it (the race)."""
    def checked(*args):
        swap()
        return True
    monkeypatch.setattr(helper, "allowed", checked)


def test_a_link_swapped_after_the_check_is_not_followed(rig, monkeypatch):
    board, user, victim = rig
    link = user / "cap"
    link.symlink_to(board / CAP)

    def swap():
        link.unlink()
        link.symlink_to(victim)
    check_then(monkeypatch, swap)
    assert helper.main([str(link), "0"]) == 0
    assert victim.read_text() == "root:secret\n"
    assert (board / CAP).read_text() == "0"  # the file that was checked


def test_a_folder_swapped_for_a_link_after_the_check_is_refused(rig, monkeypatch, capsys):
    board, _, victim = rig
    folder = (board / CAP).parent

    def swap():
        folder.rename(folder.with_name("cpu3.moved"))
        folder.symlink_to(victim.parent)
        (victim.parent / "online").symlink_to(victim)
    check_then(monkeypatch, swap)
    assert helper.main([str(board / CAP), "0"]) == 1
    assert victim.read_text() == "root:secret\n"
    err = capsys.readouterr().err
    assert err.startswith("refused: ") and "cpu3 is not a directory any more" in err and err.count("\n") == 1


def test_the_file_swapped_for_a_link_after_the_check_is_refused(rig, monkeypatch, capsys):
    board, _, victim = rig

    def swap():
        (board / CAP).unlink()
        (board / CAP).symlink_to(victim)
    check_then(monkeypatch, swap)
    assert helper.main([str(board / CAP), "0"]) == 1
    assert victim.read_text() == "root:secret\n"
    assert "is a symbolic link" in capsys.readouterr().err


def test_a_missing_file_is_refused_and_not_created(rig, monkeypatch, capsys):
    board, _, _ = rig
    missing = board / "sys/devices/system/cpu/cpu9/online"
    missing.parent.mkdir(parents=True)
    check_then(monkeypatch, lambda: None)
    assert helper.main([str(missing), "1"]) == 1
    assert not missing.exists() and "does not exist" in capsys.readouterr().err
    # A folder missing on the way is the same refusal.
    assert helper.main([str(board / "sys/devices/system/cpu/cpu10/online"), "1"]) == 1
    assert not (board / "sys/devices/system/cpu/cpu10").exists()


def test_the_allow_list_on_a_virtual_tree(rig):
    board, user, victim = rig
    link = user / "cap"
    link.symlink_to(board / CAP)  # a link to an allowed file is written through its resolved path
    helper.write(str(link), "0", root=str(board))
    assert (board / CAP).read_text() == "0"
    assert helper.allowed(str(board / CAP), "1", root=str(board)) and not helper.allowed(str(board / CAP), "1")
    (user / "bad").symlink_to(victim)
    for path, value in ((board / CAP, "0; reboot"), (board / CAP, ""), (user / "bad", "0"), (victim, "0"),
                        (board / "sys/devices/system/cpu/cpu3/../cpu3/online_x", "1")):
        with pytest.raises(helper.RefusedWrite, match="not an allowed cap write"):
            helper.write(str(path), value, root=str(board))
    assert victim.read_text() == "root:secret\n"


def test_only_regular_files_are_written(rig):
    board, _, _ = rig
    fifo = board / "sys/devices/system/cpu/cpu4/online"
    fifo.parent.mkdir(parents=True)
    os.mkfifo(fifo)  # opening it for writing would block a naive helper forever
    with pytest.raises(helper.RefusedWrite, match="not a regular file"):
        helper.write(str(fifo), "1", root=str(board))
    folder = board / "sys/devices/system/cpu/cpu5/online"
    folder.mkdir(parents=True)
    with pytest.raises(helper.RefusedWrite, match="not a regular file"):
        helper.write(str(folder), "1", root=str(board))


def test_real_sysfs_paths_that_do_not_exist_are_refused(capsys):
    assert helper.main(["/sys/devices/system/cpu/cpu999/online", "1"]) == 1
    assert "does not exist" in capsys.readouterr().err and not Path("/sys/devices/system/cpu/cpu999").exists()
    assert helper.main(["/etc/hostname", "1"]) == 1 and "not an allowed cap write" in capsys.readouterr().err
    assert helper.main(["one-argument"]) == 2
