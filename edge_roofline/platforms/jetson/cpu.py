"""CPU cores: online flags, cpufreq (kHz in sysfs, Hz here) and load from /proc/stat."""

from __future__ import annotations

import re
from dataclasses import dataclass
from pathlib import Path

from edge_roofline.platforms.jetson.files import read_hz, read_int, read_int_list, read_text, under

CPU_DIR = "/sys/devices/system/cpu"
_CORE_RE = re.compile(r"^cpu(\d+)$")
_STAT_RE = re.compile(r"^cpu(\d+)\s+(.*)$")
_KHZ = 1e3


@dataclass(frozen=True)
class CoreStatus:
    core: int
    online: bool
    cur_freq_hz: float | None
    min_freq_hz: float | None
    max_freq_hz: float | None
    available_freqs_hz: tuple[float, ...]
    governor: str | None


def core_dir(root: str | Path, core: int) -> Path:
    return under(root, CPU_DIR) / f"cpu{core}"


def list_cores(root: str | Path = "/") -> list[int]:
    base = under(root, CPU_DIR)
    if not base.is_dir():
        return []
    return sorted(int(m.group(1)) for p in base.iterdir() if (m := _CORE_RE.match(p.name)))


def is_online(root: str | Path, core: int) -> bool:
    # cpu0 often has no online file: it cannot be taken offline.
    return read_int(core_dir(root, core) / "online") in (None, 1)


def read_core(root: str | Path, core: int) -> CoreStatus:
    path = core_dir(root, core)
    online = is_online(root, core)
    freq = path / "cpufreq"
    return CoreStatus(
        core=core, online=online,
        cur_freq_hz=read_hz(freq / "scaling_cur_freq", _KHZ) if online else None,
        min_freq_hz=read_hz(freq / "scaling_min_freq", _KHZ),
        max_freq_hz=read_hz(freq / "scaling_max_freq", _KHZ),
        available_freqs_hz=tuple(k * _KHZ for k in read_int_list(freq / "scaling_available_frequencies")),
        governor=read_text(freq / "scaling_governor"),
    )


def read_cores(root: str | Path = "/") -> list[CoreStatus]:
    return [read_core(root, core) for core in list_cores(root)]


def read_online_freqs_hz(root: str | Path, cores: list[int]) -> tuple[float, ...]:
    """Current clock of each online core: the telemetry path (two reads per core, not six)."""
    freqs = []
    for core in cores:
        if is_online(root, core):
            freq_hz = read_hz(core_dir(root, core) / "cpufreq/scaling_cur_freq", _KHZ)
            if freq_hz:
                freqs.append(freq_hz)
    return tuple(freqs)


def read_proc_stat(root: str | Path = "/") -> dict[int, tuple[int, int]]:
    """Per online core: (busy jiffies, total jiffies). Offline cores are absent, as in the
    kernel's /proc/stat."""
    counters: dict[int, tuple[int, int]] = {}
    try:
        with open(under(root, "/proc/stat"), encoding="ascii") as f:
            for line in f:
                match = _STAT_RE.match(line)
                if not match:
                    continue
                fields = [int(v) for v in match.group(2).split()[:8]]
                idle = fields[3] + (fields[4] if len(fields) > 4 else 0)  # idle + iowait
                total = sum(fields)
                counters[int(match.group(1))] = (total - idle, total)
    except (OSError, ValueError):
        return {}
    return counters


def load_pct(previous: dict[int, tuple[int, int]], current: dict[int, tuple[int, int]]
             ) -> tuple[dict[int, float], float | None]:
    """Per-core and mean load in percent between two /proc/stat readings (cores present in
    both); ``None`` mean when there is nothing to compare yet."""
    per_core = {}
    for core, (busy, total) in current.items():
        if core not in previous:
            continue
        d_total = total - previous[core][1]
        if d_total > 0:
            per_core[core] = 100.0 * (busy - previous[core][0]) / d_total
    mean = sum(per_core.values()) / len(per_core) if per_core else None
    return per_core, mean
