"""The caps grid inside an nvpmodel preset: the custom operating points a Jetson reaches without
a reboot by capping CPU/GPU/EMC clocks and taking cores offline. One grid serves the platforms
(``operating_points()``), the governor's candidates and the sweep, so a point measured by a
sweep has the same name as the point the governor chooses."""

from __future__ import annotations

from edge_roofline.platforms.base import OperatingPoint
from edge_roofline.roofline.devices import DeviceSpec, Preset


def spread(table: list[float], steps: int) -> list[float]:
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


def caps_point_name(preset: Preset, cores: int, cpu_hz: float, gpu_hz: float, emc_hz: float) -> str:
    """The one name of a capped point: a grid point, and the same caps read back from the board
    by another process, are called alike (the governor's choice and the monitor's reading)."""
    return f"{preset.name}/c{cores}-cpu{cpu_hz / 1e6:.0f}-gpu{gpu_hz / 1e6:.0f}-emc{emc_hz / 1e6:.0f}"


def caps_grid(device: DeviceSpec, preset: Preset, cpu_steps: int = 4, gpu_steps: int = 4, emc_steps: int = 3,
              core_options: tuple[int, ...] = ()) -> list[OperatingPoint]:
    """Cores x CPU x GPU x EMC caps inside ``preset``'s envelope, never above its own caps; the
    default is the study's grid (96 points on AGX Orin in MAXN). ``core_options`` empty: the
    preset's online cores and half of them."""
    cpu_top, gpu_top, emc_top = preset_envelope(device, preset)
    # The lowest table entries are far below any useful inference speed (115 MHz CPU, 204 MHz
    # EMC); starting the spread at a quarter of the top keeps the grid where choices matter.
    cpus = spread([f for f in sorted(device.cpu_freqs_hz) if cpu_top / 4 <= f <= cpu_top], cpu_steps)
    gpus = spread([f for f in sorted(device.gpu_freqs_hz) if gpu_top / 4 <= f <= gpu_top], gpu_steps)
    emcs = spread([f for f in sorted(device.emc_freqs_hz) if emc_top / 8 <= f <= emc_top], emc_steps)
    cores = core_options or (preset.cpu_online_cores, max(1, preset.cpu_online_cores // 2))
    cores = sorted({c for c in cores if 1 <= c <= preset.cpu_online_cores}, reverse=True)
    return [OperatingPoint(name=caps_point_name(preset, n, c, g, e), nvpmodel_id=preset.mode_id, cpu_online_cores=n,
                           cpu_max_freq_hz=c, gpu_max_freq_hz=g, emc_max_freq_hz=e)
            for n in cores for c in cpus for g in gpus for e in emcs]
