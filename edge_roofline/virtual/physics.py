"""The virtual Jetson's physics: how long a model takes at a set of clocks, what each power rail
draws, how hot the die gets, and what the INA3221 monitors report. SIMULATION.

Everything here is a physical mechanism with a handful of calibrated coefficients
(``PhysicsParams``, one set per catalogued device, fitted to the public figures in
``docs/jetson-facts.md``, last section; see ``calibrate.py`` for the residuals). No result is coded in:
"MAXN is not the most energy-efficient point for a memory-bound model" has to fall out of the
mechanisms below, and the tests check that it does.

Time (per ONNX node, in graph order; TensorRT-like execution):

- compute: ``flops / (peak(precision, GPU clock, active TPCs) x eff)`` where ``eff`` rises with
  the kernel's work (a small kernel cannot fill every SM: ``eff_max x W / (W + W_half x SMs)``);
  depthwise convolutions and non-contraction ops do not use Tensor Cores.
- memory: weights stream from DRAM (EMC clock); activations stay in L2 (GPU clock) when they fit
  in half of it, else go to DRAM; recurrent ops re-read their weights every time step (from L2
  when they fit). Streaming reaches a fraction of the DRAM peak.
- the three overlap imperfectly (a 4-norm, so near the ridge both matter), plus a per-kernel
  launch/tail cost partly in the GPU clock domain.
- pointwise activations and normalisations after a contraction are fused into it (no kernel).
- host side: per-inference and per-kernel enqueue work in CPU cycles (CPU clock); the GPU work
  overlaps with the enqueue; the host part is slowed when background load leaves too few cores.
- background GPU load time-slices the GPU: our kernels get ``1 - load`` of it.

Power (per rail, AGX Orin layout; other boards map the same domains onto their rails):

- dynamic ``C x f x V(f)^2 x activity`` per domain, with a DVFS voltage curve per domain that is
  flat at its floor below a knee and rises linearly above it (as the boards' tables do);
  a stalled (memory-bound) GPU still burns a fraction of its busy power;
- DRAM: background power growing with the EMC clock, plus energy per byte moved;
- leakage per domain growing exponentially with temperature; fixed SoC/IO power;
- first-order thermal model (junction over ambient through a thermal resistance, time constant
  tens of seconds) with a GPU clock throttle above the trip temperature;
- INA3221: each reading averages the rail over its conversion window and is quantised to the
  chip's LSBs (40 uV over the shunt, 8 mV bus), with a little noise.

How the board moves between clocks (settle times, the EMC stall, preset changes) and the
disturbances (outlier bursts, the sensor's lag) are in actuation.py: the ``physics`` knobs.
"""

from __future__ import annotations

import math
import random
from dataclasses import dataclass, replace

from edge_roofline.roofline.costs import LayerCost, ModelCost
from edge_roofline.roofline.devices import DeviceSpec
from edge_roofline.virtual.params import PhysicsParams, VoltageCurve


# Ops TensorRT folds into the producing contraction's kernel epilogue.
_FUSABLE = frozenset({"Relu", "Clip", "LeakyRelu", "Sigmoid", "HardSigmoid", "HardSwish", "Tanh",
                      "BatchNormalization", "Add", "Mul", "PRelu", "Elu", "Selu", "Softplus",
                      "Mish", "Gelu", "Swish", "Silu", "Erf", "Div", "Cast", "QuantizeLinear",
                      "DequantizeLinear"})
_CONTRACTIONS = frozenset({"Conv", "ConvTranspose", "Gemm", "MatMul", "Einsum", "QLinearConv",
                           "QLinearMatMul", "MatMulInteger", "ConvInteger"})
_RECURRENT = frozenset({"LSTM", "GRU", "RNN"})


@dataclass(frozen=True)
class Clocks:
    """Clocks the silicon actually runs at (after caps, settling and throttling)."""

    cpu_freq_hz: float
    cpu_online_cores: int
    gpu_freq_hz: float
    tpc_pg_mask: int
    emc_freq_hz: float


@dataclass(frozen=True)
class LayerTiming:
    name: str
    time_s: float
    compute_s: float
    memory_s: float
    dram_bytes: float
    fused: bool


@dataclass(frozen=True)
class InferenceTiming:
    latency_s: float
    gpu_busy_s: float  # GPU time of our kernels (at our share of the GPU)
    host_s: float  # CPU time on one core
    compute_fraction: float  # of GPU busy time spent computing (vs stalled on memory)
    flops: float
    dram_bytes: float
    layers: tuple[LayerTiming, ...]  # nominal; this run's per-layer times are scaled by layer_scale
    layer_scale: float = 1.0
    host_fixed_s: float = 0.0  # of host_s: the per-inference part before any kernel is enqueued
    preempt_s: float = 0.0  # this run's host thread preemption (in latency_s)

    def per_layer_time_s(self) -> dict[str, float]:
        return {l.name: l.time_s * self.layer_scale for l in self.layers}


def jittered(timing: InferenceTiming, p: PhysicsParams, rng: random.Random) -> InferenceTiming:
    """One run's timing: every run varies a little (lognormal), and now and then the host
    thread is preempted (a latency spike no clock setting removes)."""
    scale = math.exp(rng.gauss(0.0, p.latency_jitter))
    delay_s = rng.uniform(0.0, p.preempt_max_s) if rng.random() < p.preempt_probability else 0.0
    return replace(timing, latency_s=timing.latency_s * scale + delay_s, gpu_busy_s=timing.gpu_busy_s * scale,
                   host_s=timing.host_s * scale, layer_scale=timing.layer_scale * scale,
                   host_fixed_s=timing.host_fixed_s * scale, preempt_s=delay_s)


def gpu_voltage(device: DeviceSpec, p: PhysicsParams, freq_hz: float) -> float:
    return VoltageCurve(p.gpu_v_min, p.gpu_v_max, p.gpu_knee_fraction * device.gpu_max_freq_hz,
                        device.gpu_max_freq_hz).volts(freq_hz)


def cpu_voltage(device: DeviceSpec, p: PhysicsParams, freq_hz: float) -> float:
    return VoltageCurve(p.cpu_v_min, p.cpu_v_max, p.cpu_knee_fraction * device.cpu_max_freq_hz,
                        device.cpu_max_freq_hz).volts(freq_hz)


def _is_depthwise(layer: LayerCost) -> bool:
    shapes = layer.input_shapes
    return (layer.op_type == "Conv" and len(shapes) >= 2 and len(shapes[1]) >= 2 and len(shapes[0]) >= 2
            and shapes[1][1] == 1 and shapes[0][1] > 1)


def _recurrent_steps(layer: LayerCost) -> int:
    return int(layer.input_shapes[0][0]) if layer.op_type in _RECURRENT and layer.input_shapes else 0


def inference_timing(cost: ModelCost, device: DeviceSpec, p: PhysicsParams, clocks: Clocks,
                     precision: str, background_gpu_load: float = 0.0,
                     background_cpu_cores: float = 0.0) -> InferenceTiming:
    """One inference of ``cost`` at ``clocks``, while another process keeps
    ``background_gpu_load`` of the GPU (our kernels get the rest) and ``background_cpu_cores``
    cores busy (the host thread gets what the online cores leave, at most one)."""
    sms = device.gpu_sm_count * device.active_tpcs(clocks.tpc_pg_mask) / device.gpu_tpc_count
    gpu_hz, top_hz = clocks.gpu_freq_hz, device.gpu_max_freq_hz
    tensor_peak = device.gpu_peak_flops(precision, gpu_hz, clocks.tpc_pg_mask)
    cuda_peak = device.gpu_peak_flops("fp32", gpu_hz, clocks.tpc_pg_mask) * (2 if precision != "fp32" else 1)
    dram_bps = device.dram_bandwidth_bps(clocks.emc_freq_hz) * p.dram_efficiency
    l2_bps = 64.0 * sms * gpu_hz * p.l2_efficiency
    overhead_s = p.kernel_overhead_s * ((1 - p.kernel_overhead_gpu_share)
                                        + p.kernel_overhead_gpu_share * top_hz / gpu_hz)
    share = min(max(1.0 - background_gpu_load, 0.02), 1.0)
    host_share = min(1.0, max(clocks.cpu_online_cores - background_cpu_cores, 0.1))
    layers, kernels, prev_contraction = [], 0, False
    flops_total = dram_total = compute_total = busy_total = 0.0
    for layer in cost.layers:
        fused = layer.is_view or (prev_contraction and layer.op_type in _FUSABLE)
        if layer.op_type in _CONTRACTIONS:
            prev_contraction = True
        elif not fused:
            prev_contraction = False
        if fused:
            layers.append(LayerTiming(layer.name, 0.0, 0.0, 0.0, 0.0, True))
            continue
        kernels += 1
        tensor = layer.op_type in _CONTRACTIONS | _RECURRENT and not _is_depthwise(layer)
        peak, eff = (tensor_peak, p.tensor_efficiency) if tensor else (cuda_peak, p.cuda_core_efficiency)
        fill = layer.flops / (layer.flops + p.half_fill_flops_per_sm * sms) if layer.flops > 0 else 1.0
        compute_s = layer.flops / (peak * eff * fill) if layer.flops > 0 else 0.0
        activation_bytes = max(layer.bytes - layer.param_bytes, 0.0)
        in_l2 = activation_bytes <= device.gpu_l2_bytes / 2
        # A recurrent op re-reads its weights every time step: from L2 when they fit, else DRAM.
        steps = _recurrent_steps(layer)
        weight_bytes = layer.param_bytes * max(steps, 1)
        weights_in_l2 = steps > 0 and layer.param_bytes <= device.gpu_l2_bytes / 2
        dram_bytes = (0.0 if weights_in_l2 else weight_bytes) + (0.0 if in_l2 else activation_bytes)
        l2_bytes = (weight_bytes if weights_in_l2 else 0.0) + (activation_bytes if in_l2 else 0.0)
        memory_s = dram_bytes / dram_bps + l2_bytes / l2_bps
        roof_s = (compute_s ** 4 + memory_s ** 4) ** 0.25
        time_s = (roof_s + overhead_s + steps * p.recurrent_step_overhead_s) / share
        layers.append(LayerTiming(layer.name, time_s, compute_s, memory_s, dram_bytes, False))
        flops_total += layer.flops
        dram_total += dram_bytes
        busy_total += time_s
        compute_total += min(compute_s / roof_s, 1.0) * roof_s / share if roof_s > 0 else 0.0
    cpu_hz = clocks.cpu_freq_hz
    host_fixed_s = p.host_cycles_per_inference / cpu_hz / host_share
    enqueue_s = kernels * p.host_cycles_per_kernel / cpu_hz / host_share
    latency_s = host_fixed_s + max(busy_total, enqueue_s)
    return InferenceTiming(latency_s=latency_s, gpu_busy_s=busy_total, host_s=host_fixed_s + enqueue_s,
                           compute_fraction=compute_total / busy_total if busy_total > 0 else 0.0,
                           flops=flops_total, dram_bytes=dram_total, layers=tuple(layers), host_fixed_s=host_fixed_s)


@dataclass(frozen=True)
class Activity:
    """Average activity over an interval."""

    gpu_util: float = 0.0  # fraction of time our kernels (or background work) run on the GPU
    gpu_compute_fraction: float = 0.0  # of that busy time, computing rather than stalled
    gpu_clocked: bool = False  # devfreq keeps the clock up (recent work)
    dram_bps: float = 0.0  # bytes/s through DRAM
    cpu_busy_cores: float = 0.0  # cores' worth of CPU work


def rail_power_w(device: DeviceSpec, p: PhysicsParams, clocks: Clocks, activity: Activity,
                 temperature_c: float) -> dict[str, float]:
    """True power per domain, mapped onto the device's INA3221 rails (W)."""
    leak = 2.0 ** ((temperature_c - 25.0) / p.leak_doubling_c)
    tpc_frac = device.active_tpcs(clocks.tpc_pg_mask) / device.gpu_tpc_count
    vg = gpu_voltage(device, p, clocks.gpu_freq_hz)
    util = min(max(activity.gpu_util, 0.0), 1.0)
    busy_activity = activity.gpu_compute_fraction + (1 - activity.gpu_compute_fraction) * p.gpu_stall_activity
    gpu_activity = util * busy_activity + (p.gpu_clock_tree_activity if activity.gpu_clocked else 0.0)
    powered = activity.gpu_clocked or util > 0  # else devfreq has let the GPU rail-gate
    gpu_w = (p.gpu_dyn_w * tpc_frac * clocks.gpu_freq_hz / 1e9 * vg ** 2 * gpu_activity
             + (p.gpu_leak_w * tpc_frac * leak if powered else 0.0))
    emc_ghz = clocks.emc_freq_hz / 1e9
    soc_w = p.soc_fixed_w * leak ** 0.5 + p.emc_ctrl_w_per_ghz * emc_ghz
    vc = cpu_voltage(device, p, clocks.cpu_freq_hz)
    cores = clocks.cpu_online_cores
    busy = min(max(activity.cpu_busy_cores, 0.0), cores)
    cpu_activity = busy + (cores - busy) * p.cpu_idle_activity
    cpu_w = p.cpu_dyn_w * clocks.cpu_freq_hz / 1e9 * vc ** 2 * cpu_activity + p.cpu_leak_w_per_core * cores * leak
    dram_w = (p.dram_background_w + p.dram_background_w_per_ghz * max(emc_ghz - 0.204, 0.0)
              + p.dram_j_per_byte * activity.dram_bps)
    sys_w = p.sys5v_fixed_w + dram_w * (1 + p.regulator_loss)
    return _map_rails(device, p, gpu_w=gpu_w, soc_w=soc_w, cpu_cv_w=cpu_w + p.cv_fixed_w, sys_w=sys_w,
                      dram_w=dram_w)


def _map_rails(device: DeviceSpec, p: PhysicsParams, *, gpu_w: float, soc_w: float, cpu_cv_w: float,
               sys_w: float, dram_w: float) -> dict[str, float]:
    labels = {r.label for r in device.power_monitors}
    if {"VDD_GPU", "VDD_CPU_SOC_MSS", "VIN_SYS_5V0", "VIN"} <= labels:  # Thor: INA3221 rails + INA238 input
        rails = {"VDD_GPU": gpu_w, "VDD_CPU_SOC_MSS": cpu_cv_w + soc_w, "VIN_SYS_5V0": sys_w}
        return rails | {"VIN": sum(rails.values()) * (1 + p.input_loss) + p.carrier_fixed_w}
    if {"VDD_GPU_SOC", "VDD_CPU_CV", "VIN_SYS_5V0"} <= labels:  # AGX Orin
        return {"VDD_GPU_SOC": gpu_w + soc_w, "VDD_CPU_CV": cpu_cv_w, "VIN_SYS_5V0": sys_w,
                "VDDQ_VDD2_1V8AO": dram_w}
    if {"VDD_IN", "VDD_CPU_GPU_CV", "VDD_SOC"} <= labels:  # Orin NX / Nano: input, CPU+GPU+CV, SoC
        return {"VDD_IN": gpu_w + soc_w + cpu_cv_w + sys_w, "VDD_CPU_GPU_CV": gpu_w + cpu_cv_w,
                "VDD_SOC": soc_w}
    raise KeyError(f"no rail mapping for {device.name}")


def module_power_w(device: DeviceSpec, rails: dict[str, float]) -> float:
    return sum(rails[name] for name in device.total_power_rails if name in rails)


class ThermalModel:
    """Junction temperature: first order towards ambient + R_th x power."""

    def __init__(self, p: PhysicsParams, start_c: float | None = None) -> None:
        self.p = p
        self.temperature_c = p.ambient_c + 15.0 if start_c is None else start_c

    def step(self, power_w: float, dt_s: float) -> float:
        steady = self.p.ambient_c + self.p.thermal_resistance_c_per_w * power_w
        alpha = 1.0 - math.exp(-dt_s / self.p.thermal_time_constant_s)
        self.temperature_c += (steady - self.temperature_c) * alpha
        return self.temperature_c

    def zones(self, gpu_util: float, cpu_busy_fraction: float) -> dict[str, float]:
        """Per-zone temperatures: hot spots a little above the die average where busy."""
        t = self.temperature_c
        return {"cpu-thermal": t + 2.0 * cpu_busy_fraction, "gpu-thermal": t + 3.0 * gpu_util,
                "cv0-thermal": t - 1.0, "cv1-thermal": t - 1.0, "cv2-thermal": t - 1.0,
                "soc0-thermal": t - 0.5, "soc1-thermal": t - 0.5, "soc2-thermal": t - 0.5,
                "tj-thermal": t + 3.0 * max(gpu_util, cpu_busy_fraction)}


class Ina3221:
    """What the monitor reports for one rail: the average over its conversion window,
    quantised to the shunt-voltage and bus-voltage LSBs, with noise."""

    SHUNT_LSB_V = 40e-6
    BUS_LSB_V = 8e-3

    def __init__(self, p: PhysicsParams, rng: random.Random) -> None:
        self.p, self.rng = p, rng

    def reading(self, rail: str, mean_power_w: float) -> tuple[float, float]:
        """(volts, amps) as the hwmon files would show them."""
        volts = 1.8 if "1V8" in rail else 5.0
        lsb_a = self.SHUNT_LSB_V / self.p.shunt_ohm
        amps = mean_power_w / volts + self.rng.gauss(0.0, self.p.noise_lsb * lsb_a)
        amps = max(round(amps / lsb_a) * lsb_a, 0.0)
        noisy_v = volts + self.rng.gauss(0.0, self.p.noise_lsb * self.BUS_LSB_V)
        volts = round(noisy_v / self.BUS_LSB_V) * self.BUS_LSB_V
        return volts, amps
