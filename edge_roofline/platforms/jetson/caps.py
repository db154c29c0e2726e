"""Frequency caps and core online flags, written through one narrow privileged path.

A value is checked against the available-frequency table before anything is written. The write
goes straight to the file when this process may write it (root, or a udev rule granting the
group), else through ``sudo -n edge-roofline-write PATH VALUE`` (see docs/privileges.md), which
re-checks path and value against its own allow-list.
"""

from __future__ import annotations

import os
import subprocess
from pathlib import Path

from edge_roofline.platforms.base import ApplyError, OperatingPointError

HELPER = "edge-roofline-write"
HELPER_TIMEOUT_S = 2.0


def check_in_table(freq_hz: float, table_hz: tuple[float, ...], what: str) -> float:
    if table_hz and freq_hz not in table_hz:
        raise OperatingPointError(f"{what} {freq_hz / 1e6:.1f} MHz is not in the available table "
                                  f"({', '.join(f'{f / 1e6:.1f}' for f in table_hz)} MHz)")
    return freq_hz


class CapWriter:
    """Writes ``value`` to ``path``; ``sudo_cmd`` is used only when a direct write is refused."""

    def __init__(self, sudo_cmd: tuple[str, ...] = ("sudo", "-n", HELPER)):
        self.sudo_cmd = sudo_cmd

    def write(self, path: Path, value: str) -> None:
        if os.access(path, os.W_OK):
            try:
                path.write_text(value)
                return
            except OSError as exc:
                raise ApplyError(f"writing {value} to {path} failed: {exc}") from exc
        if not path.exists():
            raise ApplyError(f"cannot write {path}: no such file")
        try:
            done = subprocess.run([*self.sudo_cmd, str(path), value], stdin=subprocess.DEVNULL,
                                  capture_output=True, text=True, timeout=HELPER_TIMEOUT_S, check=False)
        except (OSError, subprocess.TimeoutExpired) as exc:
            raise ApplyError(f"{path} is read-only to this process and the privileged write failed: {exc}; "
                             "see docs/privileges.md") from exc
        if done.returncode != 0:
            raise ApplyError(f"{path} is read-only to this process and the privileged write was refused: "
                             f"{(done.stdout + done.stderr).strip()}; install the sudoers rule or udev rule in "
                             "docs/privileges.md")
