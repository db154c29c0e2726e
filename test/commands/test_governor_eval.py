"""`edge-roofline governor-eval`: the SIMULATION table, the JSON and the plot."""

import json


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
    assert "not found" in capsys.readouterr().err
