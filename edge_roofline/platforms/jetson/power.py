"""INA3221 power rails from hwmon (JetPack 5+ layout).

``sys/bus/i2c/drivers/ina3221/<bus-addr>/hwmon/hwmonN/`` holds ``inK_label``, ``inK_input``
(mV) and ``currK_input`` (mA); N differs between boots, so it is globbed. Channels labelled
``NC`` are not connected and channel 7 is the INA3221 "sum of shunt voltages" pseudo-rail;
both are skipped. The module total comes from the device's ``total_power_rails`` only, because
on AGX Orin ``VIN_SYS_5V0`` already contains ``VDDQ_VDD2_1V8AO`` and summing every rail
double counts the DRAM rail.
"""

from __future__ import annotations

import re
from dataclasses import dataclass
from pathlib import Path

from edge_roofline.platforms.base import RailSample
from edge_roofline.platforms.jetson.files import read_int, read_text, under

INA3221_DRIVER_DIR = "/sys/bus/i2c/drivers/ina3221"
_LABEL_RE = re.compile(r"^in(\d+)_label$")
_SUM_OF_SHUNTS_CHANNEL = 7


@dataclass(frozen=True)
class RailChannel:
    label: str
    i2c_device: str  # e.g. "1-0040"
    channel: int
    voltage_path: Path  # mV
    current_path: Path  # mA


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
            channels.append(RailChannel(label, i2c_device, number,
                                        hwmon / f"in{number}_input", hwmon / f"curr{number}_input"))
    return sorted(channels, key=lambda c: (c.i2c_device, c.channel))


def read_rails(channels: list[RailChannel]) -> tuple[tuple[RailSample, ...], list[str]]:
    """Read each channel; a channel whose files vanished or are unreadable is reported, not
    raised, so one bad rail does not lose the others."""
    samples, problems = [], []
    for ch in channels:
        millivolts = read_int(ch.voltage_path)
        milliamps = read_int(ch.current_path)
        if millivolts is None or milliamps is None:
            problems.append(f"rail {ch.label} unreadable ({ch.voltage_path.parent})")
            continue
        volts, amps = millivolts / 1000.0, milliamps / 1000.0
        samples.append(RailSample(ch.label, volts, amps, volts * amps))
    return tuple(samples), problems


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
