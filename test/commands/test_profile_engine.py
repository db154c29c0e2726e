"""``edge-roofline profile ENGINE --backend tensorrt --onnx-model FILE``: a prebuilt TensorRT engine
is profiled against the ONNX graph it was built from. Before, profile refused every engine with
"this needs the ONNX model it was built from" and had no option to give one. TensorRT is the
stand-in runtime (test/backends/fake_tensorrt_runtime.py)."""

from __future__ import annotations

import json

import pytest

from edge_roofline.backends import create_backend
from edge_roofline.cli import main
from edge_roofline.models import zoo
from test.backends import fake_tensorrt_runtime as fake


@pytest.fixture
def runtime(monkeypatch, tmp_path):
    monkeypatch.setenv("XDG_CACHE_HOME", str(tmp_path))  # the engine cache
    return fake.install(monkeypatch)


@pytest.fixture
def engine(runtime, tmp_path):
    with create_backend("tensorrt", cache_dir_path=tmp_path / "engines", precision="fp16") as builder:
        builder.load(zoo.build("tiny_cnn"))
        return str(builder.engine_path)


def _one_line_error(capsys) -> str:
    err = capsys.readouterr().err.strip()
    assert len(err.splitlines()) == 1 and "Traceback" not in err, err
    assert err.startswith("edge-roofline profile: error: "), err
    return err


def test_a_prebuilt_engine_is_profiled_against_its_onnx_graph_without_a_build(runtime, engine, tmp_path, capsys):
    out = tmp_path / "p.json"
    assert main(["profile", engine, "--backend", "tensorrt", "--onnx-model", "zoo:tiny_cnn", "--runs", "1",
                 "--json", str(out)]) == 0
    assert runtime.builds == 1  # the engine's own build, nothing rebuilt
    assert "% roof" in capsys.readouterr().out
    layers = json.loads(out.read_text())["layers"]
    assert [layer["name"] for layer in layers] == [n.name for n in zoo.build("tiny_cnn").graph.node]
    assert all(layer["measured_time_s"] is not None for layer in layers)  # every ONNX node mapped to the engine


@pytest.mark.parametrize("argv, expected", [
    ([], "is a TensorRT engine, with no ONNX graph for the cost model and the layer mapping: give --onnx-model FILE"),
    (["--onnx-model", "zoo:tiny_cnn", "--precision", "fp32"], "was built at fp16 (its sidecar says), not at precision"),
    (["--onnx-model", "zoo:tiny_cnn", "--precision", "int8", "--calibration-cache", "CACHE"],
     "--calibration-cache is read only by an int8 TensorRT build (this one: a prebuilt engine): leave it out"),
], ids=["no onnx", "another precision", "a cache"])
def test_an_engine_profile_that_cannot_be_right_is_one_line(runtime, engine, tmp_path, capsys, argv, expected):
    cache = tmp_path / "tiny_cnn.cache"
    cache.write_bytes(b"TRT-calibration")
    argv = [str(cache) if a == "CACHE" else a for a in argv]
    assert main(["profile", engine, "--backend", "tensorrt", *argv]) == 2
    assert expected in _one_line_error(capsys) and runtime.builds == 1


@pytest.mark.parametrize("model, backend, expected", [
    ("ENGINE", "virtual", "is a TensorRT engine: give --backend tensorrt"),
    ("zoo:tiny_cnn", "tensorrt", "--onnx-model is read only with a TensorRT engine as model"),
], ids=["engine elsewhere", "onnx twice"])
def test_onnx_model_belongs_to_an_engine_on_tensorrt(runtime, engine, capsys, model, backend, expected):
    model = engine if model == "ENGINE" else model
    assert main(["profile", model, "--backend", backend, "--onnx-model", "zoo:tiny_cnn"]) == 2
    assert expected in _one_line_error(capsys)
