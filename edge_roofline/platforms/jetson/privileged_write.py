"""``edge-roofline-write PATH VALUE``: the only command the governor may run as root.

It writes one decimal value to one existing clock-cap or core-online attribute and nothing else.
PATH's symlinks are resolved once; the resolved path must match the allow-list; then exactly
that path is opened one component at a time without following a link (a link swapped in after
the check is refused, not followed), without creating anything, and only a regular file is
written (sysfs and debugfs attributes are regular files; so are a virtual Jetson's).
"""

from __future__ import annotations

import os
import re
import stat
import sys

ALLOWED_PATHS = (
    re.compile(r"^/sys/devices/system/cpu/cpu\d+/online$"),
    re.compile(r"^/sys/devices/system/cpu/cpu(freq/policy)?\d+(/cpufreq)?/scaling_(min|max)_freq$"),
    re.compile(r"^/sys/devices/(platform/)?(bus@0/)?[0-9a-f]+\.(gpu|ga10b|gv11b|gp10b)/devfreq/[^/]+/(min|max)_freq$"),
    # Thor: the PCI GPU's gpu-gpc-0 and the EMC's bwmgr (their parent directories: UNVERIFIED)
    re.compile(r"^/sys/devices/[\w@:.,/-]+/devfreq/(gpu-gpc-0|bwmgr)/(min|max)_freq$"),
    re.compile(r"^/sys/kernel/debug/bpmp/debug/clk/emc/(min|max)_rate$"),
    re.compile(r"^/sys/kernel/nvpmodel_emc_cap/emc_iso_cap$"),
)
_VALUE_RE = re.compile(r"^\d{1,12}$")


class RefusedWrite(Exception):
    """The write was refused or failed; the message says why in one line."""


def board_path(real: str, root: str = "/") -> str | None:
    """``real`` (a resolved path) as the board names it: relative to the resolved ``root``
    (``/`` on a real board; a virtual Jetson's tree in tests). None: outside the root."""
    top = os.path.realpath(root)
    if top == "/":
        return real
    if real != top and not real.startswith(top + "/"):
        return None
    return "/" + os.path.relpath(real, top)


def allowed(path: str, value: str, root: str = "/") -> bool:
    """Whether ``path`` (its symlinks resolved) is an allow-listed cap file and ``value`` digits."""
    board = board_path(os.path.realpath(path), root)
    return bool(_VALUE_RE.match(value)) and board is not None and any(p.match(board) for p in ALLOWED_PATHS)


def _open_resolved(real: str) -> int:
    """A write descriptor of the existing regular file at ``real`` (absolute, resolved), every
    component opened with O_NOFOLLOW from ``/`` and nothing created."""
    parts = real.split("/")[1:]
    if not real.startswith("/") or any(p in ("", ".", "..") for p in parts):
        raise RefusedWrite(f"{real} is not a resolved absolute path")
    dir_fd = os.open("/", os.O_PATH | os.O_DIRECTORY | os.O_CLOEXEC)
    try:
        for i, name in enumerate(parts[:-1]):
            try:
                next_fd = os.open(name, os.O_PATH | os.O_DIRECTORY | os.O_NOFOLLOW | os.O_CLOEXEC, dir_fd=dir_fd)
            except FileNotFoundError:
                raise RefusedWrite(f"{real} does not exist: only existing cap attributes are written") from None
            except OSError as exc:
                raise RefusedWrite(f"{'/' + '/'.join(parts[:i + 1])} is not a directory any more "
                                   f"({exc.strerror}): a link is never followed after the check") from None
            os.close(dir_fd)
            dir_fd = next_fd
        try:
            path_fd = os.open(parts[-1], os.O_PATH | os.O_NOFOLLOW | os.O_CLOEXEC, dir_fd=dir_fd)
        except FileNotFoundError:
            raise RefusedWrite(f"{real} does not exist: only existing cap attributes are written") from None
    finally:
        os.close(dir_fd)
    try:
        mode = os.fstat(path_fd).st_mode
        if not stat.S_ISREG(mode):
            kind = "a symbolic link" if stat.S_ISLNK(mode) else "not a regular file"
            raise RefusedWrite(f"{real} is {kind}: only regular cap attributes are written")
        # Reopening the O_PATH descriptor writes the very file checked, whatever the path names now.
        return os.open(f"/proc/self/fd/{path_fd}", os.O_WRONLY | os.O_TRUNC | os.O_NOCTTY | os.O_CLOEXEC)
    finally:
        os.close(path_fd)


def write(path: str, value: str, root: str = "/") -> None:
    """Write ``value`` to the cap file ``path`` names, or raise RefusedWrite saying why.
    ``root``: where the board's ``/`` is (tests: a virtual Jetson's tree); the command is always ``/``."""
    real = os.path.realpath(path)
    if not allowed(real, value, root):
        raise RefusedWrite(f"{path} {value!r} is not an allowed cap write")
    try:
        fd = _open_resolved(real)
        try:
            written = os.write(fd, value.encode())
        finally:
            os.close(fd)
    except OSError as exc:
        raise RefusedWrite(f"writing {value} to {real} failed: {exc.strerror}") from None
    if written != len(value):
        raise RefusedWrite(f"writing {value} to {real}: only {written} of {len(value)} bytes taken")


def main(argv: list[str] | None = None) -> int:
    args = sys.argv[1:] if argv is None else argv
    if len(args) != 2:
        print("usage: edge-roofline-write PATH VALUE", file=sys.stderr)
        return 2
    try:
        write(*args)
    except RefusedWrite as exc:
        print(f"refused: {exc}", file=sys.stderr)
        return 1
    return 0


if __name__ == "__main__":
    sys.exit(main())
