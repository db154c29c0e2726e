"""Integrated GPU through devfreq.

Orin (nvgpu): the devfreq node name changes between JetPack releases (``17000000.ga10b`` on
JetPack 5, ``17000000.gpu`` on JetPack 6 and 7.2), so discovery walks ``/sys/class/devfreq/*``
and keeps the entry whose ``device/of_node/name`` is a known GPU node, as jetson-stats does.
Load (per-mille), ``tpc_pg_mask`` and ``railgate_enable`` live in the GPU device directory,
frequencies (Hz) in the devfreq directory.

Thor (JetPack 7, unified nvidia.ko): the GPU is PCI device ``0000:01:00.0``; its graphics clock
is the devfreq domain ``gpu-gpc-0`` (Hz; the codec clock is ``gpu-nvd-0``), there is no
``tpc_pg_mask`` or ``railgate_enable``, and rail-gating is PCI runtime power management:
``/sys/bus/pci/devices/0000:01:00.0/power/control`` is ``auto`` (the GPU may power off when idle)
or ``on``, and ``power/runtime_status`` says ``suspended`` while it is off. A ``load`` file in
``gpu-gpc-0`` is optional; its unit is UNVERIFIED (read as per mille, as Orin's; jetson-stats
reads values up to 100 as percent). Where it is absent, NVML's utilisation is the fallback
(``platforms.nvml.NvmlUtilisation``).
"""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path

from edge_roofline.platforms.jetson.files import read_hz, read_int, read_int_list, read_text, under

DEVFREQ_CLASS_DIR = "/sys/class/devfreq"
GPU_OF_NODE_NAMES = ("ga10b", "gv11b", "gp10b", "gpu")
THOR_GPC_DEVFREQ = "gpu-gpc-0"
THOR_NVD_DEVFREQ = "gpu-nvd-0"
PCI_DEVICES_DIR = "/sys/bus/pci/devices"


@dataclass(frozen=True)
class GpuPaths:
    name: str  # devfreq node name, e.g. 17000000.gpu or gpu-gpc-0
    devfreq_dir: Path
    device_dir: Path
    pci_dir: Path | None = None  # Thor: the PCI device (runtime power management)
    codec_devfreq_dir: Path | None = None  # Thor: gpu-nvd-0

    @property
    def load_file(self) -> Path:
        return (self.devfreq_dir if self.pci_dir else self.device_dir) / "load"


@dataclass(frozen=True)
class GpuStatus:
    cur_freq_hz: float | None
    min_freq_hz: float | None
    max_freq_hz: float | None
    available_freqs_hz: tuple[float, ...]
    load_pct: float | None
    tpc_pg_mask: int | None
    governor: str | None
    railgate: str | None = None  # Thor: "auto" | "on" (power/control); Orin: "1" | "0" (railgate_enable)
    gated: bool | None = None  # Thor: powered off right now (runtime_status "suspended")
    codec_freq_hz: float | None = None  # Thor: gpu-nvd-0


def _thor_gpu(root: str | Path) -> GpuPaths | None:
    class_dir = under(root, DEVFREQ_CLASS_DIR)
    gpc = class_dir / THOR_GPC_DEVFREQ
    if not gpc.is_dir():
        return None
    devfreq = gpc.resolve()
    device = (gpc / "device").resolve() if (gpc / "device").exists() else devfreq
    # The PCI device: devfreq's parent device where it is linked, else the documented address.
    pci = device if (device / "power" / "control").exists() else under(root, PCI_DEVICES_DIR) / "0000:01:00.0"
    nvd = class_dir / THOR_NVD_DEVFREQ
    return GpuPaths(THOR_GPC_DEVFREQ, devfreq, device, pci, nvd.resolve() if nvd.is_dir() else None)


def find_gpu(root: str | Path = "/") -> GpuPaths | None:
    thor = _thor_gpu(root)
    if thor is not None:
        return thor
    class_dir = under(root, DEVFREQ_CLASS_DIR)
    if not class_dir.is_dir():
        return None
    for entry in sorted(class_dir.iterdir()):
        node_name = read_text(entry / "device" / "of_node" / "name")
        if node_name and node_name.lower() in GPU_OF_NODE_NAMES:
            return GpuPaths(entry.name, entry.resolve(), (entry / "device").resolve())
    return None


def read_gpu(paths: GpuPaths) -> GpuStatus:
    load_permille = read_int(paths.load_file)
    if paths.pci_dir is not None:
        railgate = read_text(paths.pci_dir / "power" / "control")
        runtime = read_text(paths.pci_dir / "power" / "runtime_status")
        gated = None if runtime is None else runtime == "suspended"
    else:
        railgate, gated = read_text(paths.device_dir / "railgate_enable"), None
    return GpuStatus(
        cur_freq_hz=read_hz(paths.devfreq_dir / "cur_freq"),
        min_freq_hz=read_hz(paths.devfreq_dir / "min_freq"),
        max_freq_hz=read_hz(paths.devfreq_dir / "max_freq"),
        available_freqs_hz=tuple(float(v) for v in read_int_list(paths.devfreq_dir / "available_frequencies")),
        load_pct=None if load_permille is None else load_permille / 10.0,
        tpc_pg_mask=None if paths.pci_dir else read_int(paths.device_dir / "tpc_pg_mask"),
        governor=read_text(paths.devfreq_dir / "governor"),
        railgate=railgate, gated=gated,
        codec_freq_hz=read_hz(paths.codec_devfreq_dir / "cur_freq") if paths.codec_devfreq_dir else None,
    )
