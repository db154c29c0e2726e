"""tegrastats lines from a ``BoardState``, in the real format (JetPack 5 on AGX Orin, as root):

``01-03-2023 16:07:54 RAM 2257/30536MB (lfb 5392x4MB) SWAP 0/15268MB (cached 0MB)
CPU [2%@729,off,...] EMC_FREQ 0%@204 GR3D_FREQ 0%@306 VIC_FREQ 115 APE 233 cpu@41.437C ...
VDD_GPU_SOC 2390mW/2390mW ... NC 0mW/0mW``

Loads and clocks are integers (percent, MHz); power fields are instant/average mW, in the
INA3221 channel order, NC channels included as tegrastats prints them. ``gpu_per_gpc`` prints
JetPack 6's ``GR3D_FREQ 14%@[407,407]`` form.

Thor (JetPack 7.1, R38.4) prints one clock per GPC and no GPU load, the PVA, its own thermal
zones and the INA238 input last (docs/jetson-facts.md):
``04-21-2026 15:50:52 RAM 105265/125772MB (lfb 34x4MB) CPU [0%@972,...] EMC_FREQ 0%@2750
GR3D_FREQ @[314,314,314] PVA0_FREQ off APE 300 cpu@37.343C ... VIN 19780mW/19780mW``.
"""

from __future__ import annotations

import argparse
import sys
import time
from datetime import datetime
from pathlib import Path

from edge_roofline.roofline.devices import DeviceSpec
from edge_roofline.virtual.state import BoardState
from edge_roofline.virtual.tree_paths import is_thor, zone_temperatures

_LFB_BLOCKS = 512  # largest-free-block count: not modelled, a plausible constant
_VIC_MHZ = 115
_APE_MHZ = 233
_THOR_APE_MHZ = 300


def _mhz(freq_hz: float) -> int:
    return int(freq_hz / 1e6)


def _pct(fraction: float) -> int:
    return int(round(min(max(fraction, 0.0), 1.0) * 100))


def rail_power_mw(device: DeviceSpec, state: BoardState) -> list[tuple[str, int]]:
    """(label, instant mW) per power channel in tegrastats' order; NC channels read 0."""
    out = []
    for rail in device.power_monitors:
        volts, amps = (0.0, 0.0) if rail.label == "NC" else state.rails.get(rail.label, (0.0, 0.0))
        out.append((rail.label, int(round(volts * amps * 1000))))
    return out


def format_line(device: DeviceSpec, state: BoardState, timestamp: datetime,
                averages_mw: dict[str, int] | None = None, gpu_per_gpc: bool = False) -> str:
    """One tegrastats line; ``averages_mw`` (label -> mW) gives the average fields (default:
    the instant values, as tegrastats prints on its first line)."""
    cpus = ",".join(f"{_pct(state.cpu_busy[c])}%@{_mhz(state.cpu_cur_freq_hz[c])}" if up else "off"
                    for c, up in enumerate(state.cpu_online))
    gpu_mhz = _mhz(state.gpu_cur_freq_hz)
    gpcs = ",".join([str(gpu_mhz)] * device.gpcs)  # Orin: 2 GPCs of 4 TPCs; Thor: 3
    thor = is_thor(device)
    gr3d = (f"@[{gpcs}]" if thor else f"{_pct(state.gpu_load)}%@[{gpcs}]" if gpu_per_gpc
            else f"{_pct(state.gpu_load)}%@{gpu_mhz}")
    temps = " ".join(f"{zone.split('-')[0]}@{celsius:.3f}C".replace(".000C", "C")
                     for zone, celsius in zone_temperatures(device, state.temperatures_c).items())
    averages = averages_mw or {}
    watts = " ".join(f"{label} {mw}mW/{averages.get(label, mw)}mW" for label, mw in rail_power_mw(device, state))
    swap = "" if thor else "SWAP 0/0MB (cached 0MB) "
    engines = f"PVA0_FREQ off APE {_THOR_APE_MHZ}" if thor else f"VIC_FREQ {_VIC_MHZ} APE {_APE_MHZ}"
    return (f"{timestamp:%m-%d-%Y %H:%M:%S} RAM {state.ram_used_mb}/{device.ram_mb}MB "
            f"(lfb {_LFB_BLOCKS}x4MB) {swap}CPU [{cpus}] "
            f"EMC_FREQ {_pct(state.emc_util)}%@{_mhz(state.emc_rate_hz)} GR3D_FREQ {gr3d} "
            f"{engines} {temps} {watts}")


def main(argv: list[str] | None = None) -> int:
    """``tegrastats [--interval MS]`` on a live virtual Jetson's tree (the generated
    ``<root>/usr/bin/tegrastats`` runs this): one line per interval, loads from /proc/stat
    deltas, power averages since start, until killed (or ``--count`` lines)."""
    from edge_roofline.platforms.jetson.identify import identify
    from edge_roofline.roofline.devices import get_device
    from edge_roofline.virtual.sysfs_read import read_state

    ap = argparse.ArgumentParser(prog="tegrastats")
    ap.add_argument("--root", required=True)
    ap.add_argument("--interval", type=int, default=1000, help="milliseconds between lines")
    ap.add_argument("--count", type=int, default=0, help="stop after this many lines (0: never)")
    args = ap.parse_args(argv)
    root = Path(args.root)
    device = get_device(identify(root).catalogue_key)
    previous = read_state(root, device)
    sums_mw: dict[str, float] = {}
    lines = 0
    while args.count <= 0 or lines < args.count:
        time.sleep(args.interval / 1000.0)
        state = read_state(root, device)
        busy = [b - pb for b, pb in zip(state.cpu_busy_time_s, previous.cpu_busy_time_s)]
        idle = [i - pi for i, pi in zip(state.cpu_idle_time_s, previous.cpu_idle_time_s)]
        state.cpu_busy = [b / (b + i) if b + i > 0 else 0.0 for b, i in zip(busy, idle)]
        previous = state
        lines += 1
        for label, mw in rail_power_mw(device, state):
            sums_mw[label] = sums_mw.get(label, 0.0) + mw
        averages = {label: int(round(total / lines)) for label, total in sums_mw.items()}
        print(format_line(device, state, datetime.now(), averages), flush=True)
    return 0


if __name__ == "__main__":
    sys.exit(main())
