"""INA3221 power rails from hwmon (JetPack 5+ layout).

``sys/bus/i2c/drivers/ina3221/<bus-addr>/hwmon/hwmonN/`` holds ``inK_label``, ``inK_input``
(mV) and ``currK_input`` (mA); N differs between boots, so it is globbed. Channels labelled
``NC`` are not connected and channel 7 is the INA3221 "sum of shunt voltages" pseudo-rail;
both are skipped. The module total comes from the device's ``total_power_rails`` only, because
on AGX Orin ``VIN_SYS_5V0`` already contains ``VDDQ_VDD2_1V8AO`` and summing every rail
double counts the DRAM rail.

Thor's carrier adds an INA238 (``sys/bus/i2c/drivers/ina238/<bus-addr>/hwmon/hwmonN/``) on the
whole input: ``in1_input`` (bus mV), ``curr1_input`` (mA) and ``power1_input`` in **uW** (the
chip's own product, used as the rail's power). It has no label file; tegrastats and jetson-stats
call it ``VIN``, and it is Thor's total (the INA3221 rails are parts of it).

The chip converts continuously, every ``update_interval`` ms (a hwmon attribute of each
hwmonN); a read between two conversions returns the same value, and on a board each read is an
I2C transaction. ``RailReader`` therefore keeps the value files open and reads each with one
``pread`` at offset 0 (sysfs regenerates an attribute on every read from offset 0).

A value no chip can produce (a failing sensor, a driver returning garbage: -99999999 mA once
made the module read -500 kW) is not a reading: the rail is missing from that sample, with the
range it broke, like a file that does not read. The ranges are the chips' registers (TI
datasheets): INA3221 bus 0-32.76 V (12 bits of 8 mV) and shunt +-163.8 mV (12 bits of 40 uV), so
current within 163.8 mV over the channel's ``shuntK_resistor`` (uOhm, a hwmon attribute);
INA238 bus 0-102.4 V (15 bits of 3.125 mV) and power an unsigned register. Its shunt resistor is
not exposed, so its current has no bound here.
"""

from __future__ import annotations

import os
import re
from dataclasses import dataclass
from pathlib import Path

from edge_roofline.platforms.base import PlatformError, RailSample
from edge_roofline.platforms.jetson.files import read_int, read_text, under

INA3221_DRIVER_DIR = "/sys/bus/i2c/drivers/ina3221"
INA238_DRIVER_DIR = "/sys/bus/i2c/drivers/ina238"
INA238_LABEL = "VIN"
_LABEL_RE = re.compile(r"^in(\d+)_label$")
_SUM_OF_SHUNTS_CHANNEL = 7
INA3221_BUS_MAX_MV = 32_760
INA3221_SHUNT_FULL_SCALE_UV = 163_800
INA238_BUS_MAX_MV = 102_396
_BROKEN_FIX = "a value the chip cannot produce: a failing sensor or driver; left out until it reads in range"


@dataclass(frozen=True)
class RailChannel:
    label: str
    i2c_device: str  # e.g. "1-0040"
    channel: int
    voltage_path: Path  # mV
    current_path: Path  # mA
    power_path: Path | None = None  # uW, where the chip computes power itself (INA238)
    bus_max_mv: int = INA3221_BUS_MAX_MV
    current_max_ma: float | None = None  # |current| the chip can measure over its shunt (None: unknown)


class RailReadError(PlatformError):
    """A rail's value file vanished, was unreadable, held no number or one the chip cannot
    produce: the rail is missing from the sample (the others are still read) until the file reads
    again, in range."""

    def __init__(self, rail: str, path: Path, reason: str, fix: str | None = None) -> None:
        self.rail, self.path, self.reason = rail, path, reason
        super().__init__(f"power rail {rail} missing: {path}: {reason} "
                         f"({fix or f'is the ina3221 or ina238 driver bound? ls {path.parent}'})")


class RailNotFoundError(PlatformError):
    """A rail the module total sums that no channel of the board is labelled (another board than
    the one identified, or a driver not bound): module power is lost until the board is named."""

    def __init__(self, rail: str, board_labels: tuple[str, ...], device_key: str) -> None:
        self.rail = rail
        driver_dir = INA238_DRIVER_DIR if rail == INA238_LABEL else INA3221_DRIVER_DIR
        self.reason = (f"no power monitor channel is labelled {rail} (this board's: "
                       f"{', '.join(board_labels) or 'none'}); {device_key} sums it for module power: if the "
                       f"board is another one, set the platform to jetson:DEVICE, else check the driver is bound "
                       f"(ls {driver_dir})")
        super().__init__(f"power rail {rail} missing: {self.reason}")


def find_rails(root: str | Path = "/") -> list[RailChannel]:
    """Every connected INA3221 channel under the tree, sorted by device and channel."""
    driver_dir = under(root, INA3221_DRIVER_DIR)
    channels = []
    for hwmon in sorted(driver_dir.glob("*/hwmon/hwmon*")):
        i2c_device = hwmon.parent.parent.name
        for label_file in sorted(hwmon.iterdir()):
            match = _LABEL_RE.match(label_file.name)
            if not match:
                continue
            number = int(match.group(1))
            label = read_text(label_file)
            if not label or label == "NC" or number == _SUM_OF_SHUNTS_CHANNEL:
                continue
            shunt_uohm = read_int(hwmon / f"shunt{number}_resistor")
            channels.append(RailChannel(label, i2c_device, number,
                                        hwmon / f"in{number}_input", hwmon / f"curr{number}_input",
                                        current_max_ma=INA3221_SHUNT_FULL_SCALE_UV / shunt_uohm * 1e3
                                        if shunt_uohm and shunt_uohm > 0 else None))
    channels += [RailChannel(INA238_LABEL, hwmon.parent.parent.name, 1, hwmon / "in1_input",
                             hwmon / "curr1_input", hwmon / "power1_input", bus_max_mv=INA238_BUS_MAX_MV)
                 for hwmon in sorted(under(root, INA238_DRIVER_DIR).glob("*/hwmon/hwmon*"))
                 if (hwmon / "power1_input").exists()]
    return sorted(channels, key=lambda c: (c.i2c_device, c.channel))


def update_interval_s(channels: list[RailChannel]) -> float | None:
    """How often the rails' INA3221s produce a new reading (hwmon ``update_interval``, ms): the
    fastest of the devices, so sampling at it misses no conversion. None where no device
    exposes it."""
    intervals_ms = [read_int(d / "update_interval") for d in {c.voltage_path.parent for c in channels}]
    known = [ms for ms in intervals_ms if ms is not None and ms > 0]
    return min(known) / 1e3 if known else None


class RailReader:
    """The rails' ``inK_input`` and ``currK_input`` through descriptors kept open: one ``pread``
    per value file per sample, no open/close and no path lookup. A file removed or replaced
    under an open descriptor keeps its old contents on a regular-file tree (sysfs fails the read
    instead), so ``check_paths()`` (a stat per file) notices that; callers run it at a low rate."""

    def __init__(self, channels: list[RailChannel]) -> None:
        self.channels = channels
        # Per channel: (channel, voltage file, current file, power file or None), paths as str
        # (hashed at every read).
        self._files = [(c, str(c.voltage_path), str(c.current_path),
                        None if c.power_path is None else str(c.power_path)) for c in channels]
        self._subsets: dict[tuple[str, ...], list[tuple[RailChannel, str, str, str | None]]] = {}
        self._fds: dict[str, int] = {}
        self._identity: dict[str, tuple[int, int]] = {}  # (st_dev, st_ino) of the file opened
        for _, *paths in self._files:
            for path in paths:
                try:
                    if path is not None:
                        self._open(path)
                except OSError:
                    pass  # reported by the first read

    def _open(self, path: str) -> int:
        fd = os.open(path, os.O_RDONLY)
        st = os.fstat(fd)
        self._fds[path], self._identity[path] = fd, (st.st_dev, st.st_ino)
        return fd

    def _forget(self, path: str) -> None:
        fd = self._fds.pop(path, None)
        if fd is not None:
            os.close(fd)

    def check_paths(self) -> None:
        """Drop descriptors whose path is gone or names another file now (reopened on the next read)."""
        for path in list(self._fds):
            try:
                st = os.stat(path)
                current = (st.st_dev, st.st_ino)
            except OSError:
                current = None
            if current != self._identity[path]:
                self._forget(path)

    def _value(self, rail: str, path: str, low: float | None = None, high: float | None = None,
               unit: str = "") -> int:
        """The file's integer; outside ``low``..``high`` (either may be None) a RailReadError."""
        value = self._number(rail, path)
        if (low is not None and value < low) or (high is not None and value > high):
            bounds = f"{'-inf' if low is None else f'{low:g}'}..{'inf' if high is None else f'{high:g}'}"
            # The value stays out of the reason: a rail is logged again only when its reason changes.
            raise RailReadError(rail, Path(path), f"outside the chip's range {bounds} {unit}",
                                f"read {value} {unit}: {_BROKEN_FIX}")
        return value

    def _number(self, rail: str, path: str) -> int:
        try:
            fd = self._fds.get(path)
            data = os.pread(self._open(path) if fd is None else fd, 32, 0)
        except OSError as exc:
            self._forget(path)
            raise RailReadError(rail, Path(path), exc.strerror or str(exc)) from None
        try:
            return int(data)  # surrounding whitespace allowed
        except ValueError:
            raise RailReadError(rail, Path(path), f"not a number: {data[:32]!r}") from None

    def read(self, labels: tuple[str, ...] | None = None) -> tuple[tuple[RailSample, ...], tuple[RailReadError, ...]]:
        """Every rail (or those in ``labels``) that reads, and a typed error for each that does
        not (one bad rail does not lose the others)."""
        files = self._files if labels is None else self._subsets.get(labels)
        if files is None:
            files = self._subsets[labels] = [f for f in self._files if f[0].label in labels]
        samples, errors = [], []
        for channel, voltage, current, power in files:
            label, limit_ma = channel.label, channel.current_max_ma
            try:
                volts = self._value(label, voltage, 0, channel.bus_max_mv, "mV") / 1000.0
                amps = self._value(label, current, None if limit_ma is None else -limit_ma, limit_ma, "mA") / 1000.0
                watts = volts * amps if power is None else self._value(label, power, 0, None, "uW") / 1e6
            except RailReadError as exc:
                errors.append(exc)
                continue
            samples.append(RailSample(label, volts, amps, watts))
        return tuple(samples), tuple(errors)

    def close(self) -> None:
        for path in list(self._fds):
            self._forget(path)


def total_power_w(rails: tuple[RailSample, ...], total_rail_names: tuple[str, ...]
                  ) -> tuple[float | None, str | None]:
    """Module power from the total rails; ``(None, reason)`` if any of them is missing,
    because a partial sum would silently under-report."""
    by_name = {r.name: r.power_w for r in rails}
    missing = [name for name in total_rail_names if name not in by_name]
    if not total_rail_names:
        return None, "device has no total-power rails in the catalogue"
    if missing:
        return None, f"total-power rails missing: {', '.join(missing)}"
    return sum(by_name[name] for name in total_rail_names), None
