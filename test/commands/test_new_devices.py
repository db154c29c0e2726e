"""Every CLI command that takes a device works for the devices of issue 25 (Jetson AGX Thor
T5000/T4000, the Orin Super variants), with the roofs of each precision the device has."""

from __future__ import annotations

import json

import pytest

from edge_roofline.cli import main
from edge_roofline.roofline.devices import get_device

NEW_DEVICES = ("agx_thor_t5000", "agx_thor_t4000", "orin_nx_16gb_super", "orin_nx_8gb_super",
               "orin_nano_4gb_super")


@pytest.fixture(scope="module")
def model(tmp_path_factory):
    import onnx

    from edge_roofline.models import zoo
    path = tmp_path_factory.mktemp("m") / "tiny.onnx"
    onnx.save(zoo.build("tiny_cnn"), path)
    return path


@pytest.mark.parametrize("key", NEW_DEVICES)
def test_analyze_draws_the_roofs_of_every_precision(key, model, tmp_path, capsys):
    device = get_device(key)
    precision = device.precisions[-1]  # fp4 on Thor, int8 on Orin
    out = tmp_path / "a.json"
    assert main(["analyze", str(model), "--device", key, "--precision", precision, "--all-precisions",
                 "--plot", str(tmp_path / "r.svg"), "--time-plot", str(tmp_path / "t.png"),
                 "--json", str(out)]) == 0
    printed = capsys.readouterr().out
    assert f"gpu {precision}" in printed and json.loads(out.read_text())["device"] == key
    svg = (tmp_path / "r.svg").read_text()
    for p in device.precisions:  # one labelled roof per precision
        assert f"gpu {p}: " in svg, p
    assert (tmp_path / "t.png").stat().st_size > 0


def test_fp4_moves_half_the_bytes_of_fp8(model):
    from edge_roofline.roofline.costs import analyze_model
    fp8, fp4 = analyze_model(model, precision="fp8"), analyze_model(model, precision="fp4")
    assert fp4.total_flops == fp8.total_flops and fp4.total_bytes == pytest.approx(fp8.total_bytes / 2, rel=0.01)


@pytest.mark.parametrize("key", NEW_DEVICES)
def test_ceilings_profile_and_virtual_jetson(key, tmp_path, capsys):
    device = get_device(key)
    assert main(["ceilings", "--device", key]) == 0
    printed = capsys.readouterr().out
    assert all(f"MAXN{'_SUPER' if 'super' in key else ''} gpu {p}" in printed for p in device.precisions)
    assert main(["profile", "zoo:tiny_cnn", "--backend", "virtual", "--device", key, "--runs", "2"]) == 0
    assert "SIMULATION" in capsys.readouterr().out
    root = tmp_path / "board"
    assert main(["virtual-jetson", "--device", key, "--root", str(root), "--duration", "0.2"]) == 0
    from edge_roofline.platforms.jetson.identify import identify
    assert identify(root).catalogue_key == key


def test_sweep_on_a_virtual_thor(tmp_path, capsys):
    out = tmp_path / "sweep"
    assert main(["sweep", "zoo:tiny_cnn", "--platform", "virtual:agx_thor_t5000", "--points", "presets",
                 "--runs", "5", "--warmup", "1", "--settle-s", "0", "--idle-s", "0", "--no-report",
                 "--out", str(out)]) == 0
    captured = capsys.readouterr()
    assert "2 points measured, 0 failed" in captured.out and "restored MAXN" in captured.out
    assert "120W" in captured.err  # the progress line names each point
