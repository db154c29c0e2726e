"""`edge-roofline governor-eval`: the SIMULATION table, the JSON and the plot (frames and language models)."""

import json


def test_cli_prints_simulation_table_and_writes_json_and_plot(tmp_path, capsys):
    from edge_roofline.cli import main
    scenario = tmp_path / "s.yaml"
    scenario.write_text("device: orin_nx_16gb\nmodel: tiny_cnn\nprecision: fp16\nseed: 2\n"
                        "phases:\n  - {duration_s: 4, input_rate_hz: 30, target_latency_ms: 5}\n")
    # The chart's folder is made, as every chart's (--plot's check leaves it to the writer): it was
    # "No such file or directory", exit 2, after the whole run.
    out_json, out_png = tmp_path / "r.json", tmp_path / "charts" / "r.png"
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
    assert "not found" in capsys.readouterr().err


def test_cli_runs_a_language_model_scenario_by_its_content_in_the_same_table(tmp_path, capsys):
    from edge_roofline.cli import main
    scenario = tmp_path / "chat.yaml"
    scenario.write_text("device: agx_orin_64gb\nrequest_rate_hz: 4\nprompt_tokens: 32\noutput_tokens: 8\n"
                        "ttft_ms: 10\ntpot_ms: 2\nduration_s: 3\n"
                        "model: {hidden: 128, layers: 2, heads: 2, vocab: 1024, max_positions: 256}\n")
    assert main(["governor-eval", str(scenario)]) == 0
    text = capsys.readouterr().out
    assert "chat (agx_orin_64gb, prompt 32, 8 tokens out" in text and "SIMULATION" in text
    assert "| policy | mJ / output token | vs MAXN | vs oracle | TTFT p95 ms" in text
    for policy in ("maxn", "best_static", "oracle", "governor"):
        assert f"| {policy} |" in text
    out_json, out_png = tmp_path / "r.json", tmp_path / "r.png"
    assert main(["governor-eval", str(scenario), "--seeds", "2", "--json", str(out_json),
                 "--plot", str(out_png)]) == 0
    assert out_png.read_bytes()[:8] == b"\x89PNG\r\n\x1a\n"
    data = json.loads(out_json.read_text())
    assert data["label"] == "SIMULATION" and data["scenario"] == "chat"
    assert data["targets_ms"] == {"TTFT": 10, "TPOT": 2}
    assert set(data["policies"]) == {"maxn", "best_static", "oracle", "governor"}
    for policy in data["policies"].values():
        assert policy["seeds"] == 2 and policy["energy_per_output_token_j"] > 0
        assert set(policy["targets"]) == {"TTFT", "TPOT"} and 0 <= policy["targets"]["TPOT"]["over_rate"] <= 1
    assert data["policies"]["maxn"]["vs_maxn"] == 1.0 and data["policies"]["oracle"]["vs_oracle"] == 1.0


def test_a_shipped_language_model_scenario_is_found_by_name():
    from edge_roofline.governor.eval.generation_scenario import is_generation_scenario
    from edge_roofline.governor.eval.scenario import resolve_scenario_path
    path = resolve_scenario_path("agx_chat_detector")
    assert path.parent.name == "llm" and is_generation_scenario(path)
    assert not is_generation_scenario(resolve_scenario_path("agx_steady"))
