"""The virtual INA3221s' (and Thor's INA238's) hwmon files: the chip attributes and the rail
values. SIMULATION.

``update_interval`` (ms, rounded as the Linux driver rounds) and ``samples`` (averages per
conversion) come from the physics' conversion window (``PhysicsParams.ina_window_s``, built
from 1.1 ms per channel conversion x 3 channels x samples).

Rail values (``inK_input`` mV, ``currK_input`` mA) are written in place at a fixed width:
``VALUE_BYTES`` bytes, the number padded with trailing spaces and a newline (``int()``,
``strtol`` and jetson-stats' ``split(" ")[0]`` read it as the kernel's unpadded text), with one
``pwrite`` at offset 0 (the INA238's ``power1_input``, in uW, is ``POWER_VALUE_BYTES`` wide). A
reader that keeps the file open and ``pread``s offset 0 (``platforms.jetson.power.RailReader``,
as on a board's sysfs) sees every new value, which a rename-over never shows it. Why it never
sees a torn value:

- the file never changes size, so there is no truncate-then-write moment when a reader gets an
  empty or short file (the race of a plain rewrite);
- the old and the new value are one 8-byte span at offset 0 of one page, and each side moves it
  with one copy (the writer's ``pwrite`` into the page cache, the reader's ``pread`` out of it).
  Linux does not lock a buffered read against a write on ext4 or tmpfs, so this rests on the
  copy of 8 aligned bytes not being split, which holds for the kernel's user-copy routines in
  practice but is no documented guarantee: ``test_no_torn_rail_values`` checks it (about a
  million reads a second against a writer flipping every byte see only whole values; the same
  check by hand with 4 KiB values saw about 1 % torn reads on this VM, 8- to 24-byte values none).
"""

from __future__ import annotations

import os
from pathlib import Path

VALUE_BYTES = 8
POWER_VALUE_BYTES = 16  # the INA238's power1_input is in uW: 130 W is nine digits
_CHANNEL_CONVERSION_S = 1.1e-3
_CHANNELS = 3


def chip_attributes(ina_window_s: float) -> dict[str, str]:
    """``update_interval`` and ``samples`` file contents for a conversion period."""
    return {"update_interval": f"{int(ina_window_s * 1e3 + 0.5)}\n",
            "samples": f"{max(1, round(ina_window_s / (_CHANNELS * _CHANNEL_CONVERSION_S)))}\n"}


def value_bytes(value: int, width: int = VALUE_BYTES) -> bytes:
    text = f"{value:<{width - 1}d}\n"
    if len(text) != width:
        raise ValueError(f"{value} does not fit a {width}-byte hwmon value file")
    return text.encode("ascii")


def write_value(path: Path, value: int, create: bool = False, width: int = VALUE_BYTES) -> bool:
    """Write in place; False if the file is gone and ``create`` is off (a removed rail file
    stays removed, as the files of an unbound driver do)."""
    flags = os.O_WRONLY | (os.O_CREAT if create else 0)
    try:
        fd = os.open(path, flags, 0o644)
    except FileNotFoundError:
        return False
    try:
        os.pwrite(fd, value_bytes(value, width), 0)
    finally:
        os.close(fd)
    return True


def write_rails(root: Path, files: list[tuple[str, str, str, str | None]], rails: dict[str, tuple[float, float]],
                create: bool = False) -> None:
    """``files``: (label, voltage file, current file, power file or None) relative to ``root``;
    ``rails``: label -> (volts, amps); a channel without a reading (NC) shows 0. A power file
    (the INA238's ``power1_input``) gets volts x amps in uW."""
    for label, voltage_rel, current_rel, power_rel in files:
        volts, amps = rails.get(label, (0.0, 0.0))
        write_value(root / voltage_rel, int(round(volts * 1000)), create)
        write_value(root / current_rel, int(round(amps * 1000)), create)
        if power_rel is not None:
            write_value(root / power_rel, int(round(volts * amps * 1e6)), create, POWER_VALUE_BYTES)
