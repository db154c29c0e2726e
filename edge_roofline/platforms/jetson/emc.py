"""External memory controller (EMC): its clock, the nvpmodel cap and utilisation from actmon.

Orin: the clock is in BPMP debugfs (``/sys/kernel/debug/bpmp/debug/clk/emc/{rate,min_rate,
max_rate}``, root only). Thor (JetPack 7): the EMC is the devfreq domain ``bwmgr``
(``/sys/class/devfreq/bwmgr/{cur,min,max}_freq``, Hz, readable by all, with its
``available_frequencies``), as jetson-stats reads it. Both keep nvpmodel's cap in
``emc_iso_cap`` (0 = no cap) and the utilisation in actmon's ``mc_all``, read the way
jetson-stats reads it: percent = mc_all / rate_kHz.
"""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path

from edge_roofline.platforms.jetson.files import read_hz, read_int, read_int_list, under

EMC_CLK_DIR = "/sys/kernel/debug/bpmp/debug/clk/emc"
BWMGR_DEVFREQ = "/sys/class/devfreq/bwmgr"
EMC_ISO_CAP = "/sys/kernel/nvpmodel_emc_cap/emc_iso_cap"
ACTMON_MC_ALL = "/sys/kernel/actmon_avg_activity/mc_all"


@dataclass(frozen=True)
class EmcStatus:
    rate_hz: float | None
    min_hz: float | None
    max_hz: float | None
    iso_cap_hz: float | None  # None: no cap (the file holds 0) or unreadable
    util_pct: float | None
    source: str = "bpmp"  # "bpmp" (debugfs) | "bwmgr" (devfreq, Thor)
    available_hz: tuple[float, ...] = ()  # bwmgr's table; BPMP debugfs shows none


def emc_clock_files(root: str | Path = "/") -> tuple[str, Path, tuple[str, str, str]]:
    """(source, directory, (rate, min, max) file names): bwmgr where the board has it (Thor),
    else BPMP debugfs."""
    bwmgr = under(root, BWMGR_DEVFREQ)
    if bwmgr.is_dir():
        return "bwmgr", bwmgr, ("cur_freq", "min_freq", "max_freq")
    return "bpmp", under(root, EMC_CLK_DIR), ("rate", "min_rate", "max_rate")


def read_emc(root: str | Path = "/") -> EmcStatus:
    source, clk, (rate_name, min_name, max_name) = emc_clock_files(root)
    rate = read_int(clk / rate_name)
    cap = read_int(under(root, EMC_ISO_CAP))
    mc_all = read_int(under(root, ACTMON_MC_ALL))
    util = None
    if mc_all is not None and rate:
        util = mc_all / (rate / 1000.0)
    return EmcStatus(
        rate_hz=None if rate is None else float(rate),
        min_hz=read_hz(clk / min_name),
        max_hz=read_hz(clk / max_name),
        iso_cap_hz=float(cap) if cap else None,
        util_pct=util,
        source=source,
        available_hz=tuple(float(v) for v in read_int_list(clk / "available_frequencies")) if source == "bwmgr" else (),
    )
