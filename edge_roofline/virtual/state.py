"""Everything a Jetson's sysfs tree shows, as one plain mutable dataclass.

The virtual board's physics owns a ``BoardState`` and moves it forward; ``sysfs_tree`` renders
it into the real file layout (and reads back the caps a client wrote); ``tegrastats_emu``
formats it as a tegrastats line. Units are in the names: frequencies in Hz (the tree converts
cpufreq's kHz), rails in volts and amps, temperatures in degrees C, loads as fractions 0..1.
"""

from __future__ import annotations

from dataclasses import dataclass, field

from edge_roofline.roofline.devices import DeviceSpec

# Idle readings of a fresh board, so a rendered tree looks plausible before any physics runs.
_IDLE_RAIL_VOLTS = 5.0
_IDLE_RAIL_AMPS = 0.1
_IDLE_TEMPERATURE_C = 40.0
# Zone types on Orin (jetson-facts.md); older boards show a subset, which is harmless here.
DEFAULT_THERMAL_ZONES = ("cpu-thermal", "gpu-thermal", "cv0-thermal", "cv1-thermal",
                         "cv2-thermal", "soc0-thermal", "soc1-thermal", "soc2-thermal",
                         "tj-thermal")


@dataclass
class BoardState:
    """One instant of a board. Per-core lists are indexed by core id (``len == cpu_cores``)."""

    nvpmodel_mode_id: int
    cpu_online: list[bool]
    cpu_cur_freq_hz: list[float]
    cpu_min_freq_hz: list[float]
    cpu_max_freq_hz: list[float]
    cpu_busy: list[float]  # busy fraction 0..1 over the last interval, per core
    gpu_cur_freq_hz: float
    gpu_min_freq_hz: float
    gpu_max_freq_hz: float
    gpu_load: float  # 0..1 (the sysfs file shows per-mille)
    tpc_pg_mask: int
    emc_rate_hz: float
    emc_min_hz: float
    emc_max_hz: float
    emc_util: float  # 0..1 (actmon mc_all)
    rails: dict[str, tuple[float, float]]  # INA3221 label -> (volts, amps); NC channels absent
    temperatures_c: dict[str, float]  # thermal zone type -> C; -256 marks a gated sensor
    # Cumulative CPU time per core, so /proc/stat counters grow like a kernel's; ``tick``
    # advances them from ``cpu_busy``.
    uptime_s: float = 0.0
    cpu_busy_time_s: list[float] = field(default_factory=list)
    cpu_idle_time_s: list[float] = field(default_factory=list)
    ram_used_mb: int = 2048

    def __post_init__(self) -> None:
        cores = len(self.cpu_online)
        for name in ("cpu_cur_freq_hz", "cpu_min_freq_hz", "cpu_max_freq_hz", "cpu_busy"):
            if len(getattr(self, name)) != cores:
                raise ValueError(f"BoardState.{name} has {len(getattr(self, name))} entries, "
                                 f"expected one per core ({cores})")
        if not self.cpu_busy_time_s:
            self.cpu_busy_time_s = [0.0] * cores
        if not self.cpu_idle_time_s:
            self.cpu_idle_time_s = [0.0] * cores

    @classmethod
    def initial(cls, device: DeviceSpec, mode_id: int | None = None) -> "BoardState":
        """An idle board sitting in an nvpmodel preset (the device's default mode if None)."""
        preset = device.preset(device.default_mode_id if mode_id is None else mode_id)
        cores = device.cpu_cores
        cpu_max_hz = preset.cpu_max_freq_hz or device.cpu_max_freq_hz
        cpu_min_hz = min(device.cpu_freqs_hz)
        return cls(
            nvpmodel_mode_id=preset.mode_id,
            cpu_online=[core < preset.cpu_online_cores for core in range(cores)],
            cpu_cur_freq_hz=[cpu_min_hz] * cores,
            cpu_min_freq_hz=[cpu_min_hz] * cores,
            cpu_max_freq_hz=[cpu_max_hz] * cores,
            cpu_busy=[0.0] * cores,
            gpu_cur_freq_hz=min(device.gpu_freqs_hz),
            gpu_min_freq_hz=min(device.gpu_freqs_hz),
            gpu_max_freq_hz=preset.gpu_max_freq_hz or device.gpu_max_freq_hz,
            gpu_load=0.0,
            tpc_pg_mask=preset.tpc_pg_mask,
            emc_rate_hz=min(device.emc_freqs_hz),
            emc_min_hz=min(device.emc_freqs_hz),
            emc_max_hz=preset.emc_max_freq_hz or device.emc_max_freq_hz,
            emc_util=0.0,
            rails={r.label: (_IDLE_RAIL_VOLTS, _IDLE_RAIL_AMPS)
                   for r in device.power_monitors if r.label != "NC"},
            temperatures_c={t: _IDLE_TEMPERATURE_C for t in DEFAULT_THERMAL_ZONES},
        )

    def tick(self, dt_s: float) -> None:
        """Advance uptime and the per-core busy/idle counters by ``dt_s`` at ``cpu_busy``."""
        if dt_s < 0:
            raise ValueError(f"cannot tick a board backwards ({dt_s} s)")
        self.uptime_s += dt_s
        for core, busy in enumerate(self.cpu_busy):
            if not self.cpu_online[core]:
                continue
            busy = min(max(busy, 0.0), 1.0)
            self.cpu_busy_time_s[core] += busy * dt_s
            self.cpu_idle_time_s[core] += (1.0 - busy) * dt_s
