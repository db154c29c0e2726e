"""Roofline ceilings: spec-sheet peaks scaled to an operating point, measured (ERT-style)
ceilings, and a small JSON cache of the measured ones per device and operating point.

How each spec peak scales with the operating point (``devices.py`` holds the per-clock facts):

- GPU FLOP/s = FLOPs per SM per clock x active SMs x GPU clock. Active SMs follow the TPC
  power-gating mask (2 SMs per TPC), so MODE_30W's mask 240 leaves 4 of 8 TPCs.
- DRAM bytes/s = bytes per EMC clock x EMC clock.
- GPU L1 / L2 bytes/s scale with the GPU clock and the active SMs (both sit in the GPU clock
  domain); CPU L1 / L2 with the CPU clock and the online cores. The per-clock widths below are
  estimates from the architecture white papers; measured ceilings replace them.
- CPU FLOP/s = FLOPs per core per clock x online cores x CPU clock.
- DLA ops/s: the data-sheet dense INT8 figure at the DLA's max clock (FP16 at half of it);
  DLA clocks are not in the operating point, so it does not scale.
"""

from __future__ import annotations

import json
import os
import re
from dataclasses import asdict, dataclass
from pathlib import Path

from edge_roofline.roofline.devices import PRECISIONS, DeviceSpec, Preset, get_device

ENGINES = ("gpu", "cpu", "dla")

# Bytes per clock per SM / per core that each cache level can deliver (loads), estimates.
_GPU_L1_BYTES_PER_SM_CLOCK = {"blackwell": 128.0, "ampere": 128.0, "volta": 128.0, "maxwell": 64.0}
_GPU_L2_BYTES_PER_SM_CLOCK = {"blackwell": 64.0, "ampere": 64.0, "volta": 64.0, "maxwell": 32.0}
_CPU_L1_BYTES_PER_CORE_CLOCK = {"Neoverse-V3AE": 48.0, "Cortex-A78AE": 32.0, "Carmel": 32.0, "Cortex-A57": 16.0}
_CPU_L2_BYTES_PER_CORE_CLOCK = {"Neoverse-V3AE": 32.0, "Cortex-A78AE": 32.0, "Carmel": 16.0, "Cortex-A57": 16.0}

# Fixed cost per layer that no roofline term covers: a kernel launch and its tail on the GPU
# (TensorRT enqueues a few microseconds per layer), a runtime dispatch on the CPU, and the
# DLA's per-layer task setup. Typical values; a calibration or a measured ERT run overrides.
DEFAULT_LAYER_OVERHEAD_S = {"gpu": 5e-6, "cpu": 2e-6, "dla": 20e-6}


class CeilingsError(ValueError):
    """A ceiling was asked for an engine or precision the device does not have."""


@dataclass(frozen=True)
class Ceilings:
    engine: str                    # "gpu" | "cpu" | "dla"
    precision: str
    peak_flops: float              # FLOP/s
    dram_bandwidth_bps: float      # bytes/s
    l2_bandwidth_bps: float | None
    l1_bandwidth_bps: float | None
    layer_overhead_s: float        # fixed per-layer launch/overhead term
    source: str                    # "spec" | "spec, peak UNVERIFIED" | "measured"
    label: str                     # e.g. "AGX Orin 64GB MAXN gpu fp16"
    # None: the DRAM roof is a spec figure or was measured. Otherwise why no measured working set
    # reached DRAM (a huge last-level cache, too little free memory); dram_bandwidth_bps then
    # holds the largest working set's bandwidth, an upper bound on DRAM's (see dram_text).
    dram_unresolved: str | None = None

    @property
    def ridge_point(self) -> float:
        """Arithmetic intensity (FLOP/byte) where the DRAM roof meets the compute roof."""
        return self.peak_flops / self.dram_bandwidth_bps

    def bandwidth_bps(self, level: str) -> float | None:
        return {"dram": self.dram_bandwidth_bps, "l2": self.l2_bandwidth_bps,
                "l1": self.l1_bandwidth_bps}[level]

    def dram_text(self) -> str:
        """The DRAM roof as every report prints it: an unmeasured one is marked as a bound."""
        gbps = f"{self.dram_bandwidth_bps / 1e9:.1f} GB/s"
        return gbps if self.dram_unresolved is None else f"unmeasured (<= {gbps})"

    @property
    def dram_warning(self) -> str | None:
        """One line for logs when the DRAM roof was not measured, naming why and what it means."""
        if self.dram_unresolved is None:
            return None
        return (f"{self.label}: DRAM bandwidth not measured ({self.dram_unresolved}); the DRAM roof "
                f"uses the largest working set's {self.dram_bandwidth_bps / 1e9:.1f} GB/s, an upper "
                f"bound, so memory-bound layers may run slower than the roofline says")

    def to_dict(self) -> dict:
        return asdict(self) | {"ridge_point": self.ridge_point}

    @classmethod
    def from_dict(cls, data: dict) -> "Ceilings":
        """From ``to_dict``'s keys; a field newer than the data (e.g. ``dram_unresolved`` in a
        cache written before it existed) takes its default."""
        try:
            return cls(**{k: data[k] for k in cls.__dataclass_fields__ if k in data})
        except TypeError as exc:
            raise CeilingsError(f"ceilings entry lacks a field: {exc}") from exc


def _device(device: DeviceSpec | str) -> DeviceSpec:
    return device if isinstance(device, DeviceSpec) else get_device(device)


def _short_name(spec: DeviceSpec) -> str:
    return spec.name.removeprefix("Jetson ")


def _unverified_peak(spec: DeviceSpec, engine: str, precision: str) -> bool:
    """The peak rests on a catalogue fact marked UNVERIFIED (devices.py)."""
    if engine == "cpu":
        return spec.is_unverified("cpu_flops_per_core_per_clock")
    if engine != "gpu":
        return False
    marks = [u for u in spec.unverified if u.startswith("gpu_flops_per_sm_per_clock")]
    return spec.is_unverified("gpu_sm_count") or any(
        "[" not in u or precision in u[u.index("[") + 1:-1].split(",") for u in marks)


def spec_ceilings(device: DeviceSpec | str, precision: str, *, gpu_freq_hz: float | None = None,
                  emc_freq_hz: float | None = None, tpc_pg_mask: int = 0,
                  cpu_freq_hz: float | None = None, cpu_cores: int | None = None,
                  engine: str = "gpu", label: str | None = None) -> Ceilings:
    """Spec-sheet ceilings of ``engine`` at an operating point; ``None`` = the device max."""
    spec = _device(device)
    if engine not in ENGINES:
        raise CeilingsError(f"unknown engine {engine!r}; use one of {ENGINES}")
    if precision not in PRECISIONS:
        raise CeilingsError(f"unknown precision {precision!r}; use one of {', '.join(PRECISIONS)}")
    if precision not in spec.gpu_flops_per_sm_per_clock and engine == "gpu":
        raise CeilingsError(f"{spec.name} has no {precision} on its GPU (it has {', '.join(spec.precisions)})")
    if precision not in spec.cpu_flops_per_core_per_clock and engine == "cpu":
        raise CeilingsError(f"the {spec.cpu_core_name} CPU has no {precision} arithmetic")
    gpu_hz = gpu_freq_hz or spec.gpu_max_freq_hz
    emc_hz = emc_freq_hz or spec.emc_max_freq_hz
    cpu_hz = cpu_freq_hz or spec.cpu_max_freq_hz
    cores = cpu_cores or spec.cpu_cores
    dram_bps = spec.dram_bandwidth_bps(emc_hz)
    if engine == "gpu":
        peak = spec.gpu_peak_flops(precision, gpu_hz, tpc_pg_mask)
        sm_clocks = spec.gpu_sm_count * spec.active_tpcs(tpc_pg_mask) / spec.gpu_tpc_count * gpu_hz
        l1_bps = _GPU_L1_BYTES_PER_SM_CLOCK[spec.gpu_arch] * sm_clocks
        l2_bps = _GPU_L2_BYTES_PER_SM_CLOCK[spec.gpu_arch] * sm_clocks
        point = f"GPU {gpu_hz / 1e6:.0f} MHz x{spec.active_tpcs(tpc_pg_mask)} TPC"
    elif engine == "cpu":
        peak = spec.cpu_peak_flops(precision, cpu_hz, cores)
        l1_bps = _CPU_L1_BYTES_PER_CORE_CLOCK[spec.cpu_core_name] * cores * cpu_hz
        l2_bps = _CPU_L2_BYTES_PER_CORE_CLOCK[spec.cpu_core_name] * cores * cpu_hz
        point = f"CPU {cores}x{cpu_hz / 1e6:.0f} MHz"
    else:
        if spec.dla_cores == 0:
            raise CeilingsError(f"{spec.name} has no DLA")
        if precision not in ("int8", "fp16"):
            raise CeilingsError("the DLA runs int8 and fp16 only")
        peak = spec.dla_int8_ops_dense / (2.0 if precision == "fp16" else 1.0)
        l1_bps = l2_bps = None
        point = f"DLA x{spec.dla_cores}"
    return Ceilings(engine=engine, precision=precision, peak_flops=peak,
                    dram_bandwidth_bps=dram_bps, l2_bandwidth_bps=l2_bps, l1_bandwidth_bps=l1_bps,
                    layer_overhead_s=DEFAULT_LAYER_OVERHEAD_S[engine],
                    source="spec, peak UNVERIFIED" if _unverified_peak(spec, engine, precision) else "spec",
                    label=label or f"{_short_name(spec)} {point} EMC {emc_hz / 1e6:.0f} MHz "
                                   f"{engine} {precision}")


def max_clock_preset(device: DeviceSpec | str) -> Preset:
    """The preset named MAXN (or MAXN_*), else the one with the highest GPU cap."""
    spec = _device(device)
    for p in spec.presets:
        if p.name == "MAXN" or p.name.startswith("MAXN"):
            return p
    return max(spec.presets, key=lambda p: (p.gpu_max_freq_hz or spec.gpu_max_freq_hz,
                                            p.cpu_online_cores))


def preset_clocks(device: DeviceSpec | str, preset_name_or_id: int | str) -> dict:
    """The clocks a preset runs at under load: its caps snapped to the tables (no cap = max)."""
    spec = _device(device)
    p = spec.preset(preset_name_or_id)
    return {
        "preset": p.name,
        "gpu_freq_hz": spec.snap_gpu_freq(p.gpu_max_freq_hz) if p.gpu_max_freq_hz else spec.gpu_max_freq_hz,
        "emc_freq_hz": spec.snap_emc_freq(p.emc_max_freq_hz) if p.emc_max_freq_hz else spec.emc_max_freq_hz,
        "cpu_freq_hz": spec.snap_cpu_freq(p.cpu_max_freq_hz) if p.cpu_max_freq_hz else spec.cpu_max_freq_hz,
        "cpu_cores": p.cpu_online_cores,
        "tpc_pg_mask": p.tpc_pg_mask,
    }


def preset_ceilings(device: DeviceSpec | str, preset_name_or_id: int | str, precision: str,
                    engine: str = "gpu") -> Ceilings:
    """Spec ceilings at an nvpmodel preset (by name, e.g. ``MODE_30W``, or id)."""
    spec = _device(device)
    clocks = preset_clocks(spec, preset_name_or_id)
    name = clocks.pop("preset")
    return spec_ceilings(spec, precision, engine=engine, **clocks,
                         label=f"{_short_name(spec)} {name} {engine} {precision}")


# ---- cache of measured ceilings ----------------------------------------------------------

def default_cache_dir() -> Path:
    return Path(os.environ.get("XDG_CACHE_HOME", Path.home() / ".cache")) / "edge_roofline" / "ceilings"


class CeilingsCache:
    """Measured ceilings, one JSON file per (device, operating point), keyed inside by
    ``engine/precision``. Measuring takes seconds to minutes, so a run measures once per point."""

    def __init__(self, root: str | Path | None = None) -> None:
        self.root = Path(root) if root is not None else default_cache_dir()

    def path(self, device_key: str, operating_point: str) -> Path:
        safe = re.sub(r"[^A-Za-z0-9_.-]+", "_", f"{device_key}__{operating_point}")
        return self.root / f"{safe}.json"

    def load(self, device_key: str, operating_point: str) -> dict[str, Ceilings]:
        path = self.path(device_key, operating_point)
        try:
            data = json.loads(path.read_text())
            return {key: Ceilings.from_dict(value) for key, value in data.get("ceilings", {}).items()}
        except FileNotFoundError:
            return {}
        except (OSError, ValueError, AttributeError) as exc:  # ValueError covers a CeilingsError entry
            raise CeilingsError(f"ceilings cache {path} is unreadable ({exc}); "
                                "measuring again replaces it") from exc

    def get(self, device_key: str, operating_point: str, engine: str, precision: str) -> Ceilings | None:
        return self.load(device_key, operating_point).get(f"{engine}/{precision}")

    def put(self, device_key: str, operating_point: str, ceilings: Ceilings) -> Path:
        try:
            entries = self.load(device_key, operating_point)
        except CeilingsError:
            entries = {}  # an unreadable cache file is replaced by the fresh measurement
        entries[f"{ceilings.engine}/{ceilings.precision}"] = ceilings
        path = self.path(device_key, operating_point)
        path.parent.mkdir(parents=True, exist_ok=True)
        payload = {"device": device_key, "operating_point": operating_point,
                   "ceilings": {k: asdict(v) for k, v in sorted(entries.items())}}
        tmp = path.with_suffix(".tmp")
        tmp.write_text(json.dumps(payload, indent=2))
        tmp.replace(path)  # atomic: a reader never sees half a file
        return path
