"""Late inferences are budgeted (issue 28): a target promises at most TAIL_SHARE of a stream's
inferences late, so a move that may miss is made only while every stream can pay for a miss; a
backlog that grows after a move is the point's, not the move's; and no move for energy is made
while a stream's queue is still draining a late inference."""

import math
from dataclasses import replace

import pytest

import edge_roofline.governor.selection as selection
from edge_roofline.governor.config import StreamConfig
from edge_roofline.governor.moves import DOMAINS, Move, SettleTimes
from edge_roofline.governor.policy import Choice
from edge_roofline.governor.queueing import TAIL_SHARE
from edge_roofline.governor.states import Transition
from edge_roofline.governor.streams import Stream

from .fake_law import DEVICE
from .fake_settle import drive_settle
from .test_moves import make


class Prediction:
    """A point's prediction: meets every target or not; ``met_by``: the streams that meet there."""

    def __init__(self, meets: bool, met_by: tuple[str, ...] = (), power_w: float = 10.0) -> None:
        self._meets, self.met_by, self.power_w = meets, met_by, power_w
        self.latency_s, self.latency_std_s, self.target_s = 0.005, 0.0, 0.010  # a stream's, where it meets

    def meets(self) -> bool:
        return self._meets

    def stream(self, name: str):
        return Prediction(True) if name in self.met_by else None


def stream(rate_hz: float, late: int) -> Stream:
    """A stream at ``rate_hz`` with ``late`` late inferences, all at t = 0."""
    s = Stream(StreamConfig(name="s", target_latency_ms=10.0, percentile=95.0))
    s.calibrated_rate_hz = rate_hz
    for k in range(100):
        s.note_inference(0.02 if k < late else 0.005, 0.0)
    return s


def test_a_move_that_may_miss_is_paid_from_every_streams_late_budget():
    from edge_roofline.governor.verdicts import MoveBet, miss_cost, unaffordable_miss
    s = stream(30.0, 4)
    assert s.late_budget(1.0, 30.0) == pytest.approx(TAIL_SHARE * 30.0 * 30.0 - 4)  # 1 % of a window's inferences
    assert s.late_budget(31.0, 30.0) == pytest.approx(TAIL_SHARE * 30.0 * 30.0)  # the late ones left the window
    cost = miss_cost(30.0, 0.08)  # both transients' inferences, the one in flight, the ones that show it
    assert cost == 1 + 2 + 2 * 30.0 * 0.08
    rich, poor = stream(30.0, 0), stream(30.0, 3)  # budgets 9 and 6 over 30 s
    assert unaffordable_miss(MoveBet(Prediction(False), 0.08), [rich], 1.0, 30.0) == ""
    why = unaffordable_miss(MoveBet(Prediction(False), 0.08), [rich, poor], 1.0, 30.0)
    assert "s" in why and "late budget" in why
    # a move predicted to meet every target, or faster than a point measured to, cannot miss
    assert unaffordable_miss(MoveBet(Prediction(True), 0.08), [poor], 1.0, 30.0) == ""
    assert unaffordable_miss(MoveBet(Prediction(False), 0.08, safe=frozenset({"met-point"})), [poor], 1.0, 30.0) == ""
    # a stream predicted to meet its target there does not pay for another stream's miss
    assert unaffordable_miss(MoveBet(Prediction(False, met_by=("s",)), 0.08), [poor], 1.0, 30.0) == ""
    # a faster stream pays more for the same transients, and has more to pay with
    assert miss_cost(250.0, 0.08) > miss_cost(30.0, 0.08)
    assert stream(250.0, 0).late_budget(1.0, 30.0) > rich.late_budget(1.0, 30.0)


class Slow:
    """A stream's prediction at a point where it may miss: its mean latency, uncertainty and target."""

    def __init__(self, latency_s: float, target_s: float) -> None:
        self.latency_s, self.latency_std_s, self.target_s = latency_s, 0.1 * latency_s, target_s

    def meets(self) -> bool:
        return False


def test_the_inference_in_flight_at_an_escape_is_paid_for_the_share_of_time_one_is():
    from edge_roofline.governor.verdicts import MoveBet, busy_share, miss_cost, unaffordable_miss
    # A 1 ms inference every 33 ms (thor_tight@seed4) is seldom in flight when the miss is escaped:
    # 3 + 4.8 late priced with one always in flight, more than a budget of 7 (two probes there cost 3 and 2).
    point = Prediction(False)
    point.stream = lambda name: Slow(1e-3, 0.9e-3)
    assert busy_share(point.stream("s"), 30.0) == pytest.approx(30.0 * 1.1e-3)
    assert miss_cost(30.0, 0.08, 0.0, 1.0) > 7.0 > miss_cost(30.0, 0.08, 0.0, busy_share(Slow(1e-3, 0.9e-3), 30.0))
    assert unaffordable_miss(MoveBet(point, 0.08), [stream(30.0, 2)], 1.0, 30.0) == ""
    # a stream that queues (its latency a period or more there), or one with no prediction, has one in flight
    assert busy_share(Slow(0.05, 0.01), 30.0) == 1.0 and busy_share(None, 30.0) == 1.0
    saturated = Prediction(False)
    saturated.stream = lambda name: Slow(0.05, 0.01)
    assert "late budget" in unaffordable_miss(MoveBet(saturated, 0.08), [stream(30.0, 2)], 1.0, 30.0)


def risky_choose(monkeypatch):
    """``choose`` that, while it may explore, explores the slowest point that is predicted to miss."""
    real = selection.choose
    tried = []

    def choose(preds, current, **kw):
        misses = [p for p in preds if not p.meets() and p.point != current.point]
        if kw["settings"].explore and misses:
            pick = min(misses, key=lambda p: p.power_w)
            tried.append(pick.point.name)
            return Choice(pick, "exploring a point that may miss", True)
        return real(preds, current, **kw)
    monkeypatch.setattr(selection, "choose", choose)
    return tried


def test_the_governor_makes_no_move_that_may_miss_beyond_a_late_budget(tmp_path, monkeypatch):
    tried = risky_choose(monkeypatch)
    gov, platform, clock = make(tmp_path, target_latency_ms=8.0, late_window_s=5.0, change_grace_s=0.0)
    for s in gov.streams.values():  # late inferences already spent (they never leave this run's window)
        s.late_at_s.extend([clock.now_s() + 10.0] * 10)
    decisions = drive_settle(gov, platform, clock, 3.0)
    assert tried, "the scripted choice never offered a point that may miss"
    # 40 Hz over 5 s: 2 late inferences at 1 %, or one miss's window; 10 are spent
    assert not any(d.applied and d.transition == Transition.EXPLORE for _, d in decisions)
    gov.config = replace(gov.config, late_window_s=100.0)  # 40 late inferences over 100 s: a miss is paid
    decisions = drive_settle(gov, platform, clock, 3.0)
    assert any(d.applied and d.transition == Transition.EXPLORE for _, d in decisions)


def test_a_backlog_that_grows_after_a_move_is_the_points():
    period_s, settle_s = 0.01, 0.05
    draining, growing = Move(0.0, frozenset({"emc"}), settle_s), Move(0.0, frozenset({"emc"}), settle_s)
    # a sample inside the transient, then the ones queued behind it (each started as the one
    # before finished)
    assert draining.owns("s", 0.04, 0.09) and growing.owns("s", 0.04, 0.09)
    finish_d = finish_g = 0.09
    owned_d, owned_g = [], []
    for k in range(1, 6):
        arrival_s = 0.04 + k * period_s
        finish_d, finish_g = finish_d + 0.006, finish_g + 0.012  # service under / over the period
        owned_d.append(draining.owns("s", arrival_s, finish_d))
        owned_g.append(growing.owns("s", arrival_s, finish_g))
    assert all(owned_d)  # the move's backlog, draining
    assert owned_g == [False] * 5  # a point that cannot keep up: its own, judged at once


def test_no_move_for_energy_while_a_stream_is_late(tmp_path):
    (tmp_path / "reference").mkdir()
    (tmp_path / "late").mkdir()
    gov, platform, clock = make(tmp_path / "reference")
    start_s = clock.now_s()
    reference = drive_settle(gov, platform, clock, 3.0, step_s=0.01)
    t_move, energy_move = next((t, d.transition) for t, d in reference if d.applied and t > start_s + 1.0
                               and d.transition in (Transition.EXPLORE, Transition.IMPROVE))
    # The same run up to just before that move, then one late inference (not a miss: one sample)
    gov, platform, clock = make(tmp_path / "late")
    drive_settle(gov, platform, clock, t_move - clock.now_s() - 1e-3, step_s=0.01)
    now_s = clock.now_s()
    target_s = gov.streams[next(iter(gov.streams))].config.target_latency_s
    gov.observe_inference(1.05 * target_s, now_s)
    held = gov.step(now_s)
    assert held.transition == Transition.HOLD and not held.applied and "late" in held.reason, held.reason
    gov.observe_inference(0.5 * target_s, now_s + 1e-4)  # on time again: the queue has drained
    assert gov.step(now_s + 1e-4).transition == energy_move


def test_no_exploration_while_a_stream_is_late(tmp_path, monkeypatch):
    # A point tried while a queue drains a backlog may drain it slower, and the move's
    # transient prolongs it (agx_saturated@seed25: a step down from a point near saturation in
    # a burst's backlog, 21 -> 31 late): the choice is made without exploring, and exploring
    # resumes once the queue has drained. (Inside a workload change's grace, here the start's
    # first 0.5 s, late ones are the change's: exploring the new work is not held off.)
    (tmp_path / "reference").mkdir()
    (tmp_path / "late").mkdir()
    gov, platform, clock = make(tmp_path / "reference", change_grace_s=0.5)
    start_s = clock.now_s()
    reference = drive_settle(gov, platform, clock, 3.0, step_s=0.01)
    t_move = next(t for t, d in reference if d.applied and t > start_s + 0.5 and d.transition == Transition.EXPLORE)
    gov, platform, clock = make(tmp_path / "late", change_grace_s=0.5)
    drive_settle(gov, platform, clock, t_move - clock.now_s() - 1e-3, step_s=0.01)
    explored = []
    choose = selection.choose
    monkeypatch.setattr(selection, "choose", lambda *a, **k: explored.append(k["settings"].explore) or choose(*a, **k))
    now_s = clock.now_s()
    target_s = gov.streams[next(iter(gov.streams))].config.target_latency_s
    gov.observe_inference(1.05 * target_s, now_s)
    held = gov.step(now_s)
    assert explored and not any(explored) and not held.applied and "late" in held.reason, (explored, held.reason)
    explored.clear()
    gov.observe_inference(0.5 * target_s, now_s + 1e-4)  # on time again: the queue has drained
    gov.step(now_s + 1e-4)
    assert explored[0]  # exploring is offered again (whether one is affordable is the late budget's call)
    # The same late inference inside the start's grace (2 s): the change's, exploring goes on
    (tmp_path / "grace").mkdir()
    gov, platform, clock = make(tmp_path / "grace", change_grace_s=2.0)
    assert t_move < clock.now_s() + 2.0
    drive_settle(gov, platform, clock, t_move - clock.now_s() - 1e-3, step_s=0.01)
    explored.clear()
    gov.observe_inference(1.05 * target_s, clock.now_s())
    gov.step(clock.now_s())
    assert explored[0]


def test_a_slow_stream_can_always_afford_one_miss_per_window_that_holds_it():
    # 15 Hz over 30 s: 4.5 late inferences at 1 %, short of one miss (5): without a longer
    # window such a stream would block every move that may miss, for ever.
    from edge_roofline.governor.verdicts import MoveBet, miss_cost, unaffordable_miss
    slow = stream(15.0, 0)
    cost = miss_cost(15.0, 0.067)
    assert TAIL_SHARE * 15.0 * 30.0 < cost
    assert unaffordable_miss(MoveBet(Prediction(False), 0.067), [slow], 1.0, 30.0) == ""
    # ... once per such window: a miss spent, the next waits until it has left the window
    spent = stream(15.0, 5)
    assert "late budget" in unaffordable_miss(MoveBet(Prediction(False), 0.067), [spent], 1.0, 30.0)
    assert unaffordable_miss(MoveBet(Prediction(False), 0.067), [spent], 1.0 + cost / (TAIL_SHARE * 15.0), 30.0) == ""


def test_late_inferences_in_a_changes_grace_are_the_changes(tmp_path):
    # A workload change's own transient (the grace after it) is not paid from the late budget:
    # late ones inside it are not counted, and a miss whose late ones all fall inside it is free.
    from edge_roofline.governor.verdicts import MoveBet, miss_cost, unaffordable_miss
    s = Stream(StreamConfig(name="s", target_latency_ms=10.0, percentile=95.0))
    s.calibrated_rate_hz = 30.0
    for _ in range(6):
        s.note_inference(0.02, 0.0, counted=False)
    assert s.late == 6 and s.late_budget(1.0, 30.0) == pytest.approx(TAIL_SHARE * 30.0 * 30.0)
    spent = stream(30.0, 9)  # its whole budget spent
    cost_s = miss_cost(30.0, 0.08) / 30.0  # how long a miss's late ones take to come
    assert "late budget" in unaffordable_miss(MoveBet(Prediction(False), 0.08), [spent], 1.0, 30.0, 1.0 + cost_s / 2)
    assert unaffordable_miss(MoveBet(Prediction(False), 0.08), [spent], 1.0, 30.0, 1.0 + cost_s) == ""
    # the governor: an inference started in a change's grace is not counted, one after it is
    gov, platform, clock = make(tmp_path, change_grace_s=2.0)
    gov.set_target(10.0, 95.0)
    st = next(iter(gov.streams.values()))
    gov.observe_inference(0.05, clock.now_s() + 1.0)
    assert st.late == 1 and not st.late_at_s
    gov.observe_inference(0.05, clock.now_s() + 2.5)
    assert list(st.late_at_s) == [clock.now_s() + 2.5]


def test_a_move_whose_transients_run_at_a_point_a_miss_rules_out_pays_them():
    # Each clock runs at the lower of old and new until it settles: cpu576-gpu714-emc2133 ->
    # cpu2202-gpu408-emc3199 runs at cpu576-gpu408-emc2133 meanwhile. Measured to miss there, the
    # transients make late ones though both ends meet (ms_agx_slow_actuation@30: 2 late, unpaid,
    # with 4 of a budget of 7.8 spent; a burst at the point held then made 8 of 720 late).
    from edge_roofline.governor.rules import Dominance
    from edge_roofline.governor.verdicts import MoveBet, miss_cost, unaffordable_miss

    from .test_rules import grid
    dominance = Dominance(DEVICE, grid())
    held, moved_to = "MAXN/c6-cpu576-gpu714-emc2133", "MAXN/c6-cpu2202-gpu408-emc3199"
    assert dominance.transient(held, moved_to) == dominance.transient(moved_to, held) == "MAXN/c6-cpu576-gpu408-emc2133"
    assert dominance.transient(held, "MAXN/c6-cpu576-gpu408-emc2133") is None  # one step: its slower end
    settle_s = 0.04
    cost = miss_cost(30.0, settle_s, shown=False)
    assert cost == 2 * 30.0 * settle_s  # out and back, no miss to show
    poor = stream(30.0, 7)  # a budget of 2
    assert unaffordable_miss(MoveBet(Prediction(True), settle_s), [poor], 1.0, 30.0) == ""
    why = unaffordable_miss(MoveBet(Prediction(True), settle_s, through_miss=True), [poor], 1.0, 30.0)
    assert "transients at a point that misses" in why
    assert unaffordable_miss(MoveBet(Prediction(True), settle_s, through_miss=True), [stream(30.0, 0)], 1.0, 30.0) == ""


def test_a_stream_that_just_joined_borrows_from_the_window_ahead_only_as_long_again():
    # 1 % is promised over the inferences a stream has: one that joined 1 s ago may leave in
    # 1 s more, so its budget covers 2 s of inferences, not a whole window's.
    from edge_roofline.governor.verdicts import MoveBet, unaffordable_miss
    young = stream(30.0, 0)
    young.counted_since_s = 0.0
    assert young.late_budget(1.0, 30.0) == pytest.approx(TAIL_SHARE * 30.0 * 2.0)
    assert young.late_budget(-1.0, 30.0) == 0.0  # not counted yet (its join's grace)
    assert young.late_budget(20.0, 30.0) == pytest.approx(TAIL_SHARE * 30.0 * 30.0)  # a whole window's
    assert "late budget" in unaffordable_miss(MoveBet(Prediction(False), 0.08), [young], 1.0, 30.0)
    assert unaffordable_miss(MoveBet(Prediction(False), 0.08), [young], 20.0, 30.0) == ""


def test_a_change_the_governor_only_infers_is_dated_by_its_first_late_inference(tmp_path):
    # A surprise (the work changed unannounced, seen in the governor's own errors) restarts
    # exploration; it is dated by the first late inference in the samples that showed it: late
    # ones from then, for the grace, are the change's (governor-eval's criteria count neither).
    # Counting them spent agx_interference's budget on the co-runner: the governor held
    # emc2133 after it left (1.048 -> 1.056 x the oracle, as late).
    gov, platform, clock = make(tmp_path, change_grace_s=2.0)
    drive_settle(gov, platform, clock, 3.0)
    st = next(iter(gov.streams.values()))
    now = clock.now_s()
    st.late_at_s.clear()
    st.late_at_s.extend([now - 4.0, now - 0.3, now - 0.2])  # a move's miss, then the change's
    gov._surprised([st], True, now - 1.0)  # the samples that showed it began 1 s ago
    assert list(st.late_at_s) == [now - 4.0]  # a late one before the change stays counted
    gov.observe_inference(1.0, now + 2.5)  # started inside the grace (from now - 0.3)
    assert len(st.late_at_s) == 1
    gov.observe_inference(1.0, now + 3.0)  # started after it
    assert len(st.late_at_s) == 2
    # One that showed no late inference earns no grace: the next late one counts.
    gov._surprised([st], False, now + 3.5)
    gov.observe_inference(1.0, now + 4.0)
    assert len(st.late_at_s) == 3
    gov.set_target(30.0, 95.0)  # a change told: its grace holds
    gov.observe_inference(1.0, clock.now_s() + 1.5)
    assert len(st.late_at_s) == 3


def test_only_a_stream_that_joins_a_running_mix_is_counted_from_its_join(tmp_path):
    # The streams the governor starts with (seen inside its start's grace) are the deployment's:
    # they borrow from the window ahead; one first seen later may leave as soon as it came.
    (tmp_path / "start").mkdir()
    (tmp_path / "join").mkdir()
    gov, platform, clock = make(tmp_path / "start", change_grace_s=2.0)
    gov.observe_inference(0.005, clock.now_s() + 0.1)
    assert next(iter(gov.streams.values())).counted_since_s == -math.inf
    two = [{"name": n, "target_latency_ms": 20.0, "percentile": 95.0} for n in ("a", "b")]
    gov, platform, clock = make(tmp_path / "join", change_grace_s=2.0, streams=two)
    gov.observe_inference(0.005, clock.now_s() + 0.1, stream="a")
    gov.observe_inference(0.005, clock.now_s() + 0.5, stream="b")  # inside the start's grace
    gov.observe_inference(0.005, clock.now_s() + 5.0, stream="a")
    gov.stream_left("b")
    assert gov.streams["b"].counted_since_s == -math.inf
    gov.observe_inference(0.005, clock.now_s() + 5.0, stream="b")  # back: a join
    assert gov.streams["a"].counted_since_s == -math.inf
    assert gov.streams["b"].counted_since_s == pytest.approx(clock.now_s() + 5.0 + 2.0)


def test_a_rate_change_seen_in_a_window_is_graced_from_when_the_window_began(tmp_path):
    # A rate change is seen a window after it happened: its grace runs from the window's start,
    # not from when it was seen (the late ones after the change's own grace count).
    gov, platform, clock = make(tmp_path, change_grace_s=2.0)
    drive_settle(gov, platform, clock, 4.0, rate_hz=40.0)
    before_s = gov._workload_since_s
    drive_settle(gov, platform, clock, 3.0, rate_hz=10.0)
    assert gov._workload_since_s > before_s, "the rate change was not seen"
    assert gov._counted_from_s < gov._workload_since_s + 2.0


def test_a_rate_change_at_a_held_point_is_seen_though_the_window_creeps_to_it(tmp_path):
    # Held at one point, the sliding window's rate moves from 40 Hz to 10 Hz in steps each under
    # rate_change_rel: measured from the rate the points were ranked at, the change still shows.
    gov, platform, clock = make(tmp_path, explore_budget=0, window_s=5.0)
    drive_settle(gov, platform, clock, 8.0, rate_hz=40.0)
    before_s, point = gov._workload_since_s, gov.current
    drive_settle(gov, platform, clock, 3.2, rate_hz=10.0)  # the window's rate: 34, 28, 22 Hz
    assert gov.current == point, "held at one point (the premise)"
    assert gov._workload_since_s > before_s, "the rate change was not seen"


def test_a_rate_change_seen_inside_a_told_changes_grace_is_that_change(tmp_path):
    # A phase changes the target (told) and the input rate (seen in a window that began inside the
    # told change's grace): one change, one grace. Dating a second grace from that window let late
    # ones the told change's grace no longer covers go uncounted (ms_agx_slow_actuation@seed27:
    # counted from 12.44 s, not 12.0 s; an exploration's miss spent them: 1.67 -> 1.11 % late).
    gov, platform, clock = make(tmp_path, change_grace_s=2.0)
    drive_settle(gov, platform, clock, 4.0, rate_hz=40.0)
    gov.set_target(25.0, 95.0)
    told_s = clock.now_s()
    assert gov._counted_from_s == pytest.approx(told_s + 2.0)
    before_s = gov._workload_since_s
    drive_settle(gov, platform, clock, 3.0, rate_hz=10.0)
    assert gov._workload_since_s > before_s, "the rate change was not seen"
    assert gov._counted_from_s == pytest.approx(told_s + 2.0)


def test_a_preset_changes_long_transient_gets_no_longer_window():
    # A slow stream's window is stretched to hold one miss of a move within the preset; a move
    # across presets (a transient of hundreds of ms) costs more than that window holds at 1 %.
    from edge_roofline.governor.verdicts import MoveBet, miss_cost, unaffordable_miss
    fast = stream(60.0, 0)
    assert miss_cost(60.0, 0.34) > TAIL_SHARE * 60.0 * 30.0 > miss_cost(60.0, 0.04)
    assert unaffordable_miss(MoveBet(Prediction(False), 0.34), [fast], 1.0, 30.0) == ""  # stretched for it
    assert "late budget" in unaffordable_miss(MoveBet(Prediction(False), 0.34, clocks_settle_s=0.04), [fast], 1.0, 30.0)
    assert unaffordable_miss(MoveBet(Prediction(False), 0.04, clocks_settle_s=0.04), [fast], 1.0, 30.0) == ""


def test_an_exploration_that_would_not_pay_holds_no_other_back(tmp_path, monkeypatch):
    """While it may explore, the scripted choice offers first every point that saves nothing
    (its move's transients would not pay), then one that saves: the first are passed over, the
    saving one is explored (a held unpaid candidate once blocked every exploration for 10-30 s)."""
    real, dear, cheap = selection.choose, set(), set()

    def choose(preds, current, **kw):
        fresh = [p for p in preds
                 if p.point.name not in kw["evidence"].measured and p.point != current.point and p.meets()]
        costly = [p for p in fresh if p.power_w - p.power_std_w > current.power_w]
        saving = [p for p in fresh if p.power_w < current.power_w]
        if kw["settings"].explore and not kw["violations"] and costly and saving:
            dear.add(max(costly, key=lambda p: p.power_w).point.name)
            return Choice(max(costly, key=lambda p: p.power_w), "exploring a point that saves nothing", True)
        if kw["settings"].explore and not kw["violations"] and saving:
            cheap.add(min(saving, key=lambda p: p.power_w).point.name)
            return Choice(min(saving, key=lambda p: p.power_w), "exploring a point that saves", True)
        return real(preds, current, **kw)
    gov, platform, clock = make(tmp_path)
    drive_settle(gov, platform, clock, 3.0)  # settled below MAXN: dearer points exist
    monkeypatch.setattr(selection, "choose", choose)
    gov.set_target(25.0, 95.0)  # exploring again
    decisions = drive_settle(gov, platform, clock, 3.0)
    explored = [d.point.name for _, d in decisions if d.applied and d.transition == Transition.EXPLORE]
    assert dear, "the scripted choice never offered a point that saves nothing"
    assert explored and explored[0] in cheap - dear  # the first exploration is the saving one


def test_a_second_best_exploration_is_made_only_where_no_stream_was_late_within_the_window():
    """A move the choice fell back to (a better one did not pay) does not add a miss to late
    inferences of a workload change, which the budget, started afresh, no longer shows."""
    from edge_roofline.governor.verdicts import MoveBet, unaffordable_miss
    s = stream(30.0, 1)  # one late inference at t = 0
    s.late_at_s.clear()  # a change started its budget afresh
    assert unaffordable_miss(MoveBet(Prediction(False), 0.05), [s], 1.0, 30.0) == ""  # a first choice
    assert "second-best" in unaffordable_miss(MoveBet(Prediction(False), 0.05, second_best=True), [s], 1.0, 30.0)
    assert unaffordable_miss(MoveBet(Prediction(False), 0.05, second_best=True), [s], 31.0, 30.0) == ""  # long ago
    assert unaffordable_miss(MoveBet(Prediction(False, met_by=("s",)), 0.05, second_best=True), [s], 1.0, 30.0) == ""


def test_a_probe_that_saves_nothing_is_not_paid_from_the_late_budget():
    """A move that may miss and is predicted to draw no less power than the point held (known to
    meet) buys only information: after a change's grace its misses are not paid from the late
    budget, which must also cover the held point's own tail and bursts later in the window."""
    from edge_roofline.governor.verdicts import MoveBet, unaffordable_miss
    rich = stream(30.0, 0)  # its whole budget left: a miss (6) is affordable
    probe, saving = Prediction(False, power_w=12.0), Prediction(False, power_w=11.0)
    assert "probe" in unaffordable_miss(MoveBet(probe, 0.05, held_w=12.0), [rich], 10.0, 30.0)
    assert unaffordable_miss(MoveBet(saving, 0.05, held_w=12.0), [rich], 10.0, 30.0) == ""
    assert unaffordable_miss(MoveBet(probe, 0.05), [rich], 10.0, 30.0) == ""  # nothing known to meet is held
    # in a change's grace its misses are the change's: free, so made
    assert unaffordable_miss(MoveBet(probe, 0.05, held_w=12.0), [rich], 1.0, 30.0, 2.0) == ""
    # predicted to meet, or a stream that meets there: nothing to pay
    assert unaffordable_miss(MoveBet(Prediction(True, power_w=13.0), 0.05, held_w=12.0), [rich], 10.0, 30.0) == ""
    assert unaffordable_miss(MoveBet(Prediction(False, ("s",), 13.0), 0.05, held_w=12.0), [rich], 10.0, 30.0) == ""


def test_the_governor_makes_no_probe_that_may_miss_after_the_grace(tmp_path, monkeypatch):
    """The core prices an axis probe against the cheapest point known to meet
    (verdicts.held_power_w): with a late budget that pays any miss, a dearer probe that may miss is
    not made; the same point offered as another exploration (a step down one axis, say) is."""
    real, offered = selection.choose, []

    def choose(preds, current, **kw):
        dear = [p for p in preds if not p.meets() and p.power_w >= current.power_w and p.point != current.point]
        if kw["settings"].explore and dear and current.meets():
            pick = max(dear, key=lambda p: p.power_w)
            offered.append(pick.point.name)
            return Choice(pick, "exploring", True)
        return real(preds, current, **kw)
    monkeypatch.setattr(selection, "choose", choose)
    made = {}
    for probes in (True, False):
        gov, platform, clock = make(tmp_path / str(probes), target_latency_ms=8.0, late_window_s=100.0,
                                    change_grace_s=0.0)
        if probes:  # every point is one step down an axis not isolated
            monkeypatch.setattr(gov.dominance, "probes", lambda met, tried: {p.name for p in gov.candidates})
        decisions = drive_settle(gov, platform, clock, 3.0)
        assert offered, "the scripted choice never offered a dear point"
        made[probes] = any(d.applied and d.point.name in offered for _, d in decisions)
    assert made == {True: False, False: True}


def test_a_stream_learns_the_late_first_inference_after_a_move_and_a_miss_pays_it_out_and_back():
    # The first inference after an EMC move stalls: at a tight target it is late however short
    # the settle; the point moved to meets (its settled samples are on target).
    from edge_roofline.governor.verdicts import MoveBet, unaffordable_miss
    s = stream(30.0, 0)  # budget 9 over 30 s
    settle_s = 0.01
    emc, gpu = frozenset({"emc"}), frozenset({"gpu"})
    assert unaffordable_miss(MoveBet(Prediction(False), settle_s, domains=emc), [s], 1.0, 30.0) == ""  # 3.6 <= 9
    settle = SettleTimes(dict.fromkeys(DOMAINS, settle_s), 0.3)
    for k in range(3):
        move = Move(float(k), emc, settle_s)
        for i in range(12):  # 30 Hz: the first one stalls (40 ms, target 10 ms), then 5 ms
            move.learn(s, k + (i + 1) / 30.0, 0.04 if i == 0 else 0.005, settle)
    assert s.stalls.late_per_move(emc) == 1.0 and s.stalls.late_per_move(gpu) == 0.0
    poor = stream(30.0, 3)  # budget 6: a miss costs 1 + 2 + 2 x (0.3 + 1) = 5.6 ...
    poor.stalls = s.stalls
    assert unaffordable_miss(MoveBet(Prediction(False), settle_s, domains=gpu), [poor], 1.0, 30.0) == ""
    assert unaffordable_miss(MoveBet(Prediction(False), settle_s, domains=emc), [poor], 1.0, 30.0) == ""
    poorer = stream(30.0, 4)  # ... more than a budget of 5, without the stalls only 3.6
    poorer.stalls = s.stalls
    assert "late budget" in unaffordable_miss(MoveBet(Prediction(False), settle_s, domains=emc), [poorer], 1.0, 30.0)
    assert unaffordable_miss(MoveBet(Prediction(False), settle_s, domains=gpu), [poorer], 1.0, 30.0) == ""


def test_a_move_to_a_point_that_misses_teaches_no_stall():
    s = stream(30.0, 0)
    move = Move(0.0, frozenset({"emc"}), 0.01)
    for i in range(12):
        move.learn(s, i / 30.0, 0.02, SettleTimes(dict.fromkeys(DOMAINS, 0.01), 0.3))
    assert s.stalls.late_per_move(frozenset({"emc"})) == 0.0


def test_a_model_switch_told_after_its_first_late_frames_is_graced_from_their_start(tmp_path):
    # The new model's first frames end before its id reaches the governor (set_model comes at the
    # next step): they are the switch's, as governor-eval's criteria count a phase's grace from
    # its start, and the grace runs from the first one's start, not from the call.
    from .test_moves import analysis
    gov, platform, clock = make(tmp_path, change_grace_s=2.0)
    now = clock.now_s() + 10.0
    st = next(iter(gov.streams.values()))
    gov.observe_inference(0.005, now - 1.0)  # the old model, on time (counted: after the start's grace)
    gov.observe_inference(0.030, now - 0.5)  # a late one before the switch, then an on-time one
    gov.observe_inference(0.005, now - 0.2)
    gov.observe_inference(0.030, now - 0.05)  # the new model's first frames: late, in a row
    gov.observe_inference(0.032, now - 0.01)
    clock.advance(now - clock.now_s())
    gov.set_model(replace(analysis(), model="big"), "zoo:big")
    assert list(st.late_at_s) == [now - 0.5]  # the run the switch began is uncounted; the one before stays
    assert gov._counted_from_s == pytest.approx(now - 0.05 - 0.030 + 2.0)  # its grace from the first one's start
    # A switch told while the latest frame was on time is dated from the call.
    gov.observe_inference(0.005, now + 3.0)
    clock.advance(3.0)
    gov.set_model(analysis(), "zoo:toy")
    assert gov._counted_from_s == pytest.approx(now + 3.0 + 2.0)


def test_a_rate_change_is_seen_as_soon_as_a_window_of_the_new_rate_shows_it(tmp_path):
    # 10 -> 40 Hz at a held point: 0.4 s later the 5 s window averages 12 Hz (under
    # rate_change_rel), but 16 inferences at 40 Hz show the new rate: the points are ranked at it.
    gov, platform, clock = make(tmp_path, explore_budget=0, window_s=5.0)
    drive_settle(gov, platform, clock, 8.0, rate_hz=10.0)
    before_s = gov._workload_since_s
    drive_settle(gov, platform, clock, 0.45, rate_hz=40.0)
    assert gov._workload_since_s > before_s, "the rate change was not seen"
    assert gov.streams[next(iter(gov.streams))].ranked_rate_hz == pytest.approx(40.0, rel=0.05)


def test_a_point_predicted_no_faster_than_one_that_missed_pays_as_one_that_may_miss():
    """thor_chat_detector@seed2: once a GPU clock's miss verdict expired, the model, still wrong
    there, predicted it (and its CPU-clock twin, no faster) to meet: a move back was made as one
    that cannot miss, and cost the detector 7 late frames with a budget of 2 left. Doubted
    (rules.no_faster_than of the points measured to miss), the prediction's "meets" pays nothing."""
    from edge_roofline.governor.verdicts import MoveBet, unaffordable_miss
    rich, poor = stream(30.0, 0), stream(30.0, 7)  # budgets 9 and 2 over 30 s
    assert unaffordable_miss(MoveBet(Prediction(True, met_by=("s",)), 0.04), [poor], 1.0, 30.0) == ""
    why = unaffordable_miss(MoveBet(Prediction(True, met_by=("s",)), 0.04, doubted=True), [poor], 1.0, 30.0)
    assert "late budget" in why
    assert unaffordable_miss(MoveBet(Prediction(True, met_by=("s",)), 0.04, doubted=True), [rich], 1.0, 30.0) == ""
    # measured to meet at a point no faster: the doubt is settled by measurement
    measured = MoveBet(Prediction(True), 0.04, safe=frozenset({"met-point"}), doubted=True)
    assert unaffordable_miss(measured, [poor], 1.0, 30.0) == ""


def test_late_inferences_at_a_point_explored_in_a_grace_are_the_explorations(tmp_path, monkeypatch):
    # A change's grace excuses what the change made late, not what the governor's own exploring
    # made late in it: those count against the late budget, so the moves after the grace cannot
    # spend it a second time (thor_chat_detector: 3 late frames per seed from a step down in
    # the start's grace, then up to 9 more from exploring after it, then the held point's tail).
    # Where the criteria count every inference (grace_excuses_exploring false: the language
    # models'); the frame criteria excuse a change's first 2 s, exploring included (the default).
    tried = risky_choose(monkeypatch)
    gov, platform, clock = make(tmp_path, change_grace_s=2.0, grace_excuses_exploring=False)
    start_s = clock.now_s()
    decisions = drive_settle(gov, platform, clock, 1.5, step_s=0.01)
    explored_s = next(t for t, d in decisions if d.applied and d.transition == Transition.EXPLORE)
    assert tried and explored_s < start_s + 1.5
    st = next(iter(gov.streams.values()))
    late_s = 2.0 * st.config.target_latency_s
    now_s = clock.now_s()
    gov.observe_inference(late_s, now_s)  # started after the exploration, inside the grace
    assert now_s - late_s > explored_s and now_s < start_s + 2.0
    assert list(st.late_at_s)[-1] == now_s
    # A change told: a new grace, nothing explored in it yet: a late one there is the change's
    gov.set_target(st.config.target_latency_ms * 1.5, 95.0)
    counted = len(st.late_at_s)
    gov.observe_inference(3.0 * st.config.target_latency_s, now_s + 0.1)
    assert len(st.late_at_s) == counted
    # The default: the grace excuses what exploring in it made late
    (tmp_path / "excused").mkdir()
    gov, platform, clock = make(tmp_path / "excused", change_grace_s=2.0)
    drive_settle(gov, platform, clock, 1.5, step_s=0.01)
    st = next(iter(gov.streams.values()))
    gov.observe_inference(late_s, clock.now_s())
    assert clock.now_s() - late_s > explored_s and not st.late_at_s


def test_a_probe_refused_for_saving_nothing_holds_no_probe_that_saves_back(tmp_path, monkeypatch):
    """A probe refused because it saves nothing over the point held (it buys only information) is
    passed over, not every exploration with it: a probe that saves is still weighed. Refusing one
    turned exploring off, and the step down the memory clock under the point held was never tried
    (ms_thor_two@seed15: a probe under a dearer point refused, 1.077 x oracle; passed over, 1.021)."""
    real, dear, cheap = selection.choose, [], []

    def choose(preds, current, **kw):
        held_w = min((p.power_w for p in preds if p.meets()), default=current.power_w)
        fresh = [p for p in preds
                 if not p.meets() and p.point != current.point and p.point.name not in kw["evidence"].measured]
        if kw["settings"].explore and current.meets() and fresh:
            pick = max(fresh, key=lambda p: p.power_w)  # the dearest first: every one saving nothing, then a saving one
            (dear if pick.power_w >= held_w else cheap).append(pick.point.name)
            return Choice(pick, "exploring one step down an axis the measurements have not isolated", True)
        return real(preds, current, **kw)
    monkeypatch.setattr(selection, "choose", choose)
    gov, platform, clock = make(tmp_path, target_latency_ms=8.0, late_window_s=100.0, change_grace_s=0.0)
    monkeypatch.setattr(gov.dominance, "probes", lambda met, tried: {p.name for p in gov.candidates})
    decisions = drive_settle(gov, platform, clock, 3.0)
    assert dear, "the scripted choice never offered a probe that saves nothing"
    assert any(d.applied and d.point.name in cheap for _, d in decisions), (dear[:3], cheap[:3])


def test_a_heavier_work_is_dated_from_the_miss_that_first_showed_it(tmp_path):
    # Another process takes the GPU: the point held misses first (judged a miss, escaped to a
    # faster point that meets), then a point measured to meet misses and tells the change. The
    # change began at the first miss: dated from the second point's samples, its grace ran
    # 0.77 s past the change's and an exploration there made late ones no budget paid
    # (agx_interference@9: 1.03 % late). A lighter work is never dated from a miss, and a miss
    # judged longer than a grace before is not its start.
    def surprised(slower: bool, board: str):
        gov, platform, clock = make(tmp_path / board, change_grace_s=2.0)
        st = next(iter(gov.streams.values()))
        t0 = clock.now_s() + 10.0
        for k in range(6):  # at the point held: on time, then late from t0 on
            t_s, latency_s = t0 + (k - 3) * 0.033, 0.030 if k >= 3 else 0.005
            st.note_inference(latency_s, t_s)
            st.add_judged(t_s, latency_s, 10.0)
        st.note_miss(t0 + 0.1)
        st.latencies.clear()  # the escape
        st.note_inference(0.005, t0 + 0.4)  # on time at the faster point
        for t_s in (t0 + 0.77, t0 + 0.8):  # late at the point measured to meet
            st.note_inference(0.030, t_s)
        clock.advance(t0 + 0.8 - clock.now_s())
        gov._surprised([st], slower, t0 + 0.77)
        return gov, st, t0

    gov, st, t0 = surprised(True, "heavier")
    assert not st.late_at_s  # the miss's late ones are the change's
    assert gov._counted_from_s == pytest.approx(t0 + 2.0)
    gov, st, t0 = surprised(False, "lighter")
    assert list(st.late_at_s) == pytest.approx([t0, t0 + 0.033, t0 + 0.066])
    assert gov._counted_from_s == pytest.approx(t0 + 0.77 + 2.0)
    from edge_roofline.governor.streams import uncount_since
    st.note_inference(0.030, t0 + 5.0)
    st.missed_s, st.missed_from_s = t0 + 2.5, t0 + 2.4
    assert uncount_since([st], t0 + 5.0, 2.0) == pytest.approx(t0 + 5.0)


def test_asking_a_late_budget_forgets_no_late_inference():
    # A slow stream's budget is asked over a window longer than the late window (verdicts.py):
    # the late ones between the two windows count there, whatever was asked before. Asking over
    # the late window first used to drop them, and the longer window then counted none.
    s = stream(1.0, 0)
    for t_s in (0.0, 10.0, 20.0):
        s.note_inference(0.02, t_s)
    assert s.late_budget(60.0, 30.0) == pytest.approx(TAIL_SHARE * 1.0 * 30.0)  # none in the last 30 s
    assert s.late_budget(60.0, 300.0) == pytest.approx(TAIL_SHARE * 1.0 * 300.0 - 3)
    assert s.late_budget(60.0, 300.0, counted_from_s=5.0) == pytest.approx(TAIL_SHARE * 1.0 * 300.0 - 2)
