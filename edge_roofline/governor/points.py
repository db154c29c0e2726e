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
from edge_roofline.roofline.devices import DeviceSpec, Preset, UnknownDeviceError, get_device

from .config import PointGridConfig


@dataclass(frozen=True)
class EffectiveClocks:
    """The clocks a point lands on once caps are snapped to the device's tables."""

    cpu_freq_hz: float
    gpu_freq_hz: float
    emc_freq_hz: float
    cpu_online_cores: int
    tpc_pg_mask: int


def _spread(table: list[float], steps: int) -> list[float]:
    """``steps`` entries spread evenly over ``table`` (sorted), always including its top."""
    if steps >= len(table):
        return list(table)
    if steps == 1:
        return [table[-1]]
    idx = sorted({round(i * (len(table) - 1) / (steps - 1)) for i in range(steps)})
    return [table[i] for i in idx]


def preset_envelope(device: DeviceSpec, preset: Preset) -> tuple[float, float, float]:
    """(cpu, gpu, emc) maximum clocks of a preset, ``None`` caps resolved to the table top."""
    return (device.snap_cpu_freq(preset.cpu_max_freq_hz or device.cpu_max_freq_hz),
            device.snap_gpu_freq(preset.gpu_max_freq_hz or device.gpu_max_freq_hz),
            device.snap_emc_freq(preset.emc_max_freq_hz or device.emc_max_freq_hz))


def grid_points(device: DeviceSpec, preset: Preset, config: PointGridConfig) -> list[OperatingPoint]:
    """Custom points inside ``preset``'s envelope (caps never above the preset's own)."""
    cpu_top, gpu_top, emc_top = preset_envelope(device, preset)
    # The lowest table entries are far below any useful inference speed (115 MHz CPU, 204 MHz
    # EMC); starting the spread at a quarter of the top keeps the grid where choices matter.
    cpus = _spread([f for f in sorted(device.cpu_freqs_hz) if cpu_top / 4 <= f <= cpu_top], config.cpu_steps)
    gpus = _spread([f for f in sorted(device.gpu_freqs_hz) if gpu_top / 4 <= f <= gpu_top], config.gpu_steps)
    emcs = _spread([f for f in sorted(device.emc_freqs_hz) if emc_top / 8 <= f <= emc_top], config.emc_steps)
    cores = config.core_options or (preset.cpu_online_cores, max(1, preset.cpu_online_cores // 2))
    cores = sorted({c for c in cores if 1 <= c <= preset.cpu_online_cores}, reverse=True)
    points = []
    for n in cores:
        for c in cpus:
            for g in gpus:
                for e in emcs:
                    points.append(OperatingPoint(
                        name=f"{preset.name}/c{n}-cpu{c / 1e6:.0f}-gpu{g / 1e6:.0f}-emc{e / 1e6:.0f}",
                        nvpmodel_id=preset.mode_id, cpu_online_cores=n, cpu_max_freq_hz=c,
                        gpu_max_freq_hz=g, emc_max_freq_hz=e))
    return points


def catalogue_device(platform: Platform) -> DeviceSpec | None:
    key = platform.identity().catalogue_key
    if not key:
        return None
    try:
        return get_device(key)
    except UnknownDeviceError:
        return None


def _plain_preset(point: OperatingPoint) -> bool:
    return (point.cpu_online_cores, point.cpu_max_freq_hz, point.gpu_max_freq_hz,
            point.emc_max_freq_hz) == (None, None, None, None)


def candidate_points(platform: Platform, config: PointGridConfig) -> list[OperatingPoint]:
    """Presets reachable now plus the grid inside the current preset; for devices outside the
    catalogue, the platform's own list.

    A preset with another TPC power-gating mask than the current one needs a reboot on a Jetson
    (``RebootRequiredError``), so it is left out even where a platform lists it. Of the
    platform's list only the plain presets are taken (no custom caps): a platform's own caps grid
    (JetsonPlatform, VirtualPlatform) would double the candidates with a second, coarser grid.
    """
    reachable = list(platform.operating_points())
    device = catalogue_device(platform)
    current = platform.current_operating_point()
    if device is None or current.nvpmodel_id is None:
        return reachable
    preset = device.preset(current.nvpmodel_id)
    presets = []
    if config.include_presets:
        presets = [p for p in reachable if p.nvpmodel_id is not None and _plain_preset(p)
                   and device.preset(p.nvpmodel_id).tpc_pg_mask == preset.tpc_pg_mask]
    seen = {p.name for p in presets}
    return presets + [p for p in grid_points(device, preset, config) if p.name not in seen]


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
