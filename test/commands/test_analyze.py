"""``edge-roofline analyze`` on a language model: a prefill and a decode step per context from
one graph, per phase in the table, the JSON and a chart; weight-only precisions."""

from __future__ import annotations

import json

import pytest

from edge_roofline.cli import main


def _analyze(tmp_path, capsys, *extra):
    out = tmp_path / "a.json"
    assert main(["analyze", "zoo:tiny_decoder", "--precision", "fp16", "--json", str(out), *extra]) == 0
    return capsys.readouterr().out, json.loads(out.read_text())


def test_decoder_phases_over_contexts_from_one_graph(tmp_path, capsys):
    chart = tmp_path / "phases.png"
    text, doc = _analyze(tmp_path, capsys, "--context", "128,512,2048", "--prompt", "64",
                         "--phase-plot", str(chart), "--compare", "MODE_15W", "--top", "3")
    assert "layers of the decode @ 128 step:" in text and "phases (AGX Orin 64GB MAXN gpu fp16" in text
    rows = [line.split() for line in text.splitlines() if line.startswith(("decode ", "prefill "))]
    assert [(r[0], int(r[1]), int(r[2])) for r in rows] == [
        ("decode", 1, 128), ("decode", 1, 512), ("decode", 1, 2048), ("prefill", 64, 0)]
    assert chart.stat().st_size > 10_000
    phases = doc["phases"]
    assert doc["phase"] == "decode" and doc["weight_precision"] == "fp16"
    assert [p["context"] for p in phases] == [128, 512, 2048, 0]
    decode = phases[:3]
    assert all(p["bound"] == "memory" for p in decode)
    # The KV cache grows with the context, the weights read per token do not.
    assert decode[0]["kv_cache_bytes"] * 16 == decode[2]["kv_cache_bytes"] > 0
    assert decode[0]["weight_bytes"] == decode[2]["weight_bytes"]
    assert decode[0]["arithmetic_intensity"] > decode[2]["arithmetic_intensity"]
    assert phases[3]["arithmetic_intensity"] > 10 * decode[0]["arithmetic_intensity"]
    # The layer table and its JSON are the headline (decode @ 128) step's.
    assert sum(l["flops"] for l in doc["layers"]) == pytest.approx(decode[0]["flops"])


def test_int4_weights_halve_the_int8_weight_bytes_in_the_report(tmp_path, capsys):
    reports = {}
    for weights in ("int8", "int4"):
        text, doc = _analyze(tmp_path, capsys, "--weight-precision", weights, "--context", "1024",
                             "--top", "1")
        assert f"weights {weights}" in text.splitlines()[0]
        reports[weights] = doc
    int8, int4 = reports["int8"]["phases"][0], reports["int4"]["phases"][0]
    assert int4["weight_bytes"] == int8["weight_bytes"] / 2 > 0
    assert int4["kv_cache_bytes"] == int8["kv_cache_bytes"] and int4["flops"] == int8["flops"]
    assert reports["int4"]["weight_precision"] == "int4"


def test_weight_precision_applies_to_any_model(tmp_path, capsys):
    sizes = {}
    for weights in ("fp16", "int4"):
        out = tmp_path / f"{weights}.json"
        assert main(["analyze", "zoo:tiny_cnn", "--precision", "fp16", "--weight-precision", weights,
                     "--json", str(out), "--top", "1"]) == 0
        sizes[weights] = sum(l["bytes"] for l in json.loads(out.read_text())["layers"])
    assert sizes["int4"] < sizes["fp16"]
    capsys.readouterr()


def test_bad_decoder_options_are_one_line(capsys):
    assert main(["analyze", "zoo:tiny_cnn", "--context", "128"]) == 2
    err = capsys.readouterr().err
    assert "need a decoder with a KV cache" in err and "Traceback" not in err
    with pytest.raises(SystemExit):
        main(["analyze", "zoo:tiny_decoder", "--context", "12x"])
    assert "expected context lengths like 128,512,2048" in capsys.readouterr().err
