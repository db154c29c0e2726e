"""External memory controller (EMC): clock from BPMP debugfs (root only), the nvpmodel cap,
and utilisation from actmon.

``mc_all`` is read the way jetson-stats reads it: utilisation percent = mc_all / rate_kHz.
"""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path

from edge_roofline.platforms.jetson.files import read_hz, read_int, under

EMC_CLK_DIR = "/sys/kernel/debug/bpmp/debug/clk/emc"
EMC_ISO_CAP = "/sys/kernel/nvpmodel_emc_cap/emc_iso_cap"
ACTMON_MC_ALL = "/sys/kernel/actmon_avg_activity/mc_all"


@dataclass(frozen=True)
class EmcStatus:
    rate_hz: float | None
    min_hz: float | None
    max_hz: float | None
    iso_cap_hz: float | None  # None: no cap (the file holds 0) or unreadable
    util_pct: float | None


def read_emc(root: str | Path = "/") -> EmcStatus:
    clk = under(root, EMC_CLK_DIR)
    rate = read_int(clk / "rate")
    cap = read_int(under(root, EMC_ISO_CAP))
    mc_all = read_int(under(root, ACTMON_MC_ALL))
    util = None
    if mc_all is not None and rate:
        util = mc_all / (rate / 1000.0)
    return EmcStatus(
        rate_hz=None if rate is None else float(rate),
        min_hz=read_hz(clk / "min_rate"),
        max_hz=read_hz(clk / "max_rate"),
        iso_cap_hz=float(cap) if cap else None,
        util_pct=util,
    )

