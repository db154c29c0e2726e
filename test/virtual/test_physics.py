"""The virtual Jetson's physics: mechanisms respond the way the hardware does, the study's
effects emerge from them, and the calibration stays within its stated errors."""

import math
import random
from dataclasses import replace

import pytest

from edge_roofline.roofline.devices import get_device
from edge_roofline.virtual.calibrate import ANCHORS
from edge_roofline.virtual.physics import (Activity, Clocks, Ina3221, ThermalModel, inference_timing, module_power_w,
                                           rail_power_w)
from edge_roofline.virtual.params import PhysicsParams, device_params

ORIN = get_device("agx_orin_64gb")
P = device_params(ORIN)
MAXN = Clocks(cpu_freq_hz=2201.6e6, cpu_online_cores=12, gpu_freq_hz=1300.5e6, tpc_pg_mask=0, emc_freq_hz=3199e6)


def at(**changes):
    return replace(MAXN, **changes)


def test_compute_bound_model_follows_gpu_clock_memory_bound_follows_emc(costs, big_lstm):
    cnn, lstm = costs("resnet50"), big_lstm
    def t(cost, clocks):
        return inference_timing(cost, ORIN, P, clocks, "fp16").latency_s
    # Halving the GPU clock slows the CNN far more than halving the DRAM clock does.
    cnn_gpu = t(cnn, at(gpu_freq_hz=612e6)) / t(cnn, MAXN)
    cnn_emc = t(cnn, at(emc_freq_hz=2133e6)) / t(cnn, MAXN)
    assert cnn_gpu > 1.6 and cnn_emc < 1.15
    # The big LSTM re-reads 17 MB of weights (> L2) every step: EMC matters, the GPU clock little.
    lstm_gpu = t(lstm, at(gpu_freq_hz=612e6)) / t(lstm, MAXN)
    lstm_emc = t(lstm, at(emc_freq_hz=665.6e6)) / t(lstm, MAXN)
    assert lstm_emc > 1.5 and lstm_gpu < 1.2


def test_tpc_gating_and_background_load_slow_the_gpu_and_cpu_clock_the_host(costs):
    cost = costs("resnet18")
    base = inference_timing(cost, ORIN, P, MAXN, "fp16")
    gated = inference_timing(cost, ORIN, P, at(tpc_pg_mask=240), "fp16")  # 4 of 8 TPCs
    shared = inference_timing(cost, ORIN, P, MAXN, "fp16", background_gpu_load=0.5)
    slow_cpu = inference_timing(cost, ORIN, P, at(cpu_freq_hz=729.6e6), "fp16")
    assert gated.gpu_busy_s > 1.3 * base.gpu_busy_s
    assert shared.gpu_busy_s == pytest.approx(2 * base.gpu_busy_s)
    assert slow_cpu.host_s == pytest.approx(base.host_s * 2201.6 / 729.6)
    assert slow_cpu.gpu_busy_s == pytest.approx(base.gpu_busy_s)


def test_every_layer_is_timed_and_fused_ones_cost_nothing(costs):
    cost = costs("resnet18")
    timing = inference_timing(cost, ORIN, P, MAXN, "fp16")
    assert [l.name for l in timing.layers] == [l.name for l in cost.layers]
    fused = [l for l in timing.layers if l.fused]
    assert fused and all(l.time_s == 0 for l in fused)
    assert {cost.layer(l.name).op_type for l in fused} <= {"Relu", "Add", "BatchNormalization", "Reshape", "Flatten"}
    assert sum(l.time_s for l in timing.layers) == pytest.approx(timing.gpu_busy_s)
    assert timing.latency_s > timing.gpu_busy_s


def test_power_scales_with_frequency_voltage_and_activity():
    busy = Activity(gpu_util=1.0, gpu_compute_fraction=1.0, gpu_clocked=True, dram_bps=50e9, cpu_busy_cores=1)
    stalled = replace(busy, gpu_compute_fraction=0.0)
    def gpu(clocks, act):
        return rail_power_w(ORIN, P, clocks, act, 50.0)["VDD_GPU_SOC"]
    high, low = gpu(MAXN, busy), gpu(at(gpu_freq_hz=612e6), busy)
    # f x V^2: half the clock at a lower voltage saves more than half the dynamic power.
    assert high - low > 0.55 * (high - gpu(MAXN, Activity()))
    assert gpu(MAXN, stalled) < high
    def dram(clocks, act):
        return rail_power_w(ORIN, P, clocks, act, 50.0)["VDDQ_VDD2_1V8AO"]
    assert dram(MAXN, busy) > dram(MAXN, replace(busy, dram_bps=0.0)) > dram(at(emc_freq_hz=665.6e6), Activity())
    # VIN_SYS_5V0 contains the DRAM rail; the module total is the three input rails.
    rails = rail_power_w(ORIN, P, MAXN, busy, 50.0)
    assert rails["VIN_SYS_5V0"] > rails["VDDQ_VDD2_1V8AO"]
    assert module_power_w(ORIN, rails) == pytest.approx(
        rails["VDD_GPU_SOC"] + rails["VDD_CPU_CV"] + rails["VIN_SYS_5V0"])


def test_leakage_grows_with_temperature():
    act = Activity(gpu_util=0.5, gpu_compute_fraction=0.5, gpu_clocked=True)
    cold = module_power_w(ORIN, rail_power_w(ORIN, P, MAXN, act, 30.0))
    hot = module_power_w(ORIN, rail_power_w(ORIN, P, MAXN, act, 90.0))
    assert hot > cold + 1.0


def test_thermal_model_is_first_order_towards_ambient_plus_r_times_p():
    thermal = ThermalModel(P, start_c=P.ambient_c)
    thermal.step(40.0, P.thermal_time_constant_s)
    rise = P.thermal_resistance_c_per_w * 40.0
    assert thermal.temperature_c - P.ambient_c == pytest.approx(rise * (1 - math.exp(-1)), rel=1e-6)
    for _ in range(50):
        thermal.step(40.0, P.thermal_time_constant_s)
    assert thermal.temperature_c == pytest.approx(P.ambient_c + rise, rel=1e-3)


def test_ina3221_readings_are_quantised_to_the_chip_lsbs():
    ina = Ina3221(P, random.Random(1))
    lsb_a = Ina3221.SHUNT_LSB_V / P.shunt_ohm
    readings = [ina.reading("VDD_GPU_SOC", 10.0) for _ in range(200)]
    for volts, amps in readings:
        assert amps / lsb_a == pytest.approx(round(amps / lsb_a), abs=1e-9)
        assert volts / Ina3221.BUS_LSB_V == pytest.approx(round(volts / Ina3221.BUS_LSB_V), abs=1e-9)
    mean_w = sum(v * a for v, a in readings) / len(readings)
    assert mean_w == pytest.approx(10.0, rel=0.02)
    assert len({a for _, a in readings}) > 1  # noise: not a constant


def test_perturbation_scales_coefficients_within_the_fraction_reproducibly():
    a, b = P.perturbed(0.3, seed=7), P.perturbed(0.3, seed=7)
    assert a == b and a != P.perturbed(0.3, seed=8)
    for name in ("gpu_dyn_w", "dram_efficiency", "host_cycles_per_inference"):
        assert 0.7 <= getattr(a, name) / getattr(P, name) <= 1.3
    with pytest.raises(ValueError, match="physics_perturbation"):
        P.perturbed(1.5, seed=0)
    with pytest.raises(ValueError, match="unknown physics parameters: bogus"):
        PhysicsParams.from_dict({**P.to_dict(), "bogus": 1})


@pytest.mark.parametrize("anchor", ANCHORS, ids=lambda a: f"{a.device}:{a.what}")
def test_calibration_against_published_figures(anchor):
    """Each public figure is reproduced within 30 % (docs/virtual_jetson.md prints the actual errors)."""
    assert abs(anchor.relative_error()) <= 0.30, (anchor.what, anchor.model_value(), anchor.published)
