"""Moves take time (issue 28): a sample that started inside a move's transient is the move's, the
governor never moves again before the last move settled, it learns how long moves take, and a
move for energy must pay for its transient."""

from edge_roofline.clock import SimClock
from edge_roofline.governor.config import GovernorConfig
from edge_roofline.governor.core import Governor
from edge_roofline.governor.moves import SettleTimes, domains_changed, observed_settle_s, worth_moving
from edge_roofline.platforms.base import OperatingPoint

from .fake_law import DEVICE, law_latency_s
from .fake_settle import SettlePlatform, drive_settle
from .test_governor import analysis


def make(tmp_path, physics=None, **cfg):
    """``physics``: this fake board's settle time per domain (fake_settle.SETTLE_S)."""
    clock = SimClock(100.0)
    platform = SettlePlatform(clock, settle_s=physics)
    config = GovernorConfig.from_dict({"target_latency_ms": 20.0, "percentile": 95.0,
                                       "state_path": str(tmp_path / "state.json"), **cfg})
    return Governor(platform, config, analysis(), clock), platform, clock


def transient_late(platform, factor=3.0):
    """Every inference that starts inside a move's transient (this physics' settle time) is
    ``factor`` x late: a stall that is the move's, not the point's."""
    def latency(start_s, lat):
        inside = platform.moved_at_s <= start_s < platform.moved_at_s + platform.transient_s
        return lat * factor if inside else lat
    return latency


def test_a_transient_late_sample_does_not_rule_a_point_out(tmp_path):
    gov, platform, clock = make(tmp_path)
    ruled_out = set()
    for _ in range(40):
        drive_settle(gov, platform, clock, 1.0, latency_of=transient_late(platform))
        ruled_out |= set(gov.findings.missed)
    assert platform.moves, "the governor never moved"
    # Only points whose own latency misses the target may be ruled out.
    points = {p.name: p for p in gov.candidates}
    wrongly = sorted(n for n in ruled_out if law_latency_s(points[n]) * 1.1 < 0.020)
    assert not wrongly, wrongly


def test_no_second_move_before_the_last_one_settled(tmp_path):
    # Without the rate limit: the settle rule alone must hold the moves apart.
    # A board at the slow end of the physics the governor is built for.
    gov, platform, clock = make(tmp_path, {"cpu": 0.02, "cores": 0.02, "gpu": 0.04, "emc": 0.08},
                                safety={"min_switch_interval_s": 0.0})
    decisions = drive_settle(gov, platform, clock, 40.0, latency_of=transient_late(platform))
    moves = [t for t, d in decisions if d.applied and not d.fallback_active]
    assert len(moves) >= 3
    gaps = [(b - a, settle) for (a, settle), b in zip(platform.moves, moves[1:])]
    assert all(gap >= settle for gap, settle in gaps), [g for g in gaps if g[0] < g[1]]


def test_settle_times_are_learned_from_when_latencies_stop_changing():
    settle = SettleTimes({"cpu": 0.02, "cores": 0.02, "gpu": 0.04, "emc": 0.08, "preset": 0.3}, 0.3)
    assert settle.of(frozenset({"gpu", "emc"})) == 0.08 and settle.of(frozenset({"cpu", "preset"})) == 0.32
    for shown_s in (0.011, 0.013, 0.07):  # one slow move: the median holds
        # samples every 5 ms: slow (at the old clock) until the move shows, then the new level
        samples = [(t / 200, 0.004 if t / 200 >= shown_s else 0.008) for t in range(60)]
        observed = observed_settle_s(samples, settle.domain_s("gpu"))
        settle.observe(frozenset({"gpu"}), observed)
    assert 0.01 <= settle.domain_s("gpu") <= 0.02 * 1.25
    assert settle.domain_s("emc") == 0.08  # no move of the memory clock seen: its prior
    # A move down shows at once (the clocks run at the slower of both): it teaches nothing.
    assert observed_settle_s([(t / 200, 0.004) for t in range(60)], 0.04) is None


def test_the_domains_a_move_changes():
    top = OperatingPoint("MAXN", 0)
    assert domains_changed(DEVICE, top, top.with_caps(name="g", gpu_max_freq_hz=612e6)) == {"gpu"}
    assert domains_changed(DEVICE, top, OperatingPoint("MODE_15W", 1)) >= {"preset", "cpu", "gpu"}


def test_a_move_must_save_more_than_its_transient_costs(tmp_path):
    assert worth_moving(saving_w=1.0, horizon_s=10.0, transient_s=0.08, power_w=30.0)
    assert not worth_moving(saving_w=0.1, horizon_s=10.0, transient_s=0.08, power_w=30.0)
    assert not worth_moving(saving_w=1.0, horizon_s=10.0, transient_s=0.08, power_w=30.0, moves=5)
    # A board whose moves take seconds: the governor stays where it meets the target.
    gov, platform, clock = make(tmp_path, settle_gpu_s=3.0, settle_emc_s=3.0, settle_cpu_s=3.0, settle_cores_s=3.0,
                                settle_s=3.0, expected_dwell_s=5.0)
    decisions = drive_settle(gov, platform, clock, 4.0)
    assert not any(d.applied for _, d in decisions)
    assert any("less than" in d.reason for _, d in decisions), [d.reason for _, d in decisions][-3:]
