"""Thermal zones: ``thermal_zone*/{type,temp}`` in millidegrees C. A power-gated sensor is
skipped, not reported as cold: on Orin it reads -256 C (e.g. a CV cluster that is off); on Thor
reading ``gpu-thermal`` fails with EAGAIN while the GPU is rail-gated (PCI runtime suspend), and
any zone whose read fails (EAGAIN, EIO, gone) is left out of that sample and read again on the
next, so one gated sensor never costs the others."""

from __future__ import annotations

from pathlib import Path

from edge_roofline.platforms.jetson.files import read_int, read_text, under

THERMAL_DIR = "/sys/devices/virtual/thermal"
GATED_SENSOR_C = -256.0


def find_zones(root: str | Path = "/") -> list[tuple[str, Path]]:
    """(type, temp file) of every zone; a zone's type never changes, so callers that sample
    often find the zones once and read only the temperatures."""
    zones = under(root, THERMAL_DIR)
    if not zones.is_dir():
        return []
    found = [(read_text(zone / "type"), zone / "temp") for zone in sorted(zones.glob("thermal_zone*"))]
    return [(zone_type, temp) for zone_type, temp in found if zone_type]


def read_zones(zones: list[tuple[str, Path]]) -> dict[str, float]:
    temps: dict[str, float] = {}
    for zone_type, temp in zones:
        millideg = read_int(temp)
        if millideg is None:
            continue
        celsius = millideg / 1000.0
        if celsius <= GATED_SENSOR_C:
            continue
        temps[zone_type] = celsius
    return temps


def read_thermal(root: str | Path = "/") -> dict[str, float]:
    return read_zones(find_zones(root))
