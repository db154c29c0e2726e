"""``edge-roofline profile``: joined table and analyze's JSON plus measured times."""

from __future__ import annotations

import json

import pytest

from edge_roofline.cli import main


def test_profile_ort_zoo_model_writes_joined_json(tmp_path, capsys):
    out = tmp_path / "p.json"
    assert main(["profile", "zoo:tiny_cnn", "--backend", "ort", "--device", "agx_orin_64gb",
                 "--runs", "2", "--json", str(out)]) == 0
    table = capsys.readouterr().out
    assert "% roof" in table and "measured" in table
    doc = json.loads(out.read_text())
    assert doc["device"] == "agx_orin_64gb" and doc["operating_point"]
    measured = [l["measured_time_s"] for l in doc["layers"]]
    assert all(m is not None and m >= 0 for m in measured)
    assert sum(measured) > 0
    assert doc["totals"]["measured_time_s"] >= sum(measured) * (1 - 1e-9)
    for layer in doc["layers"]:
        if layer["measured_time_s"]:
            assert layer["achieved_flops"] == pytest.approx(layer["flops"] / layer["measured_time_s"])


def test_profile_reports_a_bad_model_path(tmp_path, capsys):
    assert main(["profile", str(tmp_path / "missing.onnx"), "--device", "agx_orin_64gb"]) == 2
    assert "error" in capsys.readouterr().err


def test_profile_virtual_runs_the_board_at_the_ceilings_operating_point(tmp_path, capsys):
    """Times come from the virtual board in the preset the ceilings describe (MAXN), so the
    join is like for like; the output says SIMULATION."""
    from edge_roofline.models import zoo
    from edge_roofline.roofline.costs import analyze_model
    from edge_roofline.virtual.board import VirtualBoard

    out = tmp_path / "v.json"
    assert main(["profile", "zoo:tiny_cnn", "--backend", "virtual", "--device", "orin_nx_16gb",
                 "--json", str(out)]) == 0
    assert "SIMULATION" in capsys.readouterr().out
    doc = json.loads(out.read_text())
    assert doc["operating_point"] == "MAXN"
    board = VirtualBoard("orin_nx_16gb", mode_id=0)
    expected = board.run_inference(analyze_model(zoo.build("tiny_cnn"), precision="fp16"), "fp16").latency_s
    assert doc["totals"]["measured_time_s"] == pytest.approx(expected, rel=0.15)  # run-to-run jitter
