"""One governor per board. The lock belongs to the board, not to a governor's own state file:
two governors with different ``state_path`` (two users, two launch files) still find each other.

Where it lives: ``/run/lock`` on a real board (FHS: lock files shared between programs; every
user may create files there), ``<sysfs_root>/run/lock`` on a virtual Jetson's tree (every
process using that board sees it). One lock per sysfs root, and one per GPU for NVML. A
container that mounts the host's ``/sys`` but has its own ``/run/lock`` must share a folder with
the host's governors and name it in ``EDGE_ROOFLINE_LOCK_DIR``.

The lock is an OS lock (``flock``): the kernel drops it with its process, so a governor killed
with -9 never blocks the next one. The file says who holds it (``pid N, OWNER; crash record
PATH``), so a second governor's refusal names the first.
"""

from __future__ import annotations

import fcntl
import os
import stat
from pathlib import Path

from .config import ConfigError

LOCK_DIR = "/run/lock"
LOCK_DIR_ENV = "EDGE_ROOFLINE_LOCK_DIR"
JUST_STARTED = "a process that just started"  # holds the lock, has not written its line yet
KERNEL_LOCKS = "/proc/locks"  # every lock held now: "N: FLOCK ADVISORY WRITE PID MAJ:MIN:INODE START END"


class GovernorBusyError(ConfigError):
    """Another governor already runs on this board (it holds the board's lock)."""


def board_lock_path(platform_spec: str, sysfs_root: str) -> Path:
    """The lock of the board ``platform_spec`` at ``sysfs_root`` names (a node's parameters)."""
    kind, _, arg = platform_spec.partition(":")
    name = f"edge_roofline_governor_nvml{arg or 0}.lock" if kind == "nvml" else "edge_roofline_governor.lock"
    if sysfs_root not in ("", "/"):
        return Path(sysfs_root) / LOCK_DIR.lstrip("/") / name
    return Path(os.environ.get(LOCK_DIR_ENV) or LOCK_DIR) / name


def _written(fd: int) -> str:
    """The holder line the lock file's last holder wrote ("" if none)."""
    return os.pread(fd, 4096, 0).decode(errors="replace").strip()


class BoardLock:
    def __init__(self, path: Path) -> None:
        self.path = path
        self._fd: int | None = None

    def _open(self) -> tuple[int, bool]:
        """The lock file's descriptor, and whether this process may write the holder line. Never
        follows a link (the folder is world-writable); created writable by every user's governor."""
        flags = os.O_NOFOLLOW | os.O_CLOEXEC
        try:
            self.path.parent.mkdir(parents=True, exist_ok=True)
            try:
                return os.open(self.path, os.O_RDWR | flags), True
            except FileNotFoundError:
                try:
                    fd = os.open(self.path, os.O_RDWR | os.O_CREAT | os.O_EXCL | flags, 0o666)
                    os.fchmod(fd, 0o666)  # not the umask's: another user's governor must take it too
                    return fd, True
                except FileExistsError:
                    return os.open(self.path, os.O_RDWR | flags), True
            except PermissionError:
                return os.open(self.path, os.O_RDONLY | flags), False  # flock needs no write access
        except OSError as exc:
            raise ConfigError(f"cannot open the board's governor lock {self.path} ({exc.strerror}); "
                              f"set {LOCK_DIR_ENV} to a folder every governor on this board can write") from None

    def acquire(self, owner: str, state_path: str | os.PathLike | None) -> str:
        """Hold the lock, or raise GovernorBusyError naming the holder. Returns what the last
        holder wrote ("" if none): a governor that did not shut down names its crash record."""
        if self._fd is not None:
            return ""
        fd, writable = self._open()
        try:
            if not stat.S_ISREG(os.fstat(fd).st_mode):
                raise ConfigError(f"the board's governor lock {self.path} is not a regular file; remove it")
            previous = _written(fd)
            try:
                fcntl.flock(fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
            except BlockingIOError:
                raise GovernorBusyError(
                    f"another governor already runs on this board ({previous or JUST_STARTED}; "
                    f"lock {self.path}); stop it first: two governors would fight over the same caps") from None
        except BaseException:
            os.close(fd)
            raise
        if writable:
            os.ftruncate(fd, 0)
            os.pwrite(fd, f"pid {os.getpid()}, {owner}; crash record {state_path or 'none'}\n".encode(), 0)
        self._fd = fd
        return previous

    def release(self) -> None:
        if self._fd is not None:
            os.close(self._fd)  # closing the descriptor drops the flock
            self._fd = None


def holder(path: Path) -> str | None:
    """Who holds the board's lock now: the line its holder wrote ("pid N, OWNER; crash record PATH"). Read from
    the kernel's table of locks held, without taking the lock (holding it even for a moment could refuse a
    governor starting then). None: no process holds it, or the table does not show this file."""
    try:
        fd = os.open(path, os.O_RDONLY | os.O_NOFOLLOW | os.O_CLOEXEC)  # never a link planted in the folder
        try:
            found, written = os.fstat(fd), _written(fd)
        finally:
            os.close(fd)
        with open(KERNEL_LOCKS) as table:
            rows = [line.split() for line in table]
    except OSError:
        return None
    file_id = f"{os.major(found.st_dev):02x}:{os.minor(found.st_dev):02x}:{found.st_ino}"
    # A process waiting for a lock is listed too, as "N: -> FLOCK ...": it holds nothing.
    if not stat.S_ISREG(found.st_mode) or not any(row[1:2] == ["FLOCK"] and row[5:6] == [file_id] for row in rows):
        return None
    return written or JUST_STARTED


def previous_record_warning(previous: str, state_path: str | os.PathLike | None) -> str | None:
    """One line when the last holder named a crash record other than ours that is still there: it
    did not shut down, and this governor cannot see (or put back) what it found."""
    _, sep, named = previous.rpartition("; crash record ")
    if not sep or named in ("none", str(state_path)) or not os.path.isfile(named):
        return None
    return (f"the last governor on this board ({previous.partition(';')[0]}) did not shut down and left its crash "
            f"record {named}: the board may not be as it found it; to put it back, start the governor once with "
            f"-p state_path:={named}")
