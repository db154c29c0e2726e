"""Integrated GPU through devfreq.

The devfreq node name changes between JetPack releases (``17000000.ga10b`` on JetPack 5,
``17000000.gpu`` on JetPack 6), so discovery walks ``/sys/class/devfreq/*`` and keeps the entry
whose ``device/of_node/name`` is a known GPU node, as jetson-stats does. Load (per-mille) and
``tpc_pg_mask`` live in the GPU device directory, frequencies (Hz) in the devfreq directory.
"""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path

from edge_roofline.platforms.jetson.files import read_hz, read_int, read_int_list, read_text, under

DEVFREQ_CLASS_DIR = "/sys/class/devfreq"
GPU_OF_NODE_NAMES = ("ga10b", "gv11b", "gp10b", "gpu")


@dataclass(frozen=True)
class GpuPaths:
    name: str  # devfreq node name, e.g. 17000000.gpu
    devfreq_dir: Path
    device_dir: Path


@dataclass(frozen=True)
class GpuStatus:
    cur_freq_hz: float | None
    min_freq_hz: float | None
    max_freq_hz: float | None
    available_freqs_hz: tuple[float, ...]
    load_pct: float | None
    tpc_pg_mask: int | None
    governor: str | None


def find_gpu(root: str | Path = "/") -> GpuPaths | None:
    class_dir = under(root, DEVFREQ_CLASS_DIR)
    if not class_dir.is_dir():
        return None
    for entry in sorted(class_dir.iterdir()):
        node_name = read_text(entry / "device" / "of_node" / "name")
        if node_name and node_name.lower() in GPU_OF_NODE_NAMES:
            return GpuPaths(entry.name, entry.resolve(), (entry / "device").resolve())
    return None


def read_gpu(paths: GpuPaths) -> GpuStatus:
    load_permille = read_int(paths.device_dir / "load")
    return GpuStatus(
        cur_freq_hz=read_hz(paths.devfreq_dir / "cur_freq"),
        min_freq_hz=read_hz(paths.devfreq_dir / "min_freq"),
        max_freq_hz=read_hz(paths.devfreq_dir / "max_freq"),
        available_freqs_hz=tuple(float(v) for v in read_int_list(paths.devfreq_dir / "available_frequencies")),
        load_pct=None if load_permille is None else load_permille / 10.0,
        tpc_pg_mask=read_int(paths.device_dir / "tpc_pg_mask"),
        governor=read_text(paths.devfreq_dir / "governor"),
    )

