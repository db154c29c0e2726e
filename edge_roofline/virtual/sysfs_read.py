"""A virtual Jetson's tree read back (the other half of sysfs_tree.py, which writes it): the
controls a client wrote (nvpmodel mode, online cores, caps), for a board that follows them
live, and the whole tree as a ``BoardState``. Files are read with the real readers' helpers."""

from __future__ import annotations

from copy import copy
from dataclasses import dataclass, fields
from pathlib import Path

from edge_roofline.platforms.jetson.files import read_int, read_text
from edge_roofline.platforms.jetson.nvpmodel import read_status_mode
from edge_roofline.roofline.devices import DeviceSpec
from edge_roofline.virtual.state import BoardState
from edge_roofline.virtual.sysfs_tree import USER_HZ
from edge_roofline.virtual.tree_paths import ACTMON_MC_ALL, CPU_DIR, EMC_ISO_CAP, THERMAL_DIR, TreePaths


@dataclass(frozen=True)
class Controls:
    """What clients write: nvpmodel mode, online cores, min/max caps, TPC mask, EMC cap."""

    nvpmodel_mode_id: int
    cpu_online: list[bool]
    cpu_min_freq_hz: list[float]
    cpu_max_freq_hz: list[float]
    gpu_min_freq_hz: float
    gpu_max_freq_hz: float
    tpc_pg_mask: int
    emc_min_hz: float
    emc_max_hz: float

    @classmethod
    def of(cls, state: BoardState) -> "Controls":
        """The controls a board state is in (copies, so the state can change underneath)."""
        return cls(**{f.name: copy(getattr(state, f.name)) for f in fields(cls)})

    def apply_to(self, state: BoardState) -> None:
        for f in fields(self):
            setattr(state, f.name, copy(getattr(self, f.name)))


def read_controls(root: str | Path, device: DeviceSpec) -> Controls:
    """The control files only (about 25 reads on AGX Orin), for a board that follows them live.
    The EMC cap is the lower of the clock's own maximum (debugfs ``max_rate``, Thor's bwmgr
    ``max_freq``) and ``emc_iso_cap``."""
    root = Path(root)
    paths = TreePaths.of(device)
    policy_hz = {}
    for cluster in device.cpu_clusters:
        for name, fallback in (("scaling_min_freq", min(device.cpu_freqs_hz)),
                               ("scaling_max_freq", device.cpu_max_freq_hz)):
            value = read_int(root / f"{paths.policy_dir(cluster[0])}/{name}")
            policy_hz[cluster[0], name] = fallback if value is None else value * 1e3
    cores = range(device.cpu_cores)
    emc_max_rate = read_int(root / paths.emc_file("max")) or device.emc_max_freq_hz
    emc_cap = read_int(root / EMC_ISO_CAP) or 0
    mode_id = read_status_mode(root)
    return Controls(
        nvpmodel_mode_id=device.default_mode_id if mode_id is None else mode_id,
        cpu_online=[read_int(root / f"{CPU_DIR}/cpu{c}/online") != 0 for c in cores],
        cpu_min_freq_hz=[policy_hz[paths.policy_of_core[c], "scaling_min_freq"] for c in cores],
        cpu_max_freq_hz=[policy_hz[paths.policy_of_core[c], "scaling_max_freq"] for c in cores],
        gpu_min_freq_hz=float(read_int(root / f"{paths.gpu_devfreq}/min_freq") or min(device.gpu_freqs_hz)),
        gpu_max_freq_hz=float(read_int(root / f"{paths.gpu_devfreq}/max_freq") or device.gpu_max_freq_hz),
        tpc_pg_mask=read_int(root / paths.pg_mask_file) or 0,
        emc_min_hz=float(read_int(root / paths.emc_file("min")) or min(device.emc_freqs_hz)),
        emc_max_hz=float(min(emc_max_rate, emc_cap) if emc_cap > 0 else emc_max_rate))


def read_state(root: str | Path, device: DeviceSpec) -> BoardState:
    """The tree as a BoardState. Controls (mode, online flags, min/max caps, TPC mask, EMC cap)
    are what a client last wrote; ``cpu_busy`` is the lifetime mean from /proc/stat, so a
    physics model should keep its own per-interval busy fractions."""
    root = Path(root)
    paths = TreePaths.of(device)
    controls = read_controls(root, device)
    busy_s, idle_s = _read_proc_stat_seconds(root, device.cpu_cores)
    rate_hz = float(read_int(root / paths.emc_file("rate")) or min(device.emc_freqs_hz))
    mc_all = read_int(root / ACTMON_MC_ALL) or 0
    total_kb = _meminfo_kb(root, "MemTotal")
    available_kb = _meminfo_kb(root, "MemAvailable")
    return BoardState(
        **controls.__dict__,
        cpu_cur_freq_hz=[(read_int(root / f"{paths.policy_dir(c)}/scaling_cur_freq")
                          or min(device.cpu_freqs_hz) / 1e3) * 1e3 for c in range(device.cpu_cores)],
        cpu_busy=[b / (b + i) if b + i > 0 else 0.0 for b, i in zip(busy_s, idle_s)],
        gpu_cur_freq_hz=float(read_int(root / f"{paths.gpu_devfreq}/cur_freq") or min(device.gpu_freqs_hz)),
        gpu_load=(read_int(root / paths.gpu_load) or 0) / 1000.0,
        emc_rate_hz=rate_hz,
        emc_util=mc_all / 100.0 / (rate_hz / 1e3) if rate_hz else 0.0,
        rails=_read_rails(root, device, paths),
        temperatures_c=_read_temperatures(root),
        uptime_s=float((read_text(root / "proc/uptime") or "0").split()[0]),
        cpu_busy_time_s=busy_s, cpu_idle_time_s=idle_s,
        ram_used_mb=(total_kb - available_kb) // 1024 if total_kb and available_kb is not None else 0,
    )


def _read_proc_stat_seconds(root: Path, cores: int) -> tuple[list[float], list[float]]:
    busy, idle = [0.0] * cores, [0.0] * cores
    for line in (_read_all(root, "proc/stat") or "").splitlines():
        name, *fields = line.split()
        if name.startswith("cpu") and name[3:].isdigit() and int(name[3:]) < cores:
            values = [int(v) for v in fields]
            core = int(name[3:])
            idle[core] = (values[3] + values[4]) / USER_HZ
            busy[core] = (sum(values[:8]) - values[3] - values[4]) / USER_HZ
    return busy, idle


def _read_all(root: Path, rel: str) -> str | None:
    try:
        return (root / rel).read_text(encoding="ascii")
    except OSError:
        return None


def _meminfo_kb(root: Path, key: str) -> int | None:
    for line in (_read_all(root, "proc/meminfo") or "").splitlines():
        if line.startswith(key + ":"):
            return int(line.split()[1])
    return None


def _read_rails(root: Path, device: DeviceSpec, paths: TreePaths) -> dict[str, tuple[float, float]]:
    rails = {}
    for rail in device.power_monitors:
        if rail.label == "NC":
            continue
        hwmon, k = paths.hwmon_of_i2c[rail.i2c_device], rail.channel
        millivolts, milliamps = read_int(root / f"{hwmon}/in{k}_input"), read_int(root / f"{hwmon}/curr{k}_input")
        if millivolts is not None and milliamps is not None:
            rails[rail.label] = (millivolts / 1000.0, milliamps / 1000.0)
    return rails


def _read_temperatures(root: Path) -> dict[str, float]:
    temps = {}
    for zone in sorted((root / THERMAL_DIR).glob("thermal_zone*"), key=lambda p: int(p.name[12:])):
        zone_type = read_text(root / f"{THERMAL_DIR}/{zone.name}/type")
        millideg = read_int(root / f"{THERMAL_DIR}/{zone.name}/temp")
        if zone_type and millideg is not None:
            temps[zone_type] = millideg / 1000.0
    return temps
