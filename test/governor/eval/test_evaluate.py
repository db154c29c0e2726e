"""The governor's acceptance on a shipped scenario, every policy on one board (SIMULATION)."""

import pytest

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


@pytest.fixture(scope="module")
def two_streams():
    return evaluate(load_scenario("ms_agx_two"))


def test_multi_stream_scenario_scores_every_stream_against_the_joint_oracle(two_streams):
    ev = two_streams
    c = ev.criteria()
    for sc in ev.scores.values():
        assert [st.name for st in sc.streams] == ["detector", "classifier"]
        assert sc.violation_rate == max(st.violation_rate for st in sc.streams)
        assert sc.energy_j > 0 and sc.energy_per_inference_j * sum(st.inferences for st in sc.streams) == \
            pytest.approx(sc.energy_j)
    assert ev.scores["oracle"].energy_j <= ev.scores["maxn"].energy_j
    assert ev.scores["oracle"].energy_per_inference_j <= 1.01 * ev.scores["best_static"].energy_per_inference_j
    assert ev.scores["oracle"].violation_rate <= 0.01
    # the governor's acceptance (issue 13): every criterion on the shipped seed
    assert c["energy_vs_oracle"]["value"] <= 1.05, ev.to_dict()["criteria"]
    assert c["violation_rate"]["value"] <= 0.01
    assert c["saving_vs_maxn"]["applies"] and c["saving_vs_maxn"]["value"] >= 0.15


def test_a_stream_joining_and_leaving_meets_every_criterion():
    # issue 13: the segmenter joins at 10 s and leaves at 26 s; the detector alone before and after
    ev = evaluate(load_scenario("ms_agx_join_leave"))
    assert ev.passed, ev.to_dict()["criteria"]
