"""Verdicts need evidence and expire (issue 28): a burst is not a tail, the point with nowhere
faster to go is never ruled out, a ruled-out point is tried again once its verdict expires, and
frames of the model switched from are not judged against the new one."""

from edge_roofline.governor.verdicts import Misses, miss_events, misses_target

from .fake_law import drive, true_energy_j
from .test_governor import analysis, make


def test_a_burst_is_one_event_a_tail_many_a_level_every_sample():
    burst = [False] * 10 + [True] * 6 + [False] * 10
    tail = [k % 4 == 0 for k in range(26)]
    level = [False] * 3 + [True] * 3
    assert miss_events(burst) == 1 and not misses_target(burst, 95.0, 12)
    assert miss_events(tail) == 7 and misses_target(tail, 95.0, 12)
    assert miss_events(level) == 3 and misses_target(level, 95.0, 12)
    assert not misses_target([True], 95.0, 12)  # one sample cannot tell an outlier from a level
    # 0.2 % outliers in a full window of 500 are what a p95 allows
    assert not misses_target([k in (100, 300) for k in range(500)], 95.0, 12)


def test_a_verdict_expires_and_doubles_when_the_point_misses_again():
    missed = Misses(10.0)
    missed.rule_out("p", 0.0)
    assert "p" in missed and missed.expire(9.9) == [] and missed.expire(10.0) == ["p"] and "p" not in missed
    missed.rule_out("p", 10.0)
    assert missed.expire(29.9) == [] and missed.expire(30.0) == ["p"]


def burst_at_start(start_s, length_s, factor=5.0):
    def latency(t_s, lat):
        return lat * factor if start_s <= t_s < start_s + length_s else lat
    return latency


def test_the_fastest_point_is_never_ruled_out_by_a_burst(tmp_path):
    # A neighbour's blip at MAXN, the point found at start: MAXN (and with it every point it
    # dominates) must not be ruled out; the governor goes on to an efficient point.
    gov, platform, clock = make(tmp_path)
    drive(gov, platform, clock, 1.0, latency_of=burst_at_start(100.2, 0.5))
    assert "MAXN" not in gov.findings.missed
    drive(gov, platform, clock, 15.0)
    assert platform.current.name != "MAXN"
    assert true_energy_j(platform.current, 40.0) < 0.8 * true_energy_j(platform.found, 40.0)


def test_the_fastest_point_stays_in_the_choice_when_it_missed(tmp_path):
    # Every point misses this target (below MAXN's latency): MAXN misses, every point it
    # dominates is out, and MAXN itself stays the choice.
    gov, platform, clock = make(tmp_path, target_latency_ms=3.0)
    decisions = drive(gov, platform, clock, 10.0)
    assert platform.current.name in gov.dominance.unbeatable
    assert decisions[-1].point.name in gov.dominance.unbeatable


def tail_during(start_s, length_s, factor=5.0):
    """Every third inference late within [start_s, start_s + length_s): a tail, not a burst."""
    count = [0]

    def latency(t_s, lat):
        if start_s <= t_s < start_s + length_s:
            count[0] += 1
            return lat * factor if count[0] % 3 == 0 else lat
        return lat
    return latency


def test_a_ruled_out_point_is_tried_again_once_its_verdict_expires(tmp_path):
    gov, platform, clock = make(tmp_path)
    drive(gov, platform, clock, 40.0)
    held = platform.current
    t0 = clock.now_s()
    drive(gov, platform, clock, 1.5, latency_of=tail_during(t0, 1.5))
    # Left: ruled out by a miss, or priced out by the backlogs its outliers leave (test_bursts.py)
    bursts = gov.streams[next(iter(gov.streams))].bursts.bursts
    assert (held.name in gov.findings.missed or bursts.events > 0) and platform.current != held
    escaped_energy_j = true_energy_j(platform.current, 40.0)
    drive(gov, platform, clock, 20.0 + 15.0)  # the verdict's age (verdict_ttl_s), the bursts' memory, and some
    assert held.name not in gov.findings.missed
    assert true_energy_j(platform.current, 40.0) <= min(true_energy_j(held, 40.0) * 1.03, escaped_energy_j)


def test_in_flight_frames_of_the_old_model_are_not_judged_against_the_new_one(tmp_path):
    gov, platform, clock = make(tmp_path)
    drive(gov, platform, clock, 20.0)
    held = platform.current
    now = clock.now_s()
    gov.observe_inference(0.005, now - 0.01, model_id="heavy")  # the stream says which model it runs
    # The switch: a light model with a tight target; frames of the heavy one still in flight
    # finish after it (they started before), some reported with their model's id.
    gov.set_model(analysis(), model_id="light")
    gov.set_target(8.0, 95.0)
    for k in range(6):
        assert not gov.observe_inference(0.015, now + 0.001 * k)  # started before the switch
        assert not gov.observe_inference(0.015, now + 0.030 + 0.02 * k, model_id="heavy")
    gov.step(now + 0.2)
    assert held.name not in gov.findings.missed
