"""The governor's acceptance on a shipped scenario, every policy on one board (SIMULATION)."""

from edge_roofline.governor.eval import evaluate, load_scenario


def test_governor_meets_the_criteria_on_a_shipped_scenario():
    ev = evaluate(load_scenario("nano_steady"))
    c = ev.criteria()
    assert ev.scores["maxn"].switches == 0 and ev.scores["governor"].switches > 0
    assert c["energy_vs_oracle"]["value"] <= 1.05, ev.to_dict()
    assert c["violation_rate"]["value"] <= 0.01
    assert c["saving_vs_maxn"]["applies"] and c["saving_vs_maxn"]["value"] >= 0.15
    assert ev.scores["oracle"].energy_per_inference_j <= ev.scores["maxn"].energy_per_inference_j
    assert ev.scores["oracle"].energy_per_inference_j <= 1.01 * ev.scores["best_static"].energy_per_inference_j
