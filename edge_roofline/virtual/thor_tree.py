"""The parts of a virtual Jetson AGX Thor's tree that Orin does not have (JetPack 7 layout, as
docs/jetson-facts.md describes it). SIMULATION.

- The GPU is PCI device ``0000:01:00.0`` (``/sys/bus/pci/devices/0000:01:00.0``), with runtime
  power management in ``power/control`` (``auto``: it may rail-gate when idle) and
  ``power/runtime_status`` (``suspended`` while gated), and two devfreq domains:
  ``gpu-gpc-0`` (graphics clock, Hz, governor ``nvhost_podgov``, with a per-mille ``load``) and
  ``gpu-nvd-0`` (the codec clock). No ``tpc_pg_mask``, ``railgate_enable`` or device-tree node.
- The EMC is the devfreq ``bwmgr`` (``/sys/class/devfreq/bwmgr``, Hz); nvpmodel's cap stays in
  ``/sys/kernel/nvpmodel_emc_cap/emc_iso_cap``.
- The INA238 total (``2-0044``) is rendered with the INA3221s by sysfs_tree (``name`` ina238).

Not emulated: EAGAIN from ``gpu-thermal`` while the GPU is gated (a regular file cannot fail a
read; the reader's handling of it is tested with an injected error), and the codec clock moving
(it stays at its lowest entry).
"""

from __future__ import annotations

from pathlib import Path

from edge_roofline.roofline.devices import DeviceSpec
from edge_roofline.virtual.state import BoardState
from edge_roofline.virtual.tree_paths import EMC_ISO_CAP, TreePaths, hz, link, write, write_devfreq

_CODEC_MHZ = (115.2, 307.2, 499.2, 691.2, 883.2, 1075.2)  # gpu-nvd-0 table: UNVERIFIED
_PCI_NVIDIA = "0x10de\n"


def render(root: Path, device: DeviceSpec, state: BoardState, paths: TreePaths) -> None:
    """GPU (PCI device, gpu-gpc-0, gpu-nvd-0, power-gating mask) and EMC (bwmgr)."""
    write_devfreq(root, paths.gpu_devfreq, device.gpu_freqs_hz, state.gpu_min_freq_hz, state.gpu_max_freq_hz)
    codec = [f * 1e6 for f in _CODEC_MHZ]
    write_devfreq(root, paths.codec_devfreq, codec, min(codec), max(codec))
    write(root, f"{paths.codec_devfreq}/cur_freq", hz(min(codec)))
    for domain in (paths.gpu_devfreq, paths.codec_devfreq):
        link(root, f"{domain}/device", paths.gpu_device)
        link(root, f"sys/class/devfreq/{Path(domain).name}", domain)
    write(root, f"{paths.gpu_device}/vendor", _PCI_NVIDIA)
    write(root, f"{paths.gpu_device}/power/control", "auto\n")
    link(root, f"sys/bus/pci/devices/{device.gpu_pci_device}", paths.gpu_device)
    write(root, paths.pg_mask_file, f"{state.tpc_pg_mask}\n")
    write_devfreq(root, paths.emc_dir, device.emc_freqs_hz, state.emc_min_hz, device.emc_max_freq_hz,
                  "nvhost_podgov performance\n")
    link(root, f"sys/class/devfreq/{device.emc_devfreq_name}", paths.emc_dir)
    capped = state.emc_max_hz < device.emc_max_freq_hz
    write(root, EMC_ISO_CAP, hz(state.emc_max_hz) if capped else "0\n")


def gpu_gated(state: BoardState) -> bool:
    """Idle at the floor clock: the board's runtime PM has rail-gated the GPU (as the physics
    draws no GPU power then)."""
    return state.gpu_load <= 0.0 and state.gpu_cur_freq_hz <= state.gpu_min_freq_hz


def measurements(device: DeviceSpec, state: BoardState, paths: TreePaths) -> list[tuple[str, str]]:
    """(file, text) of the Thor-only measurement files, for ``update_tree`` to write."""
    return [(f"{paths.gpu_device}/power/runtime_status", "suspended\n" if gpu_gated(state) else "active\n")]
