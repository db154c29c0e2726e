"""Governor.step as a state machine (states.py): each named transition, with the state it leads to."""

from edge_roofline.governor import core
from edge_roofline.governor.states import State, Transition

from .fake_settle import drive_settle
from .test_moves import make


def transitions(decisions):
    return [(d.transition, d.state) for _, d in decisions]


def test_off(tmp_path):
    gov, platform, clock = make(tmp_path, mode="off")
    decisions = drive_settle(gov, platform, clock, 1.0)
    assert set(transitions(decisions)) == {(Transition.OFF, State.DISABLED)} and not platform.applied


def test_wait_for_a_stream_and_for_energy(tmp_path):
    gov, platform, clock = make(tmp_path)
    assert (gov.step(clock.now_s()).transition, gov.state) == (Transition.WAIT, State.WAITING)  # nobody publishes
    first = drive_settle(gov, platform, clock, 0.2)[0][1]
    assert (first.transition, first.state) == (Transition.WAIT, State.WAITING) and "energy" in first.reason


def test_explore_settle_measure_and_hold(tmp_path):
    gov, platform, clock = make(tmp_path)
    decisions = drive_settle(gov, platform, clock, 10.0, step_s=0.01)
    seen = transitions(decisions)
    assert (Transition.EXPLORE, State.EXPLORING) in seen and (Transition.HOLD, State.SETTLED) in seen
    # Right after each move: settle (no verdict, no move), then measure.
    for (t0, d0), (t1, d1) in zip(decisions, decisions[1:]):
        if d0.applied and t1 < t0 + gov.learned.settle.of(frozenset({"cpu"})):
            assert d1.transition == Transition.SETTLE and not d1.applied
    after_explore = [d1 for (_, d0), (_, d1) in zip(decisions, decisions[1:]) if d0.transition == Transition.EXPLORE]
    assert after_explore and all(d.state == State.EXPLORING for d in after_explore)
    assert (Transition.MEASURE, State.EXPLORING) in seen and (Transition.MEASURE, State.SETTLED) in seen


def test_improve(tmp_path):
    gov, platform, clock = make(tmp_path, explore_budget=0)  # the model's choice, no exploration
    decisions = drive_settle(gov, platform, clock, 5.0, step_s=0.01)
    i = next(i for i, (_, d) in enumerate(decisions) if d.transition == Transition.IMPROVE)
    assert decisions[i][1].applied and decisions[i][1].state == State.SETTLING
    landed = next(d for _, d in decisions[i + 1:] if d.transition != Transition.SETTLE)
    assert landed.state == State.SETTLED  # the point chosen as the best: held for its dwell


def test_a_stopgap_whose_move_away_does_not_pay_yet_stays_a_stopgap(tmp_path, monkeypatch):
    """An explored point, measured, is left for the best point once the move pays its
    transients; until then it stays a stopgap, not settled, or hysteresis would hold it for good
    (ms_agx_three@seed13: an exploration 1.4 % dearer than the point it left, held to the end).
    Fails when an unpaid hold settles the point."""
    from edge_roofline.governor.policy import Choice

    gov, platform, clock = make(tmp_path, hysteresis=0.5)
    start = platform.current
    end_s = clock.now_s() + 5.0
    while not (gov.state is State.EXPLORING and platform.current != start):  # the first exploration
        drive_settle(gov, platform, clock, 0.01, step_s=0.01)
        assert clock.now_s() < end_s, "the governor never explored from its start"
    # From here the best point is the start (the one the exploration left), not an exploration.
    choose = gov._choose_affordable
    monkeypatch.setattr(gov, "_choose_affordable", lambda preds, current, *a: (
        Choice(next(q for q in preds if q.point == start), "back to the better point"), choose(preds, current, *a)[1]))
    pays_from_s = clock.now_s() + 1.0
    monkeypatch.setattr(core, "unpaid", lambda *move: (  # the move pays from pays_from_s on (this test's horizon)
        "holding: the move does not pay yet" if clock.now_s() < pays_from_s else ""))
    decisions = drive_settle(gov, platform, clock, 3.0, step_s=0.01)
    waits = [(t, d) for t, d in decisions if d.reason == "holding: the move does not pay yet"]
    assert waits and all(d.state == State.EXPLORING for _, d in waits), {d.state for _, d in waits}
    left = [(t, d) for t, d in decisions if t > waits[0][0] and d.applied]
    assert left and left[0][1].transition == Transition.IMPROVE and left[0][0] >= pays_from_s, left[:1]
    assert platform.current == start


def test_escape_from_a_miss(tmp_path):
    gov, platform, clock = make(tmp_path)
    drive_settle(gov, platform, clock, 30.0)
    held = platform.current
    platform.scale = 3.0  # the work got three times heavier
    decisions = drive_settle(gov, platform, clock, 1.0)
    escape = next(d for _, d in decisions if d.transition == Transition.ESCAPE)
    assert escape.applied and escape.state == State.SETTLING and held.name in gov.findings.missed
    i = next(i for i, (_, d) in enumerate(decisions) if d is escape)
    landed = next(d for _, d in decisions[i + 1:] if d.transition != Transition.SETTLE)
    assert landed.state == State.MEASURING  # an escape is a stopgap


def test_fall_back(tmp_path):
    gov, platform, clock = make(tmp_path)
    drive_settle(gov, platform, clock, 20.0)
    now = clock.now_s()
    clock.advance(gov.config.safety.stale_telemetry_s + 0.5)  # no power reading since
    decision = gov.step(clock.now_s())
    assert (decision.transition, decision.state) == (Transition.FALL_BACK, State.FALLBACK)
    assert platform.current == platform.found and decision.applied and clock.now_s() > now


def test_advise(tmp_path):
    gov, platform, clock = make(tmp_path, mode="advise")
    decisions = drive_settle(gov, platform, clock, 10.0)
    assert (Transition.ADVISE, State.ADVISING) in transitions(decisions) and not platform.applied


def test_a_workload_change_makes_the_point_held_a_stopgap(tmp_path):
    """measuring: the point held when a target (or model, rate, mix) changes was chosen for
    another workload: it is left as soon as it is measured, not held for the rest of its dwell."""
    gov, platform, clock = make(tmp_path, dwell_s=60.0)
    drive_settle(gov, platform, clock, 6.0)
    assert gov.state is State.SETTLED
    gov.set_target(40.0, 95.0)  # looser: slower points now meet it
    assert gov.state is State.MEASURING
    decisions = drive_settle(gov, platform, clock, 3.0)
    assert any(d.applied for _, d in decisions), "held for the dwell chosen under the old target"
