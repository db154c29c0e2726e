"""The public figures the virtual Jetson's physics is calibrated against (docs/jetson-facts.md
lists them with their sources), each reproduced by running the virtual board under the
figure's conditions, with the relative error. ``edge-roofline virtual-jetson --calibration``
prints the table; docs/virtual_jetson.md quotes it; a test keeps every error inside its tolerance.
"""

from __future__ import annotations

from dataclasses import dataclass
from functools import lru_cache
from typing import Callable

from edge_roofline.roofline.devices import get_device
from edge_roofline.virtual.board import VirtualBoard
from edge_roofline.virtual.physics import Activity


@dataclass(frozen=True)
class Anchor:
    device: str
    what: str
    conditions: str
    published: float
    unit: str
    source: str
    measure: Callable[[], float]

    def model_value(self) -> float:
        return self.measure()

    def relative_error(self) -> float:
        return self.model_value() / self.published - 1.0


@lru_cache(maxsize=None)
def _cost(model: str, precision: str, batch: int = 1):
    from edge_roofline.models import zoo
    from edge_roofline.roofline.costs import analyze_model
    return analyze_model(zoo.build(model, batch=batch), precision=precision)


def _latency_ms(device: str, mode_id: int, model: str, precision: str) -> float:
    board = VirtualBoard(device, mode_id=mode_id)
    board.advance(0.1)
    return board.run_inference(_cost(model, precision), precision).latency_s * 1e3


def _throughput(device: str, mode_id: int, model: str, precision: str, batch: int) -> float:
    board = VirtualBoard(device, mode_id=mode_id)
    return batch / board.run_inference(_cost(model, precision, batch), precision).latency_s


def _at_min_clocks(board: VirtualBoard) -> VirtualBoard:
    """Idle as the board's own governors leave it: lowest table clocks, GPU unclocked."""
    d = board.device
    board.set_caps(cpu_max_freq_hz=min(f for f in d.cpu_freqs_hz if f >= 700e6),
                   gpu_max_freq_hz=min(d.gpu_freqs_hz), emc_max_freq_hz=min(d.emc_freqs_hz))
    return board


def _idle_w(device: str) -> float:
    board = _at_min_clocks(VirtualBoard(device, mode_id=get_device(device).default_mode_id))
    board.advance(2.0)
    return board.true_power_w()


def _rail_w(device: str, mode_id: int, rail: str, activity: Activity, caps: dict) -> float:
    board = VirtualBoard(device, mode_id=mode_id)
    board.set_caps(**caps)
    board.advance(0.5, activity)
    return board.refresh_state().rails[rail][0] * board.state.rails[rail][1]


def _loaded_w(device: str, mode_id: int, model: str, precision: str, batch: int, seconds: float = 2.0) -> float:
    board = VirtualBoard(device, mode_id=mode_id)
    cost = _cost(model, precision, batch)
    start_e, start_t = board.energy_j, board.now_s
    while board.now_s - start_t < seconds:
        board.run_inference(cost, precision)
    return (board.energy_j - start_e) / (board.now_s - start_t)


_TEGRASTATS_LOAD = dict(cpu_max_freq_hz=2201.6e6, gpu_max_freq_hz=408e6, emc_max_freq_hz=2133e6)
# 12 cores busy; GPU 14 % busy at 408 MHz (tegrastats log in calibration.md)
_TEGRASTATS_ACTIVITY = Activity(gpu_util=0.14, gpu_compute_fraction=0.5, gpu_clocked=True,
                                dram_bps=8e9, cpu_busy_cores=12.0)

ANCHORS: tuple[Anchor, ...] = (
    Anchor("agx_orin_64gb", "ResNet-50 INT8 latency, batch 1", "MAXN", 0.640, "ms",
           "MLPerf v3.1 SingleStream p90", lambda: _latency_ms("agx_orin_64gb", 0, "resnet50", "int8")),
    Anchor("orin_nx_16gb", "ResNet-50 INT8 latency, batch 1", "MAXN", 1.082, "ms",
           "MLPerf v3.1 SingleStream p90", lambda: _latency_ms("orin_nx_16gb", 0, "resnet50", "int8")),
    Anchor("agx_orin_64gb", "ResNet-50 INT8 throughput, batch 32", "MAXN, GPU only", 4400.0, "img/s",
           "MLPerf v3.1 Offline 6424/s with GPU + 2 DLA (DLA share ~2000/s, DLA README)",
           lambda: _throughput("agx_orin_64gb", 0, "resnet50", "int8", 32)),
    Anchor("orin_nx_16gb", "ResNet-50 INT8 throughput, batch 32", "MAXN, GPU only", 1900.0, "img/s",
           "MLPerf v3.1 Offline 2641/s with GPU + 2 DLA, less a DLA share estimated from AGX DLA img/s x DLA TOPS "
           "ratio",
           lambda: _throughput("orin_nx_16gb", 0, "resnet50", "int8", 32)),
    Anchor("agx_orin_64gb", "module power, GPU saturated", "MAXN, ResNet-50 batch 64", 55.4, "W",
           "Pagoda (PyTorch, batch 64)", lambda: _loaded_w("agx_orin_64gb", 0, "resnet50", "fp32", 64)),
    Anchor("agx_orin_64gb", "module power, idle", "governors at their lowest clocks", 6.7, "W",
           "tegrastats idle line (jetson-facts.md)", lambda: _idle_w("agx_orin_64gb")),
    Anchor("agx_orin_64gb", "VDD_CPU_CV", "12 cores busy at 2201 MHz", 14.31, "W",
           "public tegrastats log (DLA0 also busy)",
           lambda: _rail_w("agx_orin_64gb", 0, "VDD_CPU_CV", _TEGRASTATS_ACTIVITY, _TEGRASTATS_LOAD)),
    Anchor("agx_orin_64gb", "VDD_GPU_SOC", "GPU 14 % at 408 MHz, EMC 2133", 3.15, "W",
           "public tegrastats log",
           lambda: _rail_w("agx_orin_64gb", 0, "VDD_GPU_SOC", _TEGRASTATS_ACTIVITY, _TEGRASTATS_LOAD)),
    Anchor("agx_orin_64gb", "VDDQ_VDD2_1V8AO (DRAM)", "EMC 2133 MHz, light traffic", 1.09, "W",
           "public tegrastats log",
           lambda: _rail_w("agx_orin_64gb", 0, "VDDQ_VDD2_1V8AO", _TEGRASTATS_ACTIVITY, _TEGRASTATS_LOAD)),
    Anchor("orin_nx_16gb", "module power, idle", "governors at their lowest clocks", 4.6, "W",
           "carrier-board docs", lambda: _idle_w("orin_nx_16gb")),
    Anchor("orin_nx_16gb", "module power, loaded", "25W mode (GPU 408 MHz), FP16 GEMM-like load", 16.9, "W",
           "carrier-board docs (8 CPU threads + FP16 tensor GEMM)",
           lambda: _rail_w("orin_nx_16gb", 3, "VDD_IN", Activity(1.0, 0.9, True, 30e9, 8.0), {})),
)


# Thor: an idle JetPack 7.1 (R38.4) tegrastats line (jetson-facts.md): 14 cores at 972 MHz, EMC
# 2750 MHz, the GPU idle at 314 MHz (not rail-gated: VDD_GPU reads 2 W); and T5000's 130 W module
# power in MAXN, a design maximum (the data sheet's Total Module Power), compared with the
# module rails under everything saturated.
_THOR_IDLE_CAPS = dict(cpu_max_freq_hz=972e6, gpu_max_freq_hz=314e6, emc_max_freq_hz=2750e6)
_THOR_IDLE = Activity(gpu_util=0.0, gpu_compute_fraction=0.5, gpu_clocked=True, dram_bps=0.5e9, cpu_busy_cores=0.1)
_THOR_SATURATED = Activity(gpu_util=1.0, gpu_compute_fraction=0.9, gpu_clocked=True, dram_bps=200e9,
                           cpu_busy_cores=14.0)
_THOR_MODULE_RAILS = ("VDD_GPU", "VDD_CPU_SOC_MSS", "VIN_SYS_5V0")


def _thor_rail(rail: str) -> Anchor:
    published = {"VDD_GPU": 1.962, "VDD_CPU_SOC_MSS": 5.887, "VIN_SYS_5V0": 5.635, "VIN": 19.78}[rail]
    return Anchor("agx_thor_t5000", f"{rail}, idle", "14 cores 972 MHz, GPU 314 MHz idle, EMC 2750 MHz",
                  published, "W", "tegrastats idle line, JetPack 7.1 (jetson-facts.md)",
                  lambda: _rail_w("agx_thor_t5000", 0, rail, _THOR_IDLE, _THOR_IDLE_CAPS))


def _thor_module_w() -> float:
    return sum(_rail_w("agx_thor_t5000", 0, rail, _THOR_SATURATED, {}) for rail in _THOR_MODULE_RAILS)


ANCHORS += tuple(_thor_rail(rail) for rail in ("VDD_GPU", "VDD_CPU_SOC_MSS", "VIN_SYS_5V0", "VIN")) + (
    Anchor("agx_thor_t5000", "module power, everything saturated", "MAXN: GPU busy, 14 cores busy, 200 GB/s",
           130.0, "W", "T5000 data sheet: 130 W Total Module Power in MAXN (a design maximum)", _thor_module_w),
)


def calibration_table() -> list[dict]:
    rows = []
    for a in ANCHORS:
        value = a.model_value()
        rows.append({"device": a.device, "what": a.what, "conditions": a.conditions, "unit": a.unit,
                     "published": a.published, "model": value, "error": value / a.published - 1.0,
                     "source": a.source})
    return rows


def format_table(rows: list[dict]) -> str:
    lines = ["| device | figure | conditions | published | virtual (SIMULATION) | error |",
             "|---|---|---|---|---|---|"]
    for r in rows:
        lines.append(f"| {r['device']} | {r['what']} | {r['conditions']} | {r['published']:g} {r['unit']} "
                     f"| {r['model']:.3g} {r['unit']} | {r['error']:+.0%} |")
    return "\n".join(lines)
