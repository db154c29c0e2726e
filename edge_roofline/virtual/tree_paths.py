"""Where things live in a virtual Jetson's tree (paths relative to its root), for both layouts
the real boards have. SIMULATION.

- Orin (JetPack 5/6/7.2): the GPU is the platform device ``17000000.gpu`` with its devfreq of
  the same name, ``tpc_pg_mask`` and ``load`` in the device directory; the EMC clock in BPMP
  debugfs; INA3221 rails on i2c bus 1.
- Thor (JetPack 7): the GPU is PCI device ``0000:01:00.0`` with devfreq domains ``gpu-gpc-0``
  and ``gpu-nvd-0``, runtime power management in its ``power/`` directory; the EMC is the
  devfreq ``bwmgr``; INA3221 rails on i2c bus 2 plus the INA238 total at ``2-0044``.

Where a path on a real Thor is not known, the tree uses a plausible one and says so here:
the PCI device's parent directories and the bwmgr device directory are UNVERIFIED (readers
reach both through ``/sys/class/devfreq`` and ``/sys/bus/pci/devices`` links, which are
known), and so is the file standing for Thor's GPU power-gating mask (a module parameter that
takes effect at the next boot: ``GPU_PG_MASK_FILE``).
"""

from __future__ import annotations

import os
from dataclasses import dataclass
from pathlib import Path

from edge_roofline.roofline.devices import DeviceSpec

CPU_DIR = "sys/devices/system/cpu"
EMC_CLK_DIR = "sys/kernel/debug/bpmp/debug/clk/emc"
EMC_ISO_CAP = "sys/kernel/nvpmodel_emc_cap/emc_iso_cap"
ACTMON_MC_ALL = "sys/kernel/actmon_avg_activity/mc_all"
THERMAL_DIR = "sys/devices/virtual/thermal"
NV_TEGRA_RELEASE = "etc/nv_tegra_release"
I2C_BUS_DIR = "sys/devices/platform/bus@0/c240000.i2c"
_FIRST_HWMON_INDEX = 2  # hwmon numbering is boot-dependent on a board; readers must glob it
_THOR_PCI_PARENT = "sys/devices/pci0000:00/0000:00:00.0"  # UNVERIFIED
_BWMGR_DEVICE = "sys/devices/platform/bwmgr"  # UNVERIFIED
GPU_PG_MASK_FILE = "sys/module/nvidia/parameters/gpc_pg_mask"  # Thor, stands for the module parameter

# Thermal zones each layout shows (jetson-facts.md) and, for Thor, the physics hot spot each one
# shows (the physics models Orin's zones; a Thor zone reads the matching part of the die).
ORIN_ZONES = ("cpu-thermal", "gpu-thermal", "cv0-thermal", "cv1-thermal", "cv2-thermal",
              "soc0-thermal", "soc1-thermal", "soc2-thermal", "tj-thermal")
THOR_ZONE_SOURCES = {"cpu-thermal": "cpu-thermal", "gpu-thermal": "gpu-thermal",
                     "soc012-thermal": "soc0-thermal", "soc345-thermal": "soc1-thermal",
                     "tj-thermal": "tj-thermal"}


def is_thor(device: DeviceSpec) -> bool:
    return device.gpu_pci_device is not None


def zone_types(device: DeviceSpec) -> tuple[str, ...]:
    return tuple(THOR_ZONE_SOURCES) if is_thor(device) else ORIN_ZONES


def zone_temperatures(device: DeviceSpec, temperatures_c: dict[str, float]) -> dict[str, float]:
    """The board's zones from a state's temperatures (the physics' zones, or the board's own
    where the state was read back from a tree)."""
    if not is_thor(device):
        return dict(temperatures_c)
    return {zone: temperatures_c[zone] if zone in temperatures_c else temperatures_c[source]
            for zone, source in THOR_ZONE_SOURCES.items()
            if zone in temperatures_c or source in temperatures_c}


@dataclass(frozen=True)
class TreePaths:
    """Where things live in a tree (relative to its root), derived from the device."""

    gpu_device: str
    gpu_devfreq: str
    policy_of_core: dict[int, int]  # core -> first core of its cluster (cpufreq policy id)
    hwmon_of_i2c: dict[str, str]  # "1-0040" -> hwmon directory
    emc_dir: str  # BPMP debugfs clock or the bwmgr devfreq
    emc_files: tuple[str, str, str]  # (rate, min, max) file names in emc_dir
    gpu_load: str  # per mille
    pg_mask_file: str  # the GPU power-gating mask nvpmodel sets
    codec_devfreq: str | None = None  # Thor: gpu-nvd-0

    @classmethod
    def of(cls, device: DeviceSpec) -> "TreePaths":
        policy = {core: cluster[0] for cluster in device.cpu_clusters for core in cluster}
        i2c_devices = sorted({r.i2c_device for r in device.power_monitors})
        hwmon = {dev: f"{I2C_BUS_DIR}/i2c-{dev.split('-')[0]}/{dev}/hwmon/hwmon{_FIRST_HWMON_INDEX + i}"
                 for i, dev in enumerate(i2c_devices)}
        if is_thor(device):
            gpu_device = f"{_THOR_PCI_PARENT}/{device.gpu_pci_device}"
            devfreq = f"{gpu_device}/devfreq/{device.gpu_devfreq_name}"
            return cls(gpu_device, devfreq, policy, hwmon,
                       f"{_BWMGR_DEVICE}/devfreq/{device.emc_devfreq_name}", ("cur_freq", "min_freq", "max_freq"),
                       f"{devfreq}/load", GPU_PG_MASK_FILE, f"{gpu_device}/devfreq/gpu-nvd-0")
        gpu_device = f"sys/devices/platform/bus@0/{device.gpu_devfreq_name}"
        return cls(gpu_device, f"{gpu_device}/devfreq/{device.gpu_devfreq_name}", policy, hwmon,
                   EMC_CLK_DIR, ("rate", "min_rate", "max_rate"), f"{gpu_device}/load",
                   "sys/devices/gpu.0/tpc_pg_mask")

    def policy_dir(self, core: int) -> str:
        return f"{CPU_DIR}/cpufreq/policy{self.policy_of_core[core]}"

    def emc_file(self, which: str) -> str:
        """``rate``, ``min`` or ``max`` in this layout's EMC clock directory."""
        return f"{self.emc_dir}/{self.emc_files[('rate', 'min', 'max').index(which)]}"


def write(root: Path, rel: str, text: str) -> None:
    path = root / rel
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(text, encoding="ascii")


def link(root: Path, rel_link: str, rel_target: str) -> None:
    """A relative symlink, so the tree can be moved or copied."""
    path = root / rel_link
    path.parent.mkdir(parents=True, exist_ok=True)
    if path.is_symlink() or path.exists():
        return
    path.symlink_to(os.path.relpath(root / rel_target, path.parent))


def hz(freq_hz: float) -> str:
    return f"{int(round(freq_hz))}\n"


GPU_GOVERNORS = "nvhost_podgov userspace performance simple_ondemand\n"


def write_devfreq(root: Path, rel: str, table_hz, min_hz: float, max_hz: float,
                  governors: str = GPU_GOVERNORS) -> None:
    """A devfreq directory's control files (frequencies in Hz; the first governor in force)."""
    write(root, f"{rel}/available_frequencies", " ".join(str(int(round(f))) for f in sorted(table_hz)) + "\n")
    write(root, f"{rel}/available_governors", governors)
    write(root, f"{rel}/governor", governors.split()[0] + "\n")
    write(root, f"{rel}/min_freq", hz(min_hz))
    write(root, f"{rel}/max_freq", hz(max_hz))
