"""Hindsight policies (SIMULATION): the per-phase oracle and the best static point."""

from edge_roofline.governor.eval.hindsight import Hindsight

from .scenarios import short


def test_oracle_is_no_worse_than_any_static_point_per_phase():
    s = short()
    hindsight = Hindsight(s)
    oracle = hindsight.oracle()
    for segment, phase, best in zip(s.segments, s.phases, oracle):
        results = hindsight.phase_results(segment)
        assert len(results) == len(hindsight.candidates) > 50
        meeting = [r for r in results if r.streams[0].latency_percentile_s <= phase.target_latency_s]
        assert meeting and best in meeting
        assert all(best.energy_per_inference_j <= r.energy_per_inference_j for r in meeting)
    static = hindsight.best_static()
    assert all(r.point == static for r in [res for g in s.segments for res in hindsight.phase_results(g)]
               if r.point == static)
    # one point for both phases can do no better than the best point per phase
    per_phase_static = [next(r for r in hindsight.phase_results(g) if r.point == static) for g in s.segments]
    assert all(b.energy_per_inference_j <= r.energy_per_inference_j for b, r in zip(oracle, per_phase_static))


def test_oracle_within_margin_obeys_the_governors_rules_and_costs_no_less():
    from edge_roofline.governor.policy import MAX_UTILISATION
    s = short()
    hindsight = Hindsight(s)
    free = hindsight.oracle()
    # a margin just wide enough to rule out the free oracle's first point
    margin = 1.0 - free[0].streams[0].latency_percentile_s / s.phases[0].target_latency_s + 0.01
    held, phase = hindsight.oracle(margin)[0], s.phases[0]
    assert held.point != free[0].point
    assert held.streams[0].latency_percentile_s <= (1.0 - margin) * phase.target_latency_s
    assert held.streams[0].mean_latency_s * phase.input_rate_hz <= MAX_UTILISATION
    assert free[0].energy_per_inference_j <= held.energy_per_inference_j
