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


def test_profile_on_a_virtual_thor_prints_no_efficiency_over_100_percent(capsys):
    # Its 32 MiB L2 holds MobileNetV2's activations: block1.dw.conv moved 600 GB/s against the
    # 273 GB/s DRAM roof and read "320.9" in % roof.
    assert main(["profile", "zoo:mobilenetv2", "--backend", "virtual", "--device", "agx_thor_t5000",
                 "--runs", "2"]) == 0
    rows = capsys.readouterr().out.splitlines()
    cells = [row.split() for row in rows if row.split() and row.split()[0].startswith(("block", "stem", "head", "fc"))]
    assert all(c[6] in ("-", ">100") or float(c[6]) <= 100 for c in cells), rows
    assert next(r for r in rows if r.startswith("block1.dw.conv ")).endswith(
        ">100 memory    above the DRAM roof: served from cache")
    assert "% of the roof" not in rows[-1] and "ran faster than their roof" in rows[-1]


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


@pytest.mark.parametrize("content,backend,expected", [
    (b"this is not protobuf", "ort", "is not a valid ONNX model"),
    (b"this is not protobuf", "virtual", "is not a valid ONNX model"),
    (b"", "ort", "is not an ONNX model (no IR version or no nodes)"),
])
def test_a_corrupt_model_is_one_line_and_exit_2(tmp_path, capsys, content, backend, expected):
    """issue 23: `edge-roofline profile corrupt.onnx --backend ort` printed protobuf's DecodeError
    traceback and exited 1."""
    bad = tmp_path / "corrupt.onnx"
    bad.write_bytes(content)
    assert main(["profile", str(bad), "--backend", backend, "--device", "agx_orin_64gb"]) == 2
    err = capsys.readouterr().err.strip()
    assert err.startswith("edge-roofline profile: error: ") and expected in err and "zoo:NAME" in err
    assert len(err.splitlines()) == 1 and "Traceback" not in err


def test_an_engine_given_to_profile_asks_for_its_onnx(tmp_path, capsys):
    engine = tmp_path / "model.engine"
    engine.write_bytes(b"\x00garbage" * 8)
    assert main(["profile", str(engine), "--backend", "tensorrt"]) == 2
    err = capsys.readouterr().err.strip()
    assert "is a TensorRT engine, with no ONNX graph for the cost model" in err and "--onnx-model FILE" in err
    assert len(err.splitlines()) == 1


@pytest.mark.parametrize("content", [b"", b"junk", b"\x89MCAP0\r\n" + b"\x00" * 5])
def test_a_damaged_recording_is_one_line_and_exit_2(tmp_path, capsys, content):
    bad = tmp_path / "session.mcap"
    bad.write_bytes(content)
    assert main(["recording", str(bad)]) == 2
    err = capsys.readouterr().err.strip()
    assert "is not a readable MCAP recording" in err and len(err.splitlines()) == 1
