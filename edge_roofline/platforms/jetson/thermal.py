"""Thermal zones: ``thermal_zone*/{type,temp}`` in millidegrees C. A reading of -256 C is a
power-gated sensor (e.g. a CV cluster that is off) and is skipped, not reported as cold."""

from __future__ import annotations

from pathlib import Path

from edge_roofline.platforms.jetson.files import read_int, read_text, under

THERMAL_DIR = "/sys/devices/virtual/thermal"
GATED_SENSOR_C = -256.0


def read_thermal(root: str | Path = "/") -> dict[str, float]:
    zones = under(root, THERMAL_DIR)
    temps: dict[str, float] = {}
    if not zones.is_dir():
        return temps
    for zone in sorted(zones.glob("thermal_zone*")):
        zone_type = read_text(zone / "type")
        millideg = read_int(zone / "temp")
        if not zone_type or millideg is None:
            continue
        celsius = millideg / 1000.0
        if celsius <= GATED_SENSOR_C:
            continue
        temps[zone_type] = celsius
    return temps
