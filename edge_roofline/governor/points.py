"""The candidate operating points the governor chooses from, and the clocks each one implies.

Candidates are the nvpmodel presets reachable without a reboot (same TPC power-gating mask as the
current preset; ``Platform.operating_points()`` says which) plus custom points: CPU/GPU/EMC caps
and core counts inside the current preset's envelope, which a Jetson reaches by writing
cpufreq/devfreq caps, as nvpmodel and jetson_clocks do. On a platform outside the catalogue
(an NVIDIA discrete GPU through NVML: application clocks, power limits) the candidates are
whatever the platform enumerates.
"""

from __future__ import annotations

from dataclasses import dataclass

from edge_roofline.platforms.base import OperatingPoint, Platform
from edge_roofline.platforms.grid import caps_grid, preset_envelope
from edge_roofline.roofline.ceilings import Ceilings, spec_ceilings
from edge_roofline.roofline.devices import DeviceSpec

from .config import PointGridConfig


@dataclass(frozen=True)
class EffectiveClocks:
    """The clocks a point lands on once caps are snapped to the device's tables."""

    cpu_freq_hz: float
    gpu_freq_hz: float
    emc_freq_hz: float
    cpu_online_cores: int
    tpc_pg_mask: int


def catalogue_device(platform: Platform) -> DeviceSpec | None:
    """The device as the platform has it: on a Jetson the catalogue entry with the board's own
    nvpmodel modes and clock tables (JetPack 7.2's Thor modes, a Super conf), so the candidates
    are built from the caps the board really has."""
    return platform.device_spec()


def candidate_points(platform: Platform, config: PointGridConfig) -> list[OperatingPoint]:
    """Presets reachable now plus the grid inside the current preset; for devices outside the
    catalogue, the platform's own list.

    A preset with another TPC power-gating mask than the current one needs a reboot on a Jetson
    (``RebootRequiredError``), so it is left out even where a platform lists it. Of the
    platform's list only the plain presets are taken: the caps grid is built here, with the
    configured steps (the platforms list the default grid).
    """
    reachable = list(platform.operating_points())
    device = catalogue_device(platform)
    current = platform.current_operating_point()
    if device is None or current.nvpmodel_id is None:
        return reachable
    preset = device.preset(current.nvpmodel_id)
    presets = []
    if config.include_presets:
        presets = [p for p in reachable if p.nvpmodel_id is not None and not p.has_caps
                   and device.preset(p.nvpmodel_id).tpc_pg_mask == preset.tpc_pg_mask]
    seen = {p.name for p in presets}
    grid = caps_grid(device, preset, config.cpu_steps, config.gpu_steps, config.emc_steps, config.core_options)
    return presets + [p for p in grid if p.name not in seen]


def effective_clocks(device: DeviceSpec, point: OperatingPoint) -> EffectiveClocks:
    """Clocks a point runs at: its caps, else its preset's, snapped to the device tables.

    Frequencies are caps; under inference load Jetson devfreq/cpufreq governors sit at the cap,
    which is what the predictor assumes.
    """
    preset = device.preset(point.nvpmodel_id if point.nvpmodel_id is not None else device.default_mode_id)
    cpu_top, gpu_top, emc_top = preset_envelope(device, preset)
    cpu = min(cpu_top, point.cpu_max_freq_hz or cpu_top)
    gpu = min(gpu_top, point.gpu_max_freq_hz or gpu_top)
    emc = min(emc_top, point.emc_max_freq_hz or emc_top)
    return EffectiveClocks(
        cpu_freq_hz=device.snap_cpu_freq(cpu), gpu_freq_hz=device.snap_gpu_freq(gpu),
        emc_freq_hz=device.snap_emc_freq(emc),
        cpu_online_cores=min(point.cpu_online_cores or preset.cpu_online_cores, preset.cpu_online_cores),
        tpc_pg_mask=preset.tpc_pg_mask)


def clocks_ceilings(device: DeviceSpec, precision: str, clocks: EffectiveClocks, *, engine: str = "gpu",
                    label: str | None = None) -> Ceilings:
    """Spec ceilings of ``engine`` at the clocks a point lands on."""
    return spec_ceilings(device, precision, engine=engine, gpu_freq_hz=clocks.gpu_freq_hz,
                         emc_freq_hz=clocks.emc_freq_hz, tpc_pg_mask=clocks.tpc_pg_mask,
                         cpu_freq_hz=clocks.cpu_freq_hz, cpu_cores=clocks.cpu_online_cores, label=label)
