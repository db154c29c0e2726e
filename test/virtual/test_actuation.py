"""Moving the virtual Jetson between operating points takes time, as on a real board: settle
times per clock domain at the slower of both clocks, the EMC stall, the preset change's cost,
outlier bursts and the power sensor's lag (SIMULATION)."""

import random
from dataclasses import replace

import pytest

from edge_roofline.virtual.actuation import PRESETS, Actuation, PhysicsKnobError
from edge_roofline.virtual.board import VirtualBoard
from edge_roofline.virtual.params import CALIBRATION
from edge_roofline.virtual.physics import inference_timing, jittered
from edge_roofline.virtual.platform import VirtualPlatform

GPU_TOP_HZ, GPU_LOW_HZ = 1300.5e6, 408e6
QUIET = replace(CALIBRATION["agx_orin_64gb"], latency_jitter=0.0, preempt_probability=0.0)


def board_with(**knobs) -> VirtualBoard:
    return VirtualBoard("agx_orin_64gb", mode_id=0, params=QUIET, actuation=replace(PRESETS["instant"], **knobs))


def latency_at(board, cost, **clocks) -> float:
    return inference_timing(cost, board.device, board.params, replace(board.silicon_clocks(), **clocks), "fp16").latency_s


def test_a_raised_clock_runs_at_the_old_one_until_it_settles(costs):
    cnn = costs("resnet50")
    board = board_with(settle_gpu_s=(0.03, 0.03))
    board.set_caps(gpu_max_freq_hz=GPU_LOW_HZ)
    board.advance(0.05)
    slow_s = latency_at(board, cnn, gpu_freq_hz=GPU_LOW_HZ)
    board.set_caps(gpu_max_freq_hz=GPU_TOP_HZ)
    assert board.actuator.in_transition() == ("gpu",)
    during = board.run_inference(cnn)
    assert board.silicon_clocks().gpu_freq_hz == GPU_LOW_HZ and during.latency_s == pytest.approx(slow_s)
    board.advance(0.03)
    assert board.silicon_clocks().gpu_freq_hz == GPU_TOP_HZ and board.actuator.in_transition() == ()
    assert board.run_inference(cnn).latency_s == pytest.approx(latency_at(board, cnn, gpu_freq_hz=GPU_TOP_HZ))
    assert during.latency_s > 1.5 * board.run_inference(cnn).latency_s


def test_a_lowered_clock_is_slow_at_once_and_settles_after_its_delay():
    board = board_with(settle_emc_s=(0.06, 0.06))
    low_emc = min(board.device.emc_freqs_hz)
    board.set_caps(emc_max_freq_hz=low_emc)
    assert board.silicon_clocks().emc_freq_hz == low_emc  # the slower of both: the new one
    board.advance(0.059)
    assert board.actuator.in_transition() == ("emc",)
    board.advance(0.002)
    assert board.actuator.in_transition() == ()


def test_cores_coming_online_count_only_once_they_are_up():
    board = board_with(settle_cpu_s=(0.01, 0.01), core_hotplug_s=(0.02, 0.02))
    board.set_caps(cpu_online_cores=4)
    assert board.silicon_clocks().cpu_online_cores == 4  # going offline: fewer at once
    board.advance(0.05)
    board.set_caps(cpu_online_cores=12)
    board.advance(0.029)
    assert board.silicon_clocks().cpu_online_cores == 4
    board.advance(0.002)
    assert board.silicon_clocks().cpu_online_cores == 12


def test_the_first_inference_after_an_emc_change_stalls(costs):
    cnn = costs("resnet50")
    board = board_with(emc_stall_s=(0.003, 0.003))
    board.set_caps(emc_max_freq_hz=2133e6)
    expected_s = latency_at(board, cnn)
    first, second = board.run_inference(cnn), board.run_inference(cnn)
    assert first.latency_s == pytest.approx(expected_s + 0.003)
    assert second.latency_s == pytest.approx(expected_s)
    board.set_caps(gpu_max_freq_hz=GPU_LOW_HZ)  # another domain: no stall
    assert board.run_inference(cnn).latency_s == pytest.approx(latency_at(board, cnn))


def test_a_preset_change_keeps_its_domains_in_transition_longer():
    knobs = dict(settle_gpu_s=(0.005, 0.005), preset_change_s=(0.2, 0.2))
    within = VirtualPlatform(board_with(**knobs))
    across = VirtualPlatform(board_with(**knobs))
    same_preset = next(p for p in within.operating_points() if p.nvpmodel_id == 0 and p.gpu_max_freq_hz)
    other_preset = next(p for p in across.operating_points() if p.nvpmodel_id not in (None, 0))
    within.apply(same_preset)
    across.apply(other_preset)
    for platform in (within, across):
        platform.board.advance(0.006)
    assert within.board.actuator.in_transition() == ()
    moved = across.board.actuator.in_transition()
    assert moved and "gpu" in moved
    across.board.advance(0.2)
    assert across.board.actuator.in_transition() == ()


def test_outliers_come_in_bursts_of_the_configured_length(costs):
    cnn = costs("resnet50")
    board = board_with(outlier_burst_probability=0.02, outlier_burst_length=(3, 3), outlier_factor=(3.0, 3.0))
    base_s = latency_at(board, cnn)
    slow = [board.run_inference(cnn).latency_s > 2 * base_s for _ in range(3000)]
    runs, n = [], 0
    for s in slow + [False]:
        if s:
            n += 1
        elif n:
            runs.append(n)
            n = 0
    assert runs and all(r % 3 == 0 for r in runs)  # back-to-back bursts merge
    assert 0.02 < sum(slow) / len(slow) < 0.1


def power_read_at(board, t_s) -> float:
    board.advance(t_s - board.now_s)
    return VirtualPlatform(board).sample().total_power_w


@pytest.mark.parametrize("lag", [0, 1])
def test_the_sensor_averages_its_window_and_returns_a_finished_conversion(costs, lag):
    cnn = costs("resnet50")
    board = VirtualBoard("agx_orin_64gb", mode_id=0, params=QUIET,
                         actuation=replace(PRESETS["instant"], sensor_lag_conversions=lag))
    window_s = board.params.ina_window_s
    idle_w = power_read_at(board, 10 * window_s)
    timing, busy = board.prepare_inference(cnn)
    board.advance(0.5 * window_s, busy)  # load starts on a conversion boundary
    half_w = VirtualPlatform(board).sample().total_power_w
    board.advance(0.7 * window_s, busy)
    full_w = VirtualPlatform(board).sample().total_power_w
    assert full_w > idle_w + 3.0
    if lag == 0:  # the window ends at the read: half idle, half busy
        assert half_w == pytest.approx((idle_w + full_w) / 2, rel=0.1)
    else:  # the last finished conversion was all idle
        assert half_w == pytest.approx(idle_w, rel=0.05)


def test_instant_is_the_board_without_transients(costs):
    """Under ``instant`` a cap change is in force at once, no inference stalls or bursts, the
    run-to-run jitter draws what the physics draws alone, and the sensor reads the window
    ending now."""
    cnn = costs("resnet50")
    params = CALIBRATION["agx_orin_64gb"]
    board = VirtualBoard("agx_orin_64gb", mode_id=0, seed=7, params=params, actuation=PRESETS["instant"])
    rng = random.Random(7)
    for gpu_hz, emc_hz in ((GPU_TOP_HZ, None), (GPU_LOW_HZ, 2133e6), (816e6, 665.6e6)):
        board.set_caps(gpu_max_freq_hz=gpu_hz, emc_max_freq_hz=emc_hz)
        assert board.actuator.in_transition() == ()
        for _ in range(50):
            expected = jittered(inference_timing(cnn, board.device, params, board.silicon_clocks(), "fp16"),
                                params, rng)
            assert board.run_inference(cnn).latency_s == pytest.approx(expected.latency_s, rel=1e-12)
    assert board.silicon_clocks().gpu_freq_hz == 816e6


def test_unknown_knobs_and_presets_are_refused_by_name():
    with pytest.raises(PhysicsKnobError) as err:
        Actuation.from_dict({"settle_gpu_ms": 5})
    assert "settle_gpu_ms" in str(err.value) and "settle_gpu_s" in str(err.value) and "\n" not in str(err.value)
    with pytest.raises(PhysicsKnobError, match="unknown preset 'sluggish'"):
        Actuation.from_dict("sluggish")
    with pytest.raises(PhysicsKnobError, match=r"settle_emc_s must be \[low, high\] with low <= high"):
        Actuation.from_dict({"settle_emc_s": [0.08, 0.05]})
    with pytest.raises(PhysicsKnobError, match="outlier_factor must be >= 1"):
        Actuation.from_dict({"outlier_factor": 0.5})


def test_presets_and_overrides():
    slow = Actuation.from_dict({"preset": "slow", "emc_stall_s": 0.002})
    assert slow.settle_emc_s == (0.05, 0.08) and slow.emc_stall_s == (0.002, 0.002)
    assert Actuation.from_dict(None) == Actuation() == PRESETS["realistic"]
    assert Actuation.from_dict(Actuation().to_dict()) == Actuation()  # a live board's clients read it back
