"""VirtualBoard on simulated time, and the study's findings emerging from its physics."""

import pytest

from edge_roofline.clock import SimClock
from edge_roofline.platforms.base import ApplyError, OperatingPoint, RebootRequiredError
from edge_roofline.virtual.board import VirtualBoard
from edge_roofline.virtual.platform import VirtualPlatform


def energy_and_latency(board, cost, seconds=0.3, precision="fp16"):
    """Back-to-back inferences: true energy and mean latency per inference."""
    board.advance(0.05)
    e0, t0, n = board.energy_j, board.now_s, 0
    while board.now_s - t0 < seconds:
        board.run_inference(cost, precision)
        n += 1
    return (board.energy_j - e0) / n, (board.now_s - t0) / n


def board_at(gpu_hz=None, emc_hz=None, cores=None):
    board = VirtualBoard("agx_orin_64gb", mode_id=0)
    board.set_caps(gpu_max_freq_hz=gpu_hz, emc_max_freq_hz=emc_hz, cpu_online_cores=cores)
    return board


def test_maxn_is_not_the_most_energy_efficient_for_a_memory_bound_model(big_lstm):
    """Pagoda's finding, from the physics: at a lower GPU clock the DRAM-bound LSTM keeps nearly
    its MAXN latency and spends clearly less energy per inference."""
    lstm = big_lstm
    e_maxn, t_maxn = energy_and_latency(board_at(), lstm)
    results = {g: energy_and_latency(board_at(gpu_hz=g), lstm) for g in (408e6, 612e6, 816e6, 1020e6)}
    best_gpu = min(results, key=lambda g: results[g][0])
    e_best, t_best = results[best_gpu]
    assert best_gpu < 1300.5e6
    assert e_best < 0.85 * e_maxn and t_best < 1.15 * t_maxn


def test_compute_bound_model_pays_latency_for_energy(costs):
    """The CNN's latency follows the GPU clock: the low clock saves energy only at a large
    latency cost, unlike the memory-bound model."""
    cnn = costs("resnet50")
    _, t_maxn = energy_and_latency(board_at(), cnn)
    _, t_low = energy_and_latency(board_at(gpu_hz=612e6), cnn)
    assert t_low > 1.6 * t_maxn


def test_running_advances_simulated_time_and_energy():
    clock = SimClock(10.0)
    board = VirtualBoard("orin_nx_16gb", clock=clock)
    assert board.now_s == 10.0
    energy = board.advance(2.0)
    assert clock.now_s() == pytest.approx(12.0) and board.now_s == pytest.approx(12.0)
    assert energy == pytest.approx(board.energy_j) and 2.0 < energy / 2.0 < 15.0
    with pytest.raises(ValueError):
        board.advance(float("nan"))


def test_thermal_throttling_cuts_the_gpu_clock(costs):
    hot = VirtualBoard("agx_orin_64gb", mode_id=0, ambient_c=80.0)
    cost = costs("resnet50")
    first = hot.run_inference(cost).latency_s
    while hot.thermal.temperature_c <= hot.params.throttle_c and hot.now_s < 600:
        hot.run_inference(cost)
    assert hot.thermal.temperature_c > hot.params.throttle_c
    assert hot.silicon_clocks().gpu_freq_hz < 1300.5e6
    assert hot.run_inference(cost).latency_s > 1.1 * first


def test_sensor_readings_follow_load_and_are_labelled_simulation(costs):
    platform = VirtualPlatform(VirtualBoard("agx_orin_64gb", mode_id=0))
    board = platform.board
    board.advance(1.0)
    idle = platform.sample()
    cost = costs("resnet18")
    t_end = board.now_s + 1.0
    while board.now_s < t_end:
        board.run_inference(cost)
    busy = platform.sample()
    assert idle.simulated and busy.simulated and "SIMULATION" in busy.source
    assert busy.total_power_w > idle.total_power_w + 10
    assert busy.gpu_load_pct > 50 and busy.gpu_freq_hz == 1300.5e6
    assert idle.gpu_freq_hz == min(board.device.gpu_freqs_hz)  # devfreq lowered it while idle
    assert {r.name for r in busy.rails} == {"VDD_GPU_SOC", "VDD_CPU_CV", "VIN_SYS_5V0", "VDDQ_VDD2_1V8AO"}
    assert "SIMULATION" in platform.identity().model


def test_platform_validates_like_the_real_backend_and_restores():
    platform = VirtualPlatform(VirtualBoard("agx_orin_64gb", mode_id=0))
    points = platform.operating_points()
    assert {p.name for p in points if "/" not in p.name} == {"MAXN", "MODE_50W"}  # same TPC mask only
    assert len(points) == 2 + 96
    with pytest.raises(RebootRequiredError):
        platform.apply(OperatingPoint("MODE_30W", nvpmodel_id=2))
    platform.apply(OperatingPoint("MODE_50W", nvpmodel_id=3))
    assert platform.board.state.gpu_max_freq_hz == 816e6
    low = next(p for p in points if p.gpu_max_freq_hz == 408e6 and p.cpu_online_cores == 6)
    platform.apply(low)
    assert platform.board.state.nvpmodel_mode_id == 0 and sum(platform.board.state.cpu_online) == 6
    platform.apply(OperatingPoint("MAXN", nvpmodel_id=0))  # a plain preset lifts the custom caps
    assert platform.board.state.gpu_max_freq_hz == 1300.5e6 and sum(platform.board.state.cpu_online) == 12
    platform.apply(low)
    platform.fail_apply = True
    with pytest.raises(ApplyError, match="simulated failure"):
        platform.apply(OperatingPoint("MAXN", nvpmodel_id=0))
    platform.restore()
    assert platform.current_operating_point().name == "MAXN"
    assert platform.board.state.gpu_max_freq_hz == 1300.5e6 and all(platform.board.state.cpu_online)


def test_unknown_device_and_precision_are_clear_errors(costs):
    with pytest.raises(KeyError, match="virtual devices"):
        VirtualBoard("agx_xavier")
    with pytest.raises(ValueError, match="precision"):
        VirtualBoard().run_inference(costs("tiny_cnn"), "bf16")


def test_latency_varies_run_to_run_with_rare_host_preemption_spikes(costs):
    board = VirtualBoard("agx_orin_64gb", mode_id=0, seed=3)
    cost = costs("tiny_cnn")
    latencies = sorted(board.run_inference(cost).latency_s for _ in range(3000))
    p50, p99 = latencies[1500], latencies[2970]
    assert 1.02 < latencies[2850] / p50 < 1.15  # p95: the lognormal jitter
    assert latencies[-1] > p50 + 0.1e-3  # a preempted run
    assert p99 / p50 < 1.5
    again = VirtualBoard("agx_orin_64gb", mode_id=0, seed=3)
    twin = VirtualBoard("agx_orin_64gb", mode_id=0, seed=3)
    assert again.run_inference(cost).latency_s == twin.run_inference(cost).latency_s
