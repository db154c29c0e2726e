"""Failing writes on the virtual Jetson: the governor falls back within a second, says why,
and the device ends no worse than found."""

import pytest

from edge_roofline.models import zoo
from edge_roofline.clock import SimClock
from edge_roofline.governor.config import GovernorConfig
from edge_roofline.governor.core import Governor
from edge_roofline.platforms.base import OperatingPoint
from edge_roofline.roofline.ceilings import preset_ceilings
from edge_roofline.roofline.costs import analyze_model
from edge_roofline.roofline.model import analyze_roofline
from edge_roofline.virtual.board import VirtualBoard
from edge_roofline.virtual.platform import VirtualPlatform


@pytest.fixture(scope="module")
def resnet18():
    cost = analyze_model(zoo.build("resnet18"), precision="fp16")
    return cost, analyze_roofline(cost, preset_ceilings("agx_orin_64gb", "MAXN", "fp16"))


def run(gov, board, platform, cost, seconds, rate_hz=30.0):
    """Inferences at ``rate_hz``, power at 20 Hz, governor steps at 10 Hz; the decisions."""
    decisions, end = [], board.now_s + seconds
    next_inf, next_power, next_step = board.now_s, board.now_s, board.now_s
    while board.now_s < end:
        t = min(next_inf, next_power, next_step)
        board.advance_to(t)
        if t == next_inf:
            gov.observe_inference(board.run_inference(cost, "fp16").latency_s, board.now_s)
            next_inf += 1.0 / rate_hz
        if t == next_power:
            sample = platform.sample()
            gov.observe_power(sample.total_power_w, board.now_s, sample.temperatures_c)
            next_power += 0.05
        if t == next_step:
            decisions.append((board.now_s, gov.step(board.now_s)))
            next_step += 0.1
    return decisions


def test_failing_writes_fall_back_within_a_second_with_the_reason(resnet18, tmp_path):
    cost, analysis = resnet18
    board = VirtualBoard("agx_orin_64gb", mode_id=0, clock=SimClock())
    platform = VirtualPlatform(board)
    config = GovernorConfig.from_dict({"target_latency_ms": 20.0, "state_path": str(tmp_path / "s.json")})
    gov = Governor(platform, config, analysis, board.clock)
    run(gov, board, platform, cost, 8.0)
    assert gov.current.name != "MAXN"  # it moved to a cheaper point
    platform.fail_apply = True  # every sysfs / nvpmodel write fails from now on
    gov.set_target(2.0, 95.0)  # the cheap point misses this: the governor must move, and cannot
    t_fail = board.now_s
    decisions = run(gov, board, platform, cost, 3.0)
    fallback = [(t, d) for t, d in decisions if d.state == "fallback"]
    assert fallback, [d.reason for _, d in decisions]
    t, d = fallback[0]
    assert t - t_fail <= 1.0
    assert d.fallback_active and "failed" in d.reason and "simulated failure" in d.reason
    assert d.point == gov.safe_point and gov.safe_point.name == "MAXN"
    platform.fail_apply = False  # writes work again: the safe point is put back
    run(gov, board, platform, cost, 3.0)
    gov.shutdown()
    assert platform.current_operating_point() == OperatingPoint("MAXN", nvpmodel_id=0)
    assert board.state.gpu_max_freq_hz == 1300.5e6 and all(board.state.cpu_online)
