"""The closed-loop evaluator on the virtual Jetson (SIMULATION): scenarios, hindsight policies,
scoring, the governor's acceptance on a shipped scenario, the CLI."""

import json
from pathlib import Path

import numpy as np

import pytest

from edge_roofline.governor.evaluate import (Hindsight, ScenarioError, StaticController, evaluate,
                                             load_scenario, maxn_mode_id, scenario_from_dict, simulate,
                                             workload)


def short(**over):
    data = {"device": "agx_orin_64gb", "model": "tiny_cnn", "precision": "fp16", "seed": 1,
            "phases": [{"duration_s": 3, "input_rate_hz": 30, "target_latency_ms": 5},
                       {"duration_s": 3, "input_rate_hz": 60, "target_latency_ms": 2, "background_gpu_load": 0.4}]}
    data.update(over)
    return scenario_from_dict(data, "short")


def test_yaml_errors_name_the_file_key_and_fix(tmp_path):
    bad = tmp_path / "bad.yaml"
    bad.write_text("device: agx_orin_64gb\nmodel: resnet50\nprecision: fp16\n"
                   "phases:\n  - {duration_s: 5, input_rate_hz: 30, target_latency_ms: 20, batchsize: 2}\n")
    with pytest.raises(ScenarioError, match=r"bad.yaml: phases\[0\]: unknown key\(s\) batchsize; allowed keys: .*batch"):
        load_scenario(bad)
    bad.write_text("device: agx_orin_64gb\nmodel: resnet50\nprecision: fp16\nphysics_perturbaton: 0.3\nphases: []\n")
    with pytest.raises(ScenarioError, match="bad.yaml: unknown key.*physics_perturbaton.*check the spelling"):
        load_scenario(bad)
    with pytest.raises(ScenarioError, match="missing key.*target_latency_ms"):
        short(phases=[{"duration_s": 1, "input_rate_hz": 30}])
    with pytest.raises(ScenarioError, match="device 'jetson_tx9' is not a catalogued device; use one of"):
        short(device="jetson_tx9")
    with pytest.raises(ScenarioError, match="model 'resnet5' is neither a zoo model"):
        short(model="resnet5")
    with pytest.raises(ScenarioError, match="input_rate_hz must be > 0"):
        short(phases=[{"duration_s": 1, "input_rate_hz": 0, "target_latency_ms": 5}])
    with pytest.raises(ScenarioError, match="governor: unknown key.*margn"):
        short(governor={"margn": 0.1})
    with pytest.raises(ScenarioError, match="not found: give a YAML path or one of the shipped scenarios.*agx_steady"):
        load_scenario("no_such_scenario")


def test_shipped_scenarios_load_by_name():
    s = load_scenario("agx_model_switch")
    assert s.phase_model(s.phases[1]) == "yolo_tiny" and s.phase_model(s.phases[0]) == "resnet50"
    assert load_scenario("agx_steady_p30").physics_perturbation == 0.3


def test_physics_scale_moves_only_the_board_and_refuses_unknown_names():
    with pytest.raises(ScenarioError, match="short: physics_scale: unknown physics parameter.*host_cycles; known: "):
        short(physics_scale={"host_cycles": 5.0})
    with pytest.raises(ScenarioError, match="physics factor for l2_efficiency must be a positive number"):
        short(physics_scale={"l2_efficiency": 0})
    with pytest.raises(ScenarioError, match="physics_scale: must be a mapping"):
        short(physics_scale=[5.0])
    host = short(physics_scale={"host_cycles_per_kernel": 5.0, "host_cycles_per_inference": 5.0})
    plain = simulate(short(), maxn_mode_id(short()), StaticController(), sample_hz=None, step_s=None)
    slow = simulate(host, maxn_mode_id(host), StaticController(), sample_hz=None, step_s=None)
    assert np.mean([r.latency_s for r in slow.inferences]) > 1.1 * np.mean([r.latency_s for r in plain.inferences])
    # The governor's candidates (what it is shown) do not change with the board's physics.
    assert [p.name for p in Hindsight(host).candidates] == [p.name for p in Hindsight(short()).candidates]


def test_installed_scenarios_are_found_by_name(tmp_path, monkeypatch):
    """An installed package has no config/ beside it: names resolve in the installed share dir."""
    import edge_roofline.governor.evaluate as evaluate_module
    (tmp_path / "scenarios").mkdir()
    (tmp_path / "scenarios" / "mine.yaml").write_text(
        (Path(evaluate_module.__file__).parents[2] / "config" / "scenarios" / "agx_steady.yaml").read_text())
    monkeypatch.setattr(evaluate_module, "config_dirs", lambda: [tmp_path])
    assert evaluate_module.shipped_scenarios() == ["mine"]
    assert load_scenario("mine").device == "agx_orin_64gb"


def test_perturbation_changes_the_board():
    plain = simulate(short(), maxn_mode_id(short()), StaticController(), sample_hz=None, step_s=None)
    moved = simulate(short(physics_perturbation=0.3), maxn_mode_id(short()), StaticController(),
                     sample_hz=None, step_s=None)
    assert sum(moved.phase_energy_j) != pytest.approx(sum(plain.phase_energy_j), rel=0.01)
    lat = [r.latency_s for r in plain.inferences]
    assert [r.latency_s for r in moved.inferences] != pytest.approx(lat, rel=0.01)


def test_split_inferences_spend_what_run_inference_spends():
    """The evaluator reads the sensors mid-inference; its energy must be the board's own."""
    from edge_roofline.virtual.board import VirtualBoard
    s = short(phases=[{"duration_s": 2, "input_rate_hz": 50, "target_latency_ms": 5, "background_gpu_load": 0.3}])
    trace = simulate(s, maxn_mode_id(s), StaticController(), sample_hz=45.0, step_s=None)
    board = VirtualBoard(s.device, mode_id=maxn_mode_id(s), seed=s.seed)
    board.background_gpu_load = 0.3
    cost = workload(s, s.phases[0]).cost
    for r in trace.inferences:
        board.advance_to(r.arrival_s)
        board.run_inference(cost, s.precision)
    board.advance_to(2.0)
    assert len(trace.inferences) == 100
    # (splitting moves where leakage sees the temperature: a few ppm)
    assert sum(trace.phase_energy_j) == pytest.approx(board.energy_j, rel=1e-5)
    assert trace.power and all(w > 0 for _, w in trace.power)


def test_queueing_counts_in_latency():
    # tiny_cnn takes ~0.25 ms at MAXN: inputs every 0.125 ms queue up.
    s = short(phases=[{"duration_s": 0.5, "input_rate_hz": 8000, "target_latency_ms": 5}])
    trace = simulate(s, maxn_mode_id(s), StaticController(), sample_hz=None, step_s=None)
    lat = np.array([r.latency_s for r in trace.inferences])
    assert len(lat) > 100 and np.all(np.diff(lat) > 0)  # the backlog grows: each waits longer


def test_oracle_is_no_worse_than_any_static_point_per_phase():
    s = short()
    hindsight = Hindsight(s)
    oracle = hindsight.oracle()
    for phase, best in zip(s.phases, oracle):
        results = hindsight.phase_results(phase)
        assert len(results) == len(hindsight.candidates) > 50
        meeting = [r for r in results if r.latency_percentile_s <= phase.target_latency_s]
        assert meeting and best in meeting
        assert all(best.energy_per_inference_j <= r.energy_per_inference_j for r in meeting)
    static = hindsight.best_static()
    assert all(r.point == static for r in [res for ph in s.phases for res in hindsight.phase_results(ph)]
               if r.point == static)
    # one point for both phases can do no better than the best point per phase
    per_phase_static = [next(r for r in hindsight.phase_results(ph) if r.point == static) for ph in s.phases]
    assert all(b.energy_per_inference_j <= r.energy_per_inference_j for b, r in zip(oracle, per_phase_static))


def test_oracle_within_margin_obeys_the_governors_rules_and_costs_no_less():
    from edge_roofline.governor.policy import MAX_UTILISATION
    s = short()
    hindsight = Hindsight(s)
    free = hindsight.oracle()
    # a margin just wide enough to rule out the free oracle's first point
    margin = 1.0 - free[0].latency_percentile_s / s.phases[0].target_latency_s + 0.01
    held, phase = hindsight.oracle(margin)[0], s.phases[0]
    assert held.point != free[0].point
    assert held.latency_percentile_s <= (1.0 - margin) * phase.target_latency_s
    assert held.mean_latency_s * phase.input_rate_hz <= MAX_UTILISATION
    assert free[0].energy_per_inference_j <= held.energy_per_inference_j


def test_governor_meets_the_criteria_on_a_shipped_scenario():
    ev = evaluate(load_scenario("nano_steady"))
    c = ev.criteria()
    assert ev.scores["maxn"].switches == 0 and ev.scores["governor"].switches > 0
    assert c["energy_vs_oracle"]["value"] <= 1.05, ev.to_dict()
    assert c["violation_rate"]["value"] <= 0.01
    assert c["saving_vs_maxn"]["applies"] and c["saving_vs_maxn"]["value"] >= 0.15
    assert ev.scores["oracle"].energy_per_inference_j <= ev.scores["maxn"].energy_per_inference_j
    assert ev.scores["oracle"].energy_per_inference_j <= 1.01 * ev.scores["best_static"].energy_per_inference_j


def test_cli_prints_simulation_table_and_writes_json_and_plot(tmp_path, capsys):
    from edge_roofline.cli import main
    scenario = tmp_path / "s.yaml"
    scenario.write_text("device: orin_nx_16gb\nmodel: tiny_cnn\nprecision: fp16\nseed: 2\n"
                        "phases:\n  - {duration_s: 4, input_rate_hz: 30, target_latency_ms: 5}\n")
    out_json, out_png = tmp_path / "r.json", tmp_path / "r.png"
    assert main(["governor-eval", str(scenario), "--json", str(out_json), "--plot", str(out_png)]) == 0
    text = capsys.readouterr().out
    assert "SIMULATION" in text and "governor" in text and "oracle" in text
    data = json.loads(out_json.read_text())
    assert data["label"] == "SIMULATION"
    assert set(data["policies"]) == {"maxn", "default", "best_static", "oracle", "oracle_margin", "governor"}
    for policy in data["policies"].values():
        assert {"energy_per_inference_j", "violation_rate", "p95_latency_ms", "switches", "phases"} <= set(policy)
        assert policy["energy_per_inference_j"] > 0 and len(policy["phases"]) == 1
    assert out_png.read_bytes()[:8] == b"\x89PNG\r\n\x1a\n"
    assert main(["governor-eval", str(tmp_path / "missing.yaml")]) == 2
    assert "not found" in capsys.readouterr().out
