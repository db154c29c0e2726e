"""Catalogue of Jetson devices: spec-sheet peaks, frequency tables, nvpmodel presets and
power-rail layout, and how the peaks scale with an operating point.

Sources: NVIDIA module data sheets and the facts collected in ``docs/jetson-facts.md`` (with
their sources). Per-SM throughputs are per clock and *dense* (no structured sparsity):

- FP32 on CUDA cores: 2 FLOPs (one FMA) per core per clock.
- Ampere (Orin) Tensor Cores: 2048 FP16 FLOPs and 4096 INT8 ops per SM per clock, which gives
  the data-sheet 85 dense / 170 sparse INT8 TOPS of AGX Orin 64GB at 1.3005 GHz x 16 SMs.
- Volta (Xavier): 1024 FP16 / 2048 INT8 per SM per clock (11 FP16 TFLOP/s on AGX Xavier).
- Maxwell (Nano): no Tensor Cores; FP16 at twice the FP32 rate, INT8 at the FP32 rate.
- Blackwell (Thor): NVIDIA publishes 2070 FP4 TFLOPS (sparse) and 1035 FP8 TFLOPS for T5000 (20
  SMs at 1.575 GHz); dense is half of sparse. The FP8 figure is read as sparse too (FP4 is twice
  FP8 on Blackwell Tensor Cores; a secondary source quotes 517 dense). FP16 = FP8 / 2 and
  INT8 = FP8 are the architecture's ratios and FP32 = 2560 cores x 2 x clock is arithmetic, not
  published Thor figures: all UNVERIFIED (``DeviceSpec.unverified`` lists them).

A fact the catalogue holds but no source confirmed is named in ``DeviceSpec.unverified``; the
Jetson backend prefers what the board shows at run time (nvpmodel.conf, devfreq and cpufreq
tables) over such a fact, and says which it used.

DRAM bandwidth = EMC frequency x bytes per EMC clock (bus width / 8 x 2 for DDR), so AGX Orin's
256-bit LPDDR5 at 3199 MHz gives 204.8 GB/s.
"""

from __future__ import annotations

from dataclasses import dataclass, field

PRECISIONS = ("fp32", "fp16", "int8", "fp8", "fp4")
NO_CAP = -1  # nvpmodel's "-1": no cap, i.e. the table maximum


class UnknownModeError(KeyError):
    """Raised for an nvpmodel mode (id or name) a device does not have."""


class UnknownDeviceError(KeyError):
    """Raised for a device name that is not in the catalogue."""

    def __str__(self) -> str:
        return (f"unknown device {self.args[0]!r}; known devices: "
                f"{', '.join(sorted(CATALOGUE))}")


@dataclass(frozen=True)
class Preset:
    """One nvpmodel power mode (``< POWER_MODEL ID=n NAME=s >``). Caps use nvpmodel's units
    converted to Hz; ``None`` means no cap (nvpmodel's -1)."""

    mode_id: int
    name: str
    cpu_online_cores: int
    tpc_pg_mask: int
    cpu_max_freq_hz: float | None
    gpu_max_freq_hz: float | None
    emc_max_freq_hz: float | None


@dataclass(frozen=True)
class PowerRailSpec:
    """An INA3221 channel: i2c address folder (e.g. ``1-0040``), channel 1..3, label."""

    i2c_device: str
    channel: int
    label: str


@dataclass(frozen=True)
class DeviceSpec:
    key: str
    name: str
    gpu_arch: str
    gpu_sm_count: int
    gpu_tpc_count: int  # TPCs addressed by TPC_PG_MASK (2 SMs each)
    gpu_flops_per_sm_per_clock: dict[str, float]  # by precision, dense
    gpu_freqs_hz: tuple[float, ...]
    gpu_l2_bytes: int
    emc_freqs_hz: tuple[float, ...]
    dram_bytes_per_emc_clock: float
    cpu_cores: int
    cpu_clusters: tuple[tuple[int, ...], ...]  # core ids per cluster (cpufreq policy)
    cpu_core_name: str
    cpu_flops_per_core_per_clock: dict[str, float]
    cpu_freqs_hz: tuple[float, ...]
    dla_cores: int
    dla_int8_ops_dense: float  # all DLA engines together, at max clock
    presets: tuple[Preset, ...]
    default_mode_id: int
    rails: tuple[PowerRailSpec, ...]
    total_power_rails: tuple[str, ...]  # rails whose sum is the module input power
    nvpmodel_conf_name: str
    gpu_devfreq_name: str = "17000000.gpu"  # JetPack 6 name; JetPack 5 uses 17000000.ga10b
    gpu_of_node_name: str = "gpu"
    ram_mb: int = 0
    notes: str = ""
    extra: dict = field(default_factory=dict)
    gpu_gpc_count: int = 0  # GPCs tegrastats prints a clock for; 0: one per 4 TPCs (Orin)
    # Thor's layout (JetPack 7): the GPU is a PCI device with devfreq domains gpu-gpc-0 (and
    # gpu-nvd-0), the EMC is the devfreq "bwmgr", and an INA238 measures the total input.
    gpu_pci_device: str | None = None  # e.g. 0000:01:00.0 (railgate: its power/control)
    emc_devfreq_name: str | None = None  # None: the EMC clock is in BPMP debugfs
    input_power_monitor: PowerRailSpec | None = None  # INA238: power1_input (uW), in1 (mV), curr1 (mA)
    l4t_release: str = "R36 (release), REVISION: 4.3"  # first line of /etc/nv_tegra_release
    # Catalogue facts no source confirmed (see the module docstring): field names, with a
    # bracketed detail where only part of a field is unverified ("presets[1]").
    unverified: tuple[str, ...] = ()

    # ---- derived facts -------------------------------------------------------------
    @property
    def gpu_max_freq_hz(self) -> float:
        return max(self.gpu_freqs_hz)

    @property
    def emc_max_freq_hz(self) -> float:
        return max(self.emc_freqs_hz)

    @property
    def cpu_max_freq_hz(self) -> float:
        return max(self.cpu_freqs_hz)

    @property
    def precisions(self) -> tuple[str, ...]:
        """The GPU's precisions, in PRECISIONS order (fp8/fp4 only where its Tensor Cores have them)."""
        return tuple(p for p in PRECISIONS if p in self.gpu_flops_per_sm_per_clock)

    @property
    def gpcs(self) -> int:
        return self.gpu_gpc_count or max(1, self.gpu_tpc_count // 4)

    @property
    def power_monitors(self) -> tuple[PowerRailSpec, ...]:
        """Every power channel in tegrastats' order: the INA3221 rails, then the input monitor."""
        return self.rails + ((self.input_power_monitor,) if self.input_power_monitor else ())

    def is_unverified(self, fact: str) -> bool:
        """True where the catalogue's ``fact`` (a field name, e.g. ``presets``) or a part of it
        (``presets[1]``) is marked UNVERIFIED."""
        return any(u == fact or u.startswith(fact + "[") for u in self.unverified)

    def preset(self, mode: int | str) -> Preset:
        for p in self.presets:
            if p.mode_id == mode or p.name == mode:
                return p
        raise UnknownModeError(f"{self.name} has no nvpmodel mode {mode!r}; modes: "
                       + ", ".join(f"{p.mode_id} {p.name}" for p in self.presets))

    def active_tpcs(self, tpc_pg_mask: int) -> int:
        return self.gpu_tpc_count - bin(tpc_pg_mask & ((1 << self.gpu_tpc_count) - 1)).count("1")

    def gpu_peak_flops(self, precision: str, gpu_freq_hz: float, tpc_pg_mask: int = 0) -> float:
        """Dense peak FLOP/s (ops/s for int8) of the GPU at a clock and TPC gating mask."""
        if precision not in self.gpu_flops_per_sm_per_clock:
            raise ValueError(f"{self.name} has no {precision!r} GPU precision; it has "
                             f"{', '.join(self.precisions)}")
        sms = self.gpu_sm_count * self.active_tpcs(tpc_pg_mask) / self.gpu_tpc_count
        return self.gpu_flops_per_sm_per_clock[precision] * sms * gpu_freq_hz

    def dram_bandwidth_bps(self, emc_freq_hz: float) -> float:
        """Peak DRAM bandwidth in bytes/s at an EMC clock."""
        return self.dram_bytes_per_emc_clock * emc_freq_hz

    def cpu_peak_flops(self, precision: str, cpu_freq_hz: float, online_cores: int) -> float:
        if precision not in self.cpu_flops_per_core_per_clock:
            raise ValueError(f"the {self.cpu_core_name} CPU of {self.name} has no {precision!r} arithmetic; "
                             f"it has {', '.join(self.cpu_flops_per_core_per_clock)}")
        return self.cpu_flops_per_core_per_clock[precision] * cpu_freq_hz * online_cores

    def snap_gpu_freq(self, freq_hz: float) -> float:
        """The table entry a cap request lands on (the largest entry <= the request)."""
        return _snap_down(self.gpu_freqs_hz, freq_hz)

    def snap_cpu_freq(self, freq_hz: float) -> float:
        return _snap_down(self.cpu_freqs_hz, freq_hz)

    def snap_emc_freq(self, freq_hz: float) -> float:
        """EMC requests round *up* to a table entry (jetson-facts.md)."""
        for f in sorted(self.emc_freqs_hz):
            if f >= freq_hz:
                return f
        return self.emc_max_freq_hz


def _snap_down(table: tuple[float, ...], freq_hz: float) -> float:
    below = [f for f in table if f <= freq_hz]
    return max(below) if below else min(table)


def _mhz(*values: float) -> tuple[float, ...]:
    return tuple(v * 1e6 for v in values)


def _khz_table(first_khz: int, step_khz: int, last_khz: int, top_khz: int | None = None) -> tuple[float, ...]:
    table = list(range(first_khz, last_khz + 1, step_khz))
    if top_khz and top_khz not in table:
        table.append(top_khz)
    return tuple(k * 1e3 for k in table)


def _preset(mode_id: int, name: str, cores: int, mask: int, cpu_khz: int, gpu_hz: int, emc_hz: int) -> Preset:
    def cap(v: int, scale: float) -> float | None:
        return None if v == NO_CAP else v * scale
    return Preset(mode_id, name, cores, mask, cap(cpu_khz, 1e3), cap(gpu_hz, 1.0), cap(emc_hz, 1.0))


_AMPERE = {"fp32": 256.0, "fp16": 2048.0, "int8": 4096.0}
_VOLTA = {"fp32": 128.0, "fp16": 1024.0, "int8": 2048.0}
_MAXWELL = {"fp32": 256.0, "fp16": 512.0, "int8": 256.0}
# NEON: two 128-bit FMA pipes on A78AE and Carmel (4 fp32 lanes x 2 FLOPs x 2 pipes), one on A57;
# fp16 doubles the lanes; int8 uses SDOT (4x the fp32 lanes).
_A78 = {"fp32": 16.0, "fp16": 32.0, "int8": 64.0}
_CARMEL = {"fp32": 16.0, "fp16": 32.0, "int8": 32.0}
_A57 = {"fp32": 8.0, "fp16": 8.0, "int8": 16.0}
# Thor T5000's published aggregates per SM clock (20 SMs x 1.575 GHz); see the module docstring.
_THOR_SM_CLOCKS_PER_S = 20 * 1.575e9
_BLACKWELL = {"fp32": 256.0, "fp16": 1035e12 / 4 / _THOR_SM_CLOCKS_PER_S,
              "int8": 1035e12 / 2 / _THOR_SM_CLOCKS_PER_S, "fp8": 1035e12 / 2 / _THOR_SM_CLOCKS_PER_S,
              "fp4": 2070e12 / 2 / _THOR_SM_CLOCKS_PER_S}
# Neoverse-V3AE: four 128-bit SIMD pipes (twice A78's two), UNVERIFIED for the AE part.
_V3AE = {"fp32": 32.0, "fp16": 64.0, "int8": 128.0}

_ORIN_GPU_MHZ = (306, 408, 510, 612, 714, 816, 918, 1020, 1122, 1224, 1300.5)
_ORIN_EMC_MHZ = (204, 665.6, 2133, 3199)
_ORIN_CPU_KHZ = _khz_table(115200, 76800, 2188800, 2201600)

_AGX_ORIN_RAILS = (
    PowerRailSpec("1-0040", 1, "VDD_GPU_SOC"),
    PowerRailSpec("1-0040", 2, "VDD_CPU_CV"),
    PowerRailSpec("1-0040", 3, "VIN_SYS_5V0"),
    PowerRailSpec("1-0041", 1, "NC"),
    PowerRailSpec("1-0041", 2, "VDDQ_VDD2_1V8AO"),
    PowerRailSpec("1-0041", 3, "NC"),
)
# VIN_SYS_5V0 already contains VDDQ_VDD2_1V8AO (DRAM): the module total is the other three.
_AGX_ORIN_TOTAL = ("VDD_GPU_SOC", "VDD_CPU_CV", "VIN_SYS_5V0")
_THOR_RAILS = (
    PowerRailSpec("2-0040", 1, "VDD_GPU"),
    PowerRailSpec("2-0040", 2, "VDD_CPU_SOC_MSS"),
    PowerRailSpec("2-0040", 3, "VIN_SYS_5V0"),
)
# The carrier's INA238 measures the whole input (module and carrier): tegrastats and jtop call it VIN.
_THOR_INPUT = PowerRailSpec("2-0044", 1, "VIN")
# Thor tables: no public list; read from the board's devfreq/cpufreq files at run time.
_THOR_GPU_MHZ = (314, 419, 524, 629, 734, 838, 943, 1048, 1153, 1258, 1363, 1468, 1575)
_THOR_EMC_MHZ = (2133, 2750, 3200, 4266)
_THOR_UNVERIFIED = ("gpu_flops_per_sm_per_clock[fp32,fp16,int8,fp8]", "gpu_freqs_hz", "emc_freqs_hz",
                    "cpu_freqs_hz", "cpu_clusters", "cpu_flops_per_core_per_clock", "presets[1]")
_ORIN_NX_RAILS = (
    PowerRailSpec("1-0040", 1, "VDD_IN"),
    PowerRailSpec("1-0040", 2, "VDD_CPU_GPU_CV"),
    PowerRailSpec("1-0040", 3, "VDD_SOC"),
)


def _clusters(cores: int, per_cluster: int) -> tuple[tuple[int, ...], ...]:
    return tuple(tuple(range(c, min(c + per_cluster, cores))) for c in range(0, cores, per_cluster))


CATALOGUE: dict[str, DeviceSpec] = {}


def _add(spec: DeviceSpec) -> None:
    CATALOGUE[spec.key] = spec


_add(DeviceSpec(
    key="agx_orin_64gb", name="Jetson AGX Orin 64GB", gpu_arch="ampere",
    gpu_sm_count=16, gpu_tpc_count=8, gpu_flops_per_sm_per_clock=_AMPERE,
    gpu_freqs_hz=_mhz(*_ORIN_GPU_MHZ), gpu_l2_bytes=4 * 2**20,
    emc_freqs_hz=_mhz(*_ORIN_EMC_MHZ), dram_bytes_per_emc_clock=64.0,
    cpu_cores=12, cpu_clusters=_clusters(12, 4), cpu_core_name="Cortex-A78AE",
    cpu_flops_per_core_per_clock=_A78, cpu_freqs_hz=_ORIN_CPU_KHZ,
    dla_cores=2, dla_int8_ops_dense=52.5e12,
    presets=(
        _preset(0, "MAXN", 12, 0, NO_CAP, NO_CAP, NO_CAP),
        _preset(1, "MODE_15W", 4, 248, 1113600, 408000000, 2133000000),
        _preset(2, "MODE_30W", 8, 240, 1728000, 612000000, NO_CAP),
        _preset(3, "MODE_50W", 12, 0, 1497600, 816000000, NO_CAP),
    ),
    default_mode_id=2, rails=_AGX_ORIN_RAILS, total_power_rails=_AGX_ORIN_TOTAL,
    nvpmodel_conf_name="nvpmodel_p3701_0000.conf", ram_mb=62841,
))
_add(DeviceSpec(
    key="agx_orin_32gb", name="Jetson AGX Orin 32GB", gpu_arch="ampere",
    gpu_sm_count=16, gpu_tpc_count=8, gpu_flops_per_sm_per_clock=_AMPERE,
    gpu_freqs_hz=_mhz(306, 408, 510, 612, 714, 816, 918, 939), gpu_l2_bytes=4 * 2**20,
    emc_freqs_hz=_mhz(*_ORIN_EMC_MHZ), dram_bytes_per_emc_clock=64.0,
    cpu_cores=8, cpu_clusters=_clusters(8, 4), cpu_core_name="Cortex-A78AE",
    cpu_flops_per_core_per_clock=_A78, cpu_freqs_hz=_ORIN_CPU_KHZ,
    dla_cores=2, dla_int8_ops_dense=49e12,
    presets=(
        # One TPC is fused off on the 32GB module (MAXN mask 128): 14 SMs, 1792 cores.
        _preset(0, "MAXN", 8, 128, NO_CAP, NO_CAP, NO_CAP),
        _preset(1, "MODE_15W", 4, 248, 1113600, 408000000, 2133000000),
        _preset(2, "MODE_30W", 8, 240, 1728000, 612000000, NO_CAP),
        _preset(3, "MODE_40W", 8, 128, 1497600, 816000000, NO_CAP),
    ),
    default_mode_id=2, rails=_AGX_ORIN_RAILS, total_power_rails=_AGX_ORIN_TOTAL,
    nvpmodel_conf_name="nvpmodel_p3701_0004.conf", ram_mb=30536,
))
_add(DeviceSpec(
    key="orin_nx_16gb", name="Jetson Orin NX 16GB", gpu_arch="ampere",
    gpu_sm_count=8, gpu_tpc_count=4, gpu_flops_per_sm_per_clock=_AMPERE,
    gpu_freqs_hz=_mhz(306, 408, 510, 612, 714, 816, 918), gpu_l2_bytes=2 * 2**20,
    emc_freqs_hz=_mhz(*_ORIN_EMC_MHZ), dram_bytes_per_emc_clock=32.0,
    cpu_cores=8, cpu_clusters=_clusters(8, 4), cpu_core_name="Cortex-A78AE",
    cpu_flops_per_core_per_clock=_A78, cpu_freqs_hz=_khz_table(115200, 76800, 1958400, 1984000),
    dla_cores=2, dla_int8_ops_dense=20e12,
    presets=(
        _preset(0, "MAXN", 8, 0, NO_CAP, NO_CAP, NO_CAP),
        _preset(1, "10W", 4, 0, 1190400, 612000000, 2133000000),
        _preset(2, "15W", 8, 0, 1651200, 612000000, NO_CAP),
        _preset(3, "25W", 8, 0, 1497600, 408000000, NO_CAP),
    ),
    default_mode_id=2, rails=_ORIN_NX_RAILS, total_power_rails=("VDD_IN",),
    nvpmodel_conf_name="nvpmodel_p3767_0000.conf", ram_mb=15656,
))
_add(DeviceSpec(
    key="orin_nx_8gb", name="Jetson Orin NX 8GB", gpu_arch="ampere",
    gpu_sm_count=8, gpu_tpc_count=4, gpu_flops_per_sm_per_clock=_AMPERE,
    gpu_freqs_hz=_mhz(306, 408, 510, 612, 714, 765), gpu_l2_bytes=2 * 2**20,
    emc_freqs_hz=_mhz(*_ORIN_EMC_MHZ), dram_bytes_per_emc_clock=32.0,
    cpu_cores=6, cpu_clusters=_clusters(6, 4), cpu_core_name="Cortex-A78AE",
    cpu_flops_per_core_per_clock=_A78, cpu_freqs_hz=_khz_table(115200, 76800, 1958400, 1984000),
    dla_cores=1, dla_int8_ops_dense=10e12,
    presets=(
        _preset(0, "MAXN", 6, 0, NO_CAP, NO_CAP, NO_CAP),
        _preset(1, "10W", 4, 0, 1190400, 612000000, 2133000000),
        _preset(2, "15W", 6, 0, 1651200, 612000000, NO_CAP),
        _preset(3, "20W", 6, 0, 1497600, 408000000, NO_CAP),
    ),
    default_mode_id=2, rails=_ORIN_NX_RAILS, total_power_rails=("VDD_IN",),
    nvpmodel_conf_name="nvpmodel_p3767_0001.conf", ram_mb=7620,
))
_add(DeviceSpec(
    key="orin_nano_8gb", name="Jetson Orin Nano 8GB (Super)", gpu_arch="ampere",
    gpu_sm_count=8, gpu_tpc_count=4, gpu_flops_per_sm_per_clock=_AMPERE,
    gpu_freqs_hz=_mhz(306, 408, 510, 612, 714, 816, 918, 1020), gpu_l2_bytes=2 * 2**20,
    emc_freqs_hz=_mhz(*_ORIN_EMC_MHZ), dram_bytes_per_emc_clock=32.0,
    cpu_cores=6, cpu_clusters=_clusters(6, 4), cpu_core_name="Cortex-A78AE",
    cpu_flops_per_core_per_clock=_A78, cpu_freqs_hz=_khz_table(115200, 76800, 1651200, 1728000),
    dla_cores=0, dla_int8_ops_dense=0.0,
    presets=(
        _preset(0, "15W", 6, 0, 1497600, 612000000, 2133000000),
        _preset(1, "25W", 6, 0, 1344000, 918000000, 3199000000),
        _preset(2, "MAXN_SUPER", 6, 0, NO_CAP, NO_CAP, NO_CAP),
    ),
    default_mode_id=1, rails=_ORIN_NX_RAILS, total_power_rails=("VDD_IN",),
    nvpmodel_conf_name="nvpmodel_p3767_0003_super.conf", ram_mb=7620,
))
_add(DeviceSpec(
    key="orin_nx_16gb_super", name="Jetson Orin NX 16GB (Super)", gpu_arch="ampere",
    gpu_sm_count=8, gpu_tpc_count=4, gpu_flops_per_sm_per_clock=_AMPERE,
    gpu_freqs_hz=_mhz(*_ORIN_GPU_MHZ[:7], 1020, 1122, 1173), gpu_l2_bytes=2 * 2**20,
    emc_freqs_hz=_mhz(*_ORIN_EMC_MHZ), dram_bytes_per_emc_clock=32.0,
    cpu_cores=8, cpu_clusters=_clusters(8, 4), cpu_core_name="Cortex-A78AE",
    cpu_flops_per_core_per_clock=_A78, cpu_freqs_hz=_khz_table(115200, 76800, 1958400, 1984000),
    dla_cores=2, dla_int8_ops_dense=20e12,
    presets=(  # JetPack 6.2 nvpmodel_p3767_0000_super.conf
        _preset(0, "MAXN_SUPER", 8, 0, NO_CAP, NO_CAP, NO_CAP),
        _preset(1, "10W", 4, 0, 1190400, 612000000, 2133000000),
        _preset(2, "15W", 4, 0, 1651200, 612000000, NO_CAP),
        _preset(3, "25W", 8, 0, 1497600, 408000000, NO_CAP),
        _preset(4, "40W", 8, 0, NO_CAP, 1173000000, NO_CAP),
    ),
    default_mode_id=4, rails=_ORIN_NX_RAILS, total_power_rails=("VDD_IN",),
    nvpmodel_conf_name="nvpmodel_p3767_0000_super.conf", ram_mb=15656,
    unverified=("gpu_freqs_hz[1020,1122]", "presets[CPU caps]"),
))
_add(DeviceSpec(
    key="orin_nx_8gb_super", name="Jetson Orin NX 8GB (Super)", gpu_arch="ampere",
    gpu_sm_count=8, gpu_tpc_count=4, gpu_flops_per_sm_per_clock=_AMPERE,
    gpu_freqs_hz=_mhz(*_ORIN_GPU_MHZ[:5], 765, 816, 918, 1020, 1122, 1173), gpu_l2_bytes=2 * 2**20,
    emc_freqs_hz=_mhz(*_ORIN_EMC_MHZ), dram_bytes_per_emc_clock=32.0,
    cpu_cores=6, cpu_clusters=_clusters(6, 4), cpu_core_name="Cortex-A78AE",
    cpu_flops_per_core_per_clock=_A78, cpu_freqs_hz=_khz_table(115200, 76800, 1958400, 1984000),
    dla_cores=1, dla_int8_ops_dense=10e12,
    presets=(  # JetPack 6.2 nvpmodel_p3767_0001_super.conf
        _preset(0, "MAXN_SUPER", 6, 0, NO_CAP, NO_CAP, NO_CAP),
        _preset(1, "10W", 4, 0, 1190400, 612000000, 2133000000),
        _preset(2, "15W", 4, 0, 1651200, 612000000, NO_CAP),
        _preset(3, "20W", 6, 0, 1497600, 408000000, NO_CAP),
        _preset(4, "40W", 6, 0, 1984000, 1173000000, NO_CAP),
    ),
    default_mode_id=4, rails=_ORIN_NX_RAILS, total_power_rails=("VDD_IN",),
    nvpmodel_conf_name="nvpmodel_p3767_0001_super.conf", ram_mb=7620,
    unverified=("gpu_freqs_hz[816-1122]", "presets[CPU caps of 10W-20W]"),
))
_add(DeviceSpec(
    key="orin_nano_4gb_super", name="Jetson Orin Nano 4GB (Super)", gpu_arch="ampere",
    gpu_sm_count=4, gpu_tpc_count=2, gpu_flops_per_sm_per_clock=_AMPERE,
    gpu_freqs_hz=_mhz(306, 408, 510, 612, 714, 816, 918, 1020), gpu_l2_bytes=2**20,
    emc_freqs_hz=_mhz(*_ORIN_EMC_MHZ), dram_bytes_per_emc_clock=16.0,
    cpu_cores=6, cpu_clusters=_clusters(6, 4), cpu_core_name="Cortex-A78AE",
    cpu_flops_per_core_per_clock=_A78, cpu_freqs_hz=_khz_table(115200, 76800, 1651200, 1728000),
    dla_cores=0, dla_int8_ops_dense=0.0,
    presets=(  # JetPack 6.2 nvpmodel_p3767_0004_super.conf
        _preset(0, "10W", 6, 0, NO_CAP, 612000000, NO_CAP),
        _preset(1, "25W", 6, 0, 1728000, 1020000000, NO_CAP),
        _preset(2, "MAXN_SUPER", 6, 0, NO_CAP, NO_CAP, NO_CAP),
    ),
    default_mode_id=1, rails=_ORIN_NX_RAILS, total_power_rails=("VDD_IN",),
    nvpmodel_conf_name="nvpmodel_p3767_0004_super.conf", ram_mb=3570,
    unverified=("emc_freqs_hz[3199]", "presets[10W CPU]"),
))
_add(DeviceSpec(
    key="orin_nano_4gb", name="Jetson Orin Nano 4GB", gpu_arch="ampere",
    gpu_sm_count=4, gpu_tpc_count=2, gpu_flops_per_sm_per_clock=_AMPERE,
    gpu_freqs_hz=_mhz(306, 408, 510, 625), gpu_l2_bytes=2**20,
    emc_freqs_hz=_mhz(204, 665.6, 2133), dram_bytes_per_emc_clock=16.0,
    cpu_cores=6, cpu_clusters=_clusters(6, 4), cpu_core_name="Cortex-A78AE",
    cpu_flops_per_core_per_clock=_A78, cpu_freqs_hz=_khz_table(115200, 76800, 1497600, 1510400),
    dla_cores=0, dla_int8_ops_dense=0.0,
    presets=(
        _preset(0, "10W", 6, 0, NO_CAP, NO_CAP, NO_CAP),
        _preset(1, "7W", 4, 0, 960000, 408000000, NO_CAP),
    ),
    default_mode_id=0, rails=_ORIN_NX_RAILS, total_power_rails=("VDD_IN",),
    nvpmodel_conf_name="nvpmodel_p3767_0004.conf", ram_mb=3570,
))
_add(DeviceSpec(
    key="agx_xavier", name="Jetson AGX Xavier", gpu_arch="volta",
    gpu_sm_count=8, gpu_tpc_count=4, gpu_flops_per_sm_per_clock=_VOLTA,
    gpu_freqs_hz=_mhz(318.75, 522.75, 675.75, 828.75, 905.25, 1032.75, 1198.5, 1236.75, 1338.75, 1377),
    gpu_l2_bytes=512 * 2**10,
    emc_freqs_hz=_mhz(204, 665.6, 1331.2, 2133), dram_bytes_per_emc_clock=64.0,
    cpu_cores=8, cpu_clusters=_clusters(8, 2), cpu_core_name="Carmel",
    cpu_flops_per_core_per_clock=_CARMEL, cpu_freqs_hz=_khz_table(115200, 76800, 2188800, 2265600),
    dla_cores=2, dla_int8_ops_dense=10e12,
    presets=(
        _preset(0, "MAXN", 8, 0, NO_CAP, NO_CAP, NO_CAP),
        _preset(1, "MODE_10W", 2, 0, 1200000, 520000000, 1066000000),
        _preset(2, "MODE_15W", 4, 0, 1200000, 670000000, 1333000000),
        _preset(3, "MODE_30W_ALL", 8, 0, 1200000, 900000000, 1600000000),
    ),
    default_mode_id=2,
    rails=(PowerRailSpec("1-0040", 1, "GPU"), PowerRailSpec("1-0040", 2, "CPU"),
           PowerRailSpec("1-0040", 3, "SOC"), PowerRailSpec("1-0041", 1, "CV"),
           PowerRailSpec("1-0041", 2, "VDDRQ"), PowerRailSpec("1-0041", 3, "SYS5V")),
    total_power_rails=("GPU", "CPU", "SOC", "CV", "VDDRQ", "SYS5V"),
    nvpmodel_conf_name="nvpmodel_t194.conf", gpu_devfreq_name="17000000.gv11b",
    gpu_of_node_name="gv11b", ram_mb=31920,
))
_add(DeviceSpec(
    key="xavier_nx", name="Jetson Xavier NX", gpu_arch="volta",
    gpu_sm_count=6, gpu_tpc_count=3, gpu_flops_per_sm_per_clock=_VOLTA,
    gpu_freqs_hz=_mhz(114.75, 204, 306, 408, 510, 599.25, 701.25, 803.25, 854.25, 905.25, 1007.25, 1100.25),
    gpu_l2_bytes=512 * 2**10,
    emc_freqs_hz=_mhz(204, 665.6, 1331.2, 1600, 1866), dram_bytes_per_emc_clock=32.0,
    cpu_cores=6, cpu_clusters=_clusters(6, 2), cpu_core_name="Carmel",
    cpu_flops_per_core_per_clock=_CARMEL, cpu_freqs_hz=_khz_table(115200, 76800, 1881600, 1907200),
    dla_cores=2, dla_int8_ops_dense=4.5e12,
    presets=(
        _preset(0, "MODE_15W_2CORE", 2, 0, 1900000, 1100000000, 1866000000),
        _preset(1, "MODE_15W_4CORE", 4, 0, 1400000, 1100000000, 1866000000),
        _preset(2, "MODE_15W_6CORE", 6, 0, 1400000, 1100000000, 1866000000),
        _preset(3, "MODE_10W_2CORE", 2, 0, 1500000, 800000000, 1600000000),
    ),
    default_mode_id=2,
    rails=(PowerRailSpec("7-0040", 1, "VDD_IN"), PowerRailSpec("7-0040", 2, "VDD_CPU_GPU_CV"),
           PowerRailSpec("7-0040", 3, "VDD_SOC")),
    total_power_rails=("VDD_IN",),
    nvpmodel_conf_name="nvpmodel_t194_p3668.conf", gpu_devfreq_name="17000000.gv11b",
    gpu_of_node_name="gv11b", ram_mb=7765,
))
_add(DeviceSpec(
    key="nano", name="Jetson Nano", gpu_arch="maxwell",
    gpu_sm_count=1, gpu_tpc_count=1, gpu_flops_per_sm_per_clock=_MAXWELL,
    gpu_freqs_hz=_mhz(76.8, 153.6, 230.4, 307.2, 384, 460.8, 537.6, 614.4, 691.2, 768, 844.8, 921.6),
    gpu_l2_bytes=256 * 2**10,
    emc_freqs_hz=_mhz(204, 408, 800, 1600), dram_bytes_per_emc_clock=16.0,
    cpu_cores=4, cpu_clusters=(tuple(range(4)),), cpu_core_name="Cortex-A57",
    cpu_flops_per_core_per_clock=_A57, cpu_freqs_hz=_khz_table(102000, 102000, 1428000, 1479000),
    dla_cores=0, dla_int8_ops_dense=0.0,
    presets=(
        _preset(0, "MAXN", 4, 0, NO_CAP, NO_CAP, NO_CAP),
        _preset(1, "5W", 2, 0, 918000, 640000000, NO_CAP),
    ),
    default_mode_id=0,
    rails=(PowerRailSpec("6-0040", 1, "POM_5V_IN"), PowerRailSpec("6-0040", 2, "POM_5V_GPU"),
           PowerRailSpec("6-0040", 3, "POM_5V_CPU")),
    total_power_rails=("POM_5V_IN",),
    nvpmodel_conf_name="nvpmodel_t210_jetson-nano.conf", gpu_devfreq_name="57000000.gpu",
    gpu_of_node_name="gpu", ram_mb=3964,
))


_add(DeviceSpec(
    key="agx_thor_t5000", name="Jetson AGX Thor T5000", gpu_arch="blackwell",
    gpu_sm_count=20, gpu_tpc_count=10, gpu_flops_per_sm_per_clock=_BLACKWELL,
    gpu_freqs_hz=_mhz(*_THOR_GPU_MHZ), gpu_l2_bytes=32 * 2**20,
    emc_freqs_hz=_mhz(*_THOR_EMC_MHZ), dram_bytes_per_emc_clock=64.0,  # 256-bit LPDDR5X: 273 GB/s
    cpu_cores=14, cpu_clusters=_clusters(14, 2), cpu_core_name="Neoverse-V3AE",
    cpu_flops_per_core_per_clock=_V3AE, cpu_freqs_hz=_khz_table(972000, 108600, 2601600, 2601600),
    dla_cores=0, dla_int8_ops_dense=0.0,
    presets=(  # JetPack 7.0/7.1 dev kit; 7.2 adds ids 2-3, read from the board's conf
        _preset(0, "MAXN", 14, 0, NO_CAP, NO_CAP, NO_CAP),
        _preset(1, "120W", 14, 0, NO_CAP, 1363000000, NO_CAP),  # caps UNVERIFIED
    ),
    default_mode_id=0, rails=_THOR_RAILS, total_power_rails=("VIN",),
    nvpmodel_conf_name="nvpmodel_p3834_0008.conf", gpu_devfreq_name="gpu-gpc-0", gpu_of_node_name="",
    ram_mb=125772, gpu_gpc_count=3, gpu_pci_device="0000:01:00.0", emc_devfreq_name="bwmgr",
    input_power_monitor=_THOR_INPUT, l4t_release="R38 (release), REVISION: 4.0",
    unverified=_THOR_UNVERIFIED,
))
_add(DeviceSpec(
    key="agx_thor_t4000", name="Jetson AGX Thor T4000", gpu_arch="blackwell",
    # 12 SMs at T5000's clock give 1242 FP4 TFLOPS sparse against the 1200 quoted (secondary sources).
    gpu_sm_count=12, gpu_tpc_count=6, gpu_flops_per_sm_per_clock=_BLACKWELL,
    gpu_freqs_hz=_mhz(*_THOR_GPU_MHZ), gpu_l2_bytes=32 * 2**20,
    emc_freqs_hz=_mhz(*_THOR_EMC_MHZ), dram_bytes_per_emc_clock=64.0,
    cpu_cores=12, cpu_clusters=_clusters(12, 2), cpu_core_name="Neoverse-V3AE",
    cpu_flops_per_core_per_clock=_V3AE, cpu_freqs_hz=_khz_table(972000, 108600, 2601600, 2601600),
    dla_cores=0, dla_int8_ops_dense=0.0,
    presets=(
        _preset(0, "MAXN", 12, 0, NO_CAP, NO_CAP, NO_CAP),
        _preset(1, "40W", 12, 0, 1728000, 943000000, 3200000000),
    ),
    default_mode_id=0, rails=_THOR_RAILS, total_power_rails=("VIN",),
    nvpmodel_conf_name="nvpmodel_p3834_0000.conf", gpu_devfreq_name="gpu-gpc-0", gpu_of_node_name="",
    ram_mb=62886, gpu_gpc_count=2, gpu_pci_device="0000:01:00.0", emc_devfreq_name="bwmgr",
    input_power_monitor=_THOR_INPUT, l4t_release="R38 (release), REVISION: 4.0",
    unverified=_THOR_UNVERIFIED + ("gpu_sm_count", "gpu_tpc_count", "gpu_gpc_count", "gpu_l2_bytes",
                                   "dram_bytes_per_emc_clock", "presets", "nvpmodel_conf_name", "rails"),
))


def get_device(key: str) -> DeviceSpec:
    """Look a device up by catalogue key (``agx_orin_64gb``) or by its full name."""
    if key in CATALOGUE:
        return CATALOGUE[key]
    for spec in CATALOGUE.values():
        if spec.name.lower() == key.lower():
            return spec
    raise UnknownDeviceError(key)
