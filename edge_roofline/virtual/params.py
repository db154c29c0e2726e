"""The virtual Jetson's calibrated coefficients: ``PhysicsParams`` (one set per catalogued
device, ``CALIBRATION``, fitted in calibrate.py to the public figures of
docs/jetson-facts.md), the DVFS voltage curves, and the ways a scenario varies them
(``perturbed``: a device unlike the catalogue; ``scaled``: a law of another structure).
The mechanisms that use them are in physics.py. SIMULATION.
"""

from __future__ import annotations

import math
import random
from dataclasses import asdict, dataclass, fields, replace
from typing import Mapping

from edge_roofline.roofline.devices import DeviceSpec


@dataclass(frozen=True)
class VoltageCurve:
    """DVFS: ``v_min`` up to ``knee_hz``, then linear to ``v_max`` at ``top_hz``."""

    v_min: float
    v_max: float
    knee_hz: float
    top_hz: float

    def volts(self, freq_hz: float) -> float:
        if freq_hz <= self.knee_hz:
            return self.v_min
        x = min((freq_hz - self.knee_hz) / max(self.top_hz - self.knee_hz, 1.0), 1.0)
        return self.v_min + (self.v_max - self.v_min) * x


@dataclass(frozen=True)
class PhysicsParams:
    """Calibrated coefficients of one device. Power coefficients are W per (GHz x V^2) at full
    activity; leakage is W at 25 C."""

    # --- time ---
    tensor_efficiency: float = 0.56  # fraction of the dense Tensor Core peak a large kernel reaches
    cuda_core_efficiency: float = 0.6  # same, for kernels on CUDA cores (fp32 FMA peak)
    half_fill_flops_per_sm: float = 6e6  # kernel work (per active SM) that reaches half of that
    dram_efficiency: float = 0.72  # fraction of the DRAM peak a streaming kernel reaches
    l2_efficiency: float = 0.6
    kernel_overhead_s: float = 2.5e-6  # launch + tail at the top GPU clock
    kernel_overhead_gpu_share: float = 0.5  # part of that in the GPU clock domain
    host_cycles_per_inference: float = 3.0e5  # enqueue + sync + copies, CPU cycles
    host_cycles_per_kernel: float = 4.0e3  # enqueue per kernel
    recurrent_step_overhead_s: float = 6e-6  # per time step of an LSTM/GRU (sequential kernels)
    # --- power ---
    gpu_dyn_w: float = 32.0  # VDD_GPU_SOC, GPU at full activity, per GHz x V^2, all TPCs
    gpu_stall_activity: float = 0.25  # activity of an SM stalled on memory, relative to computing
    gpu_clock_tree_activity: float = 0.06  # clocked but idle (devfreq not yet lowered)
    gpu_leak_w: float = 0.6  # all TPCs at 25 C; gated TPCs and a rail-gated idle GPU leak nothing
    soc_fixed_w: float = 1.75  # rest of VDD_GPU_SOC (fabric, engines)
    emc_ctrl_w_per_ghz: float = 0.12  # memory controller on VDD_GPU_SOC
    cpu_dyn_w: float = 0.43  # per core at full load, per GHz x V^2
    cpu_idle_activity: float = 0.08  # an online idle core (clock tree, OS ticks)
    cpu_leak_w_per_core: float = 0.06
    cv_fixed_w: float = 0.5  # CV (DLA/PVA) idle on VDD_CPU_CV
    dram_background_w: float = 0.20  # VDDQ at the lowest EMC clock
    dram_background_w_per_ghz: float = 0.33
    dram_j_per_byte: float = 35e-12
    sys5v_fixed_w: float = 3.1  # VIN_SYS_5V0 beyond DRAM: IO, regulators, module logic
    regulator_loss: float = 0.08  # conversion loss on VIN_SYS_5V0, fraction of DRAM power
    # Thor's INA238 measures the carrier input: the module rails, their conversion loss (a
    # fraction of them) and the carrier's own draw. 0 on boards without an input monitor.
    input_loss: float = 0.0
    carrier_fixed_w: float = 0.0
    leak_doubling_c: float = 30.0
    # --- voltages ---
    gpu_v_min: float = 0.59
    gpu_v_max: float = 1.0
    gpu_knee_fraction: float = 0.4  # of the top clock
    cpu_v_min: float = 0.6
    cpu_v_max: float = 1.05
    cpu_knee_fraction: float = 0.35
    # --- heat ---
    ambient_c: float = 25.0
    thermal_resistance_c_per_w: float = 1.05
    thermal_time_constant_s: float = 40.0
    throttle_c: float = 99.0  # GPU clock cut above this junction temperature
    throttle_factor: float = 0.75
    # --- sensors and clocks ---
    ina_window_s: float = 0.0132  # 4 averages x 1.1 ms x 3 channels
    shunt_ohm: float = 0.002
    noise_lsb: float = 0.7
    devfreq_hold_s: float = 0.1  # the GPU governor keeps the cap this long after the last work
    # --- run-to-run variation ---
    latency_jitter: float = 0.02  # lognormal sigma of each inference's time (clock/cache noise)
    preempt_probability: float = 0.004  # the host thread loses its core to another task
    preempt_max_s: float = 0.4e-3  # for up to this long (uniform)

    def perturbed(self, fraction: float, seed: int) -> "PhysicsParams":
        """Every efficiency and power coefficient scaled by a random factor in
        [1 - fraction, 1 + fraction] (a device that differs from the catalogue)."""
        if not 0 <= fraction < 1:
            raise ValueError(f"physics_perturbation must be in [0, 1), got {fraction}")
        rng = random.Random(seed)
        scaled = {}
        for name in _PERTURBABLE:
            value = getattr(self, name) * (1.0 + rng.uniform(-fraction, fraction))
            scaled[name] = min(value, 0.95) if "efficiency" in name else value
        return replace(self, **scaled)

    def scaled(self, factors: Mapping[str, float]) -> "PhysicsParams":
        """Named coefficients multiplied by their factors (a board whose law differs from the
        calibrated one in a known way, e.g. more host-side cycles per kernel)."""
        known = [f.name for f in fields(self)]
        unknown = sorted(set(factors) - set(known))
        if unknown:
            raise ValueError(f"unknown physics parameter(s) {', '.join(unknown)}; known: {', '.join(known)}")
        for name, factor in factors.items():
            if isinstance(factor, bool) or not isinstance(factor, (int, float)) or not 0 < factor < math.inf:
                raise ValueError(f"physics factor for {name} must be a positive number, got {factor!r}")
        return replace(self, **{name: getattr(self, name) * factor for name, factor in factors.items()})

    def to_dict(self) -> dict:
        return asdict(self)

    @classmethod
    def from_dict(cls, data: dict) -> "PhysicsParams":
        known = {f.name for f in fields(cls)}
        unknown = set(data) - known
        if unknown:
            raise ValueError(f"unknown physics parameters: {', '.join(sorted(unknown))}")
        return cls(**data)


_PERTURBABLE = ("tensor_efficiency", "cuda_core_efficiency", "half_fill_flops_per_sm",
                "dram_efficiency", "l2_efficiency", "kernel_overhead_s", "host_cycles_per_inference",
                "host_cycles_per_kernel", "gpu_dyn_w", "gpu_stall_activity", "gpu_leak_w",
                "soc_fixed_w", "emc_ctrl_w_per_ghz", "cpu_dyn_w", "cpu_leak_w_per_core",
                "dram_background_w", "dram_background_w_per_ghz", "dram_j_per_byte", "sys5v_fixed_w")


# Per device: the defaults are AGX Orin 64GB's; smaller modules have smaller GPUs (the
# per-GHz coefficients scale with SM count) and their own fixed power. Fitted in calibrate.py.
CALIBRATION: dict[str, PhysicsParams] = {
    "agx_orin_64gb": PhysicsParams(),
    "agx_orin_32gb": PhysicsParams(gpu_dyn_w=26.0, gpu_leak_w=0.5),
    "orin_nx_16gb": PhysicsParams(gpu_dyn_w=24.0, gpu_leak_w=0.35, soc_fixed_w=1.0, cv_fixed_w=0.3,
                                  sys5v_fixed_w=2.1, dram_background_w=0.12,
                                  dram_background_w_per_ghz=0.2, cpu_dyn_w=0.6,
                                  host_cycles_per_inference=3.0e5),
    "orin_nx_8gb": PhysicsParams(gpu_dyn_w=19.0, gpu_leak_w=0.35, soc_fixed_w=1.0, cv_fixed_w=0.2,
                                 sys5v_fixed_w=1.2, dram_background_w=0.12,
                                 dram_background_w_per_ghz=0.2, cpu_dyn_w=0.5),
    "orin_nano_8gb": PhysicsParams(gpu_dyn_w=17.0, gpu_leak_w=0.3, soc_fixed_w=0.9, cv_fixed_w=0.1,
                                   sys5v_fixed_w=1.1, dram_background_w=0.1,
                                   dram_background_w_per_ghz=0.18, cpu_dyn_w=0.5),
    "orin_nano_4gb": PhysicsParams(gpu_dyn_w=9.0, gpu_leak_w=0.2, soc_fixed_w=0.8, cv_fixed_w=0.1,
                                   sys5v_fixed_w=1.0, dram_background_w=0.08,
                                   dram_background_w_per_ghz=0.15, cpu_dyn_w=0.5),
}


# JetPack 6.2's Super modes raise the caps, not the silicon: a Super variant has its module's physics.
CALIBRATION.update({f"{key}_super": CALIBRATION[key] for key in ("orin_nx_16gb", "orin_nx_8gb", "orin_nano_4gb")})
# Thor: fitted to its public figures (calibrate.py, docs/jetson-facts.md): the rails of an idle
# R38.4 tegrastats line and the 130 W module power of MAXN. T4000: T5000's per-SM and per-core
# coefficients on its smaller GPU and CPU (UNVERIFIED: no public T4000 measurement).
_THOR = PhysicsParams(
    gpu_dyn_w=46.0, gpu_leak_w=1.25, gpu_v_min=0.6, gpu_v_max=1.0, soc_fixed_w=2.36, emc_ctrl_w_per_ghz=0.3,
    cpu_dyn_w=1.0, cpu_idle_activity=0.05, cpu_leak_w_per_core=0.08, cpu_v_max=1.0, cv_fixed_w=0.3,
    dram_background_w=0.5, dram_background_w_per_ghz=0.9, dram_j_per_byte=30e-12, sys5v_fixed_w=2.52,
    input_loss=0.1, carrier_fixed_w=5.0, thermal_resistance_c_per_w=0.45, host_cycles_per_inference=3.0e5)
CALIBRATION["agx_thor_t5000"] = _THOR
CALIBRATION["agx_thor_t4000"] = replace(_THOR, gpu_dyn_w=_THOR.gpu_dyn_w * 12 / 20,
                                        gpu_leak_w=_THOR.gpu_leak_w * 12 / 20)


def device_params(device: DeviceSpec) -> PhysicsParams:
    try:
        return CALIBRATION[device.key]
    except KeyError:
        raise KeyError(f"the virtual Jetson has no physics for {device.name}; virtual devices: "
                       f"{', '.join(sorted(CALIBRATION))}") from None
