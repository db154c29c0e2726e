"""Scenario files: errors name the file, the key and the fix; shipped scenarios load by name."""

from pathlib import Path

import pytest

from edge_roofline.governor.eval.scenario import ScenarioError, load_scenario

from .scenarios import short


def test_yaml_errors_name_the_file_key_and_fix(tmp_path):
    bad = tmp_path / "bad.yaml"
    bad.write_text("device: agx_orin_64gb\nmodel: resnet50\nprecision: fp16\n"
                   "phases:\n  - {duration_s: 5, input_rate_hz: 30, target_latency_ms: 20, batchsize: 2}\n")
    with pytest.raises(ScenarioError,
                       match=r"bad.yaml: phases\[0\]: unknown key\(s\) batchsize; allowed keys: .*batch"):
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


def test_installed_scenarios_are_found_by_name(tmp_path, monkeypatch):
    """An installed package has no config/ beside it: names resolve in the installed share dir."""
    import edge_roofline.governor.eval.scenario as evaluate_module
    (tmp_path / "scenarios").mkdir()
    (tmp_path / "scenarios" / "mine.yaml").write_text(
        (Path(evaluate_module.__file__).parents[3] / "config" / "scenarios" / "agx_steady.yaml").read_text())
    monkeypatch.setattr(evaluate_module, "config_dirs", lambda: [tmp_path])
    assert evaluate_module.shipped_scenarios() == ["mine"]
    assert load_scenario("mine").device == "agx_orin_64gb"


def test_shipped_scenarios_judge_enough_inferences_for_one_burst():
    """One outlier burst (up to the physics' longest) that makes even MAXN late must not alone
    exceed the 1 % limit: every stream of a shipped scenario is judged on >= 100 x that many
    inferences (ms_agx_join_leave's segmenter had 179: two late ones failed MAXN itself)."""
    from edge_roofline.governor.eval import shipped_scenarios
    from edge_roofline.governor.eval.score import MAX_VIOLATION_RATE, judged_inferences
    from edge_roofline.virtual.actuation import Actuation

    short_streams = []
    for name in shipped_scenarios():
        sc = load_scenario(name)
        burst = int((sc.physics or Actuation()).outlier_burst_length[1])
        short_streams += [f"{name}:{stream} {n}" for stream, n in judged_inferences(sc).items()
                          if n * MAX_VIOLATION_RATE < burst]
    assert short_streams == []


def test_judged_inferences_leave_out_each_segments_settling():
    sc = short(phases=[{"duration_s": 10, "input_rate_hz": 30, "target_latency_ms": 20},
                       {"duration_s": 5, "input_rate_hz": 10, "target_latency_ms": 20}])
    from edge_roofline.governor.eval.score import judged_inferences
    assert list(judged_inferences(sc).values()) == [8 * 30 + 3 * 10]  # one stream: 2 s out of each phase
