"""The TensorRT backend's control flow on a stand-in runtime (fake_tensorrt_runtime: the
documented tensorrt/pycuda APIs over ONNX Runtime): engine cache and sidecar, a restart that
never rebuilds, engines from another TensorRT version, corrupt engines, tensor names,
IProfiler timing and the inspector mapping. The real runtime is checked by
scripts/trt_smoke.py on a GPU."""

from __future__ import annotations

import json

import numpy as np
import onnxruntime as ort
import pytest

import fake_tensorrt_runtime as fake
from edge_roofline.backends import create_backend
from edge_roofline.backends.base import EngineVersionError, ModelLoadError, TensorNameError
from edge_roofline.inference.ceilings import roofs_mismatch
from edge_roofline.inference.config import inference_config
from edge_roofline.inference.profile_join import join_profile
from edge_roofline.inference.serving import LoadedModel
from edge_roofline.nodes.inference import PARAMETERS as NODE_PARAMETERS
from edge_roofline.platforms.base import DeviceIdentity
from edge_roofline.roofline.ceilings import spec_ceilings
from edge_roofline.roofline.costs import analyze_model


NODE_DEFAULTS = {name: default for name, (default, _) in NODE_PARAMETERS.items()}


@pytest.fixture
def runtime(monkeypatch):
    return fake.install(monkeypatch)


def _backend(tmp_path, **opts):
    return create_backend("tensorrt", cache_dir_path=tmp_path / "engines", **opts)


def test_build_once_then_every_restart_is_a_cache_hit(runtime, tmp_path, tiny_cnn):
    with _backend(tmp_path) as first:
        first.load(tiny_cnn)
        assert first.built and first.engine_path.exists() and runtime.builds == 1
        meta = json.loads(first.engine_path.with_suffix(".json").read_text())
        assert meta["tensorrt_version"] == "10.3.0" and meta["compute_capability"] == [8, 7]
        assert runtime.last_config["profiling_verbosity"] == "detailed"
        assert "fp16" in runtime.last_config["flags"]
    with _backend(tmp_path) as restarted:
        restarted.load(tiny_cnn)
        assert not restarted.built and runtime.builds == 1
        feeds = restarted.dummy_feeds(seed=2)
        result = restarted.run(feeds)
    session = ort.InferenceSession(tiny_cnn.SerializeToString(), providers=["CPUExecutionProvider"])
    np.testing.assert_allclose(result.outputs["probs"], session.run(None, feeds)[0], rtol=1e-6)
    with _backend(tmp_path, precision="fp32") as other_flags:
        other_flags.load(tiny_cnn)
        assert other_flags.built and runtime.builds == 2  # flags are part of the key


def test_a_tensorrt_upgrade_rebuilds_and_old_engines_say_why(monkeypatch, tmp_path, tiny_cnn):
    fake.install(monkeypatch, version="10.3.0")
    with _backend(tmp_path) as old:
        old.load(tiny_cnn)
        old_engine = old.engine_path
    upgraded = fake.install(monkeypatch, version="10.4.0")
    with _backend(tmp_path) as new:
        new.load(tiny_cnn)  # the ONNX path: a new key, so a fresh build, not a failed load
        assert new.built and new.engine_path != old_engine and upgraded.builds == 1
        with pytest.raises(EngineVersionError, match=r"built with TensorRT 10\.3\.0.*rebuild"):
            new.load(old_engine)  # the prebuilt engine's sidecar says who built it
        old_engine.with_suffix(".json").unlink()
        with pytest.raises(EngineVersionError, match=r"serialization version 237.*reads 239.*rebuild"):
            new.load(old_engine)  # no sidecar: TensorRT's own log tells


def test_an_engine_for_another_gpu_architecture_is_refused(monkeypatch, tmp_path, tiny_cnn):
    fake.install(monkeypatch, compute_capability=(8, 7))
    with _backend(tmp_path) as orin:
        orin.load(tiny_cnn)
        engine = orin.engine_path
    fake.install(monkeypatch, compute_capability=(7, 2), device="Xavier (fake)")
    with _backend(tmp_path) as xavier, pytest.raises(EngineVersionError, match="8.7.*7.2"):
        xavier.load(engine)


def test_corrupt_or_missing_engines_raise_model_load_error(runtime, tmp_path):
    corrupt = tmp_path / "bad.engine"
    corrupt.write_bytes(b"\x00garbage" * 64)
    with _backend(tmp_path) as backend:
        with pytest.raises(ModelLoadError, match="corrupt.*Magic tag") as err:
            backend.load(corrupt)
        assert not isinstance(err.value, EngineVersionError)
        with pytest.raises(ModelLoadError, match="does not exist"):
            backend.load(tmp_path / "missing.plan")


def test_tensor_names_are_checked_before_the_engine_runs(runtime, tmp_path, tiny_cnn):
    with _backend(tmp_path) as backend:
        backend.load(tiny_cnn)
        assert [t.name for t in backend.inputs()] == ["input"]
        assert [(t.name, t.shape, t.dtype) for t in backend.outputs()] == [("probs", (1, 10), "float32")]
        with pytest.raises(TensorNameError, match="'image'.*'input'"):
            backend.run({"image": np.zeros((1, 3, 64, 64), np.float32)})


def test_profile_maps_fused_reformat_and_myelin_layers_to_onnx_nodes(runtime, tmp_path, tiny_cnn):
    with _backend(tmp_path) as backend:
        backend.load(tiny_cnn)
        profile = backend.profile(backend.dummy_feeds(), runs=4)
    layers = {layer.name: layer for layer in profile.layer_info}
    assert layers["conv0 + relu0"].onnx_nodes == ("conv0", "relu0")
    assert layers["Reformatting CopyNode for Input Tensor 0 to conv0"].onnx_nodes == ()
    assert layers["{ForeignNode[avgpool...probs]}"].onnx_nodes == ("avgpool", "flatten", "fc", "probs")
    owners = profile.node_to_layer()  # raises if a node is covered twice
    assert set(owners) == {n.name for n in tiny_cnn.graph.node}
    # the fake reports 0.01 ms x layer position, once per layer per run; means per run
    assert profile.layer_times_s["conv0 + relu0"] == pytest.approx(0.02e-3)
    assert profile.runs == 4 and profile.total_time_s > 0
    analysis = join_profile(analyze_model(tiny_cnn, precision="fp16"), profile,
                            spec_ceilings("agx_orin_64gb", "fp16"))
    assert all(l.measured_time_s is not None for l in analysis.layers)


def test_a_prebuilt_engine_maps_layers_when_given_its_onnx(runtime, tmp_path, tiny_cnn):
    with _backend(tmp_path) as builder:
        builder.load(tiny_cnn)
        engine = builder.engine_path
    with _backend(tmp_path) as bare:
        bare.load(engine)
        assert all(not l.onnx_nodes for l in bare.describe_layers())
    with _backend(tmp_path, mapping_onnx=tiny_cnn) as mapped:
        mapped.load(engine)
        assert not mapped.built
        assert len(mapped.profile(mapped.dummy_feeds()).node_to_layer()) == len(tiny_cnn.graph.node)


def test_the_inference_node_serves_a_prebuilt_engine_with_the_onnx_it_was_built_from(runtime, tmp_path, tiny_cnn):
    """Before, LoadedModel ran the cost model on the engine file: 'not a readable ONNX model'."""
    with _backend(tmp_path, precision="fp16") as builder:
        builder.load(tiny_cnn)
        engine = builder.engine_path
    onnx_path = tmp_path / "tiny_cnn.onnx"
    onnx_path.write_bytes(tiny_cnn.SerializeToString())
    p = NODE_DEFAULTS | {"backend": "tensorrt", "precision": "fp16", "model": str(engine), "onnx_model": str(onnx_path)}
    loaded = LoadedModel(inference_config(p, None), create_backend)
    try:
        assert not loaded.backend.built and runtime.builds == 1  # the engine served, nothing built
        nodes = [n.name for n in tiny_cnn.graph.node]
        assert [layer.name for layer in loaded.cost.layers] == nodes  # the cost model of its ONNX graph
        profile = loaded.backend.profile(loaded.backend.dummy_feeds())
        assert set(profile.node_to_layer()) == set(nodes)  # every node mapped to the engine's layers
        analysis = join_profile(loaded.cost, profile, spec_ceilings("agx_orin_64gb", "fp16"))
        assert all(layer.measured_time_s is not None for layer in analysis.layers)
    finally:
        loaded.close()


def test_the_roofs_are_checked_against_where_tensorrt_runs(runtime, tmp_path, tiny_cnn, monkeypatch):
    """The node passes TensorRT no DLA core: an ONNX model is built for the GPU, so `engine: dla` draws
    DLA roofs under GPU times and says so in one line. A prebuilt engine runs where it was built: one
    built for a DLA core (its sidecar says) was reported as running on the GPU, so `engine: dla` was
    told to switch to the GPU's roofs and `engine: gpu` drew them under DLA times in silence."""
    orin = DeviceIdentity("jetson", "Jetson AGX Orin 64GB", "agx_orin_64gb")
    monkeypatch.setenv("XDG_CACHE_HOME", str(tmp_path))
    p = NODE_DEFAULTS | {"backend": "tensorrt", "precision": "fp16", "device": "agx_orin_64gb", "engine": "dla"}
    loaded = LoadedModel(inference_config(p, None), create_backend)
    try:
        assert runtime.last_config.get("DLA_core") is None  # built for the GPU
        assert roofs_mismatch("agx_orin_64gb", "dla", loaded.backend.execution_target(), orin) == (
            "the roofs (agx_orin_64gb's DLA) do not match where the model runs (agx_orin_64gb's GPU): efficiency "
            "and bounds compare one's times with the other's roofs; set -p engine:=gpu")
    finally:
        loaded.close()
    with _backend(tmp_path, dla_core=1) as builder:
        builder.load(tiny_cnn)
        engine = builder.engine_path
    assert runtime.last_config["DLA_core"] == 1
    with _backend(tmp_path) as prebuilt:  # as the node makes it: no DLA core
        prebuilt.load(engine)
        assert runtime.deserialized_dla_cores[-1] == 1  # runs on the core it was built for, not the default
        assert prebuilt.execution_target() == (None, "dla")
        assert roofs_mismatch("agx_orin_64gb", "dla", prebuilt.execution_target(), orin) == ""
        assert "set -p engine:=dla" in roofs_mismatch("agx_orin_64gb", "gpu", prebuilt.execution_target(), orin)


def test_an_int8_build_needs_a_calibration_cache(runtime, tmp_path, tiny_cnn):
    with _backend(tmp_path, precision="int8") as backend, pytest.raises(
            ValueError, match=r"^TensorRT builds int8 from a calibration cache \(it replays one, it does not "
                              r"calibrate\) and none is given: set calibration_cache=FILE \(a TensorRT calibration "
                              r"cache of the model\), or precision fp16$"):
        backend.load(tiny_cnn)
    # Was a FileNotFoundError from hashing it for the cache key, before the calibrator's own check.
    with _backend(tmp_path, precision="int8", calibration_cache=tmp_path / "none.cache") as backend, pytest.raises(
            ValueError, match=f"^calibration cache '{tmp_path / 'none.cache'}' does not exist: set calibration_cache "
                              r"to an existing file \(a TensorRT calibration cache of the model\)$"):
        backend.load(tiny_cnn)
    assert runtime.builds == 0


def test_a_prebuilt_int8_engine_loads_without_a_calibration_cache(runtime, tmp_path, tiny_cnn, monkeypatch):
    """The cache is read only to build. Before, the backend's constructor and the node asked for one anyway."""
    cache = tmp_path / "tiny_cnn.cache"
    cache.write_bytes(b"TRT-calibration")
    with _backend(tmp_path, precision="int8", calibration_cache=cache) as builder:
        builder.load(tiny_cnn)
        engine = builder.engine_path
    with _backend(tmp_path, precision="int8") as prebuilt:
        prebuilt.load(engine)
        assert not prebuilt.built and {layer.precision for layer in prebuilt.describe_layers()} == {"int8"}
    monkeypatch.setenv("XDG_CACHE_HOME", str(tmp_path))
    p = NODE_DEFAULTS | {"backend": "tensorrt", "precision": "int8", "model": str(engine), "onnx_model": "zoo:tiny_cnn"}
    LoadedModel(inference_config(p, None), create_backend).close()
    assert runtime.builds == 1


@pytest.mark.parametrize("precision, flags", [("fp32", set()), ("fp16", {"fp16"}), ("int8", {"fp16", "int8"})])
def test_the_inference_nodes_precision_is_the_one_built(runtime, tmp_path, monkeypatch, precision, flags):
    """Before, the node gave the backend no precision: every build was fp16, whatever the parameter read."""
    monkeypatch.setenv("XDG_CACHE_HOME", str(tmp_path))  # the node's engine cache
    cache = tmp_path / "tiny_cnn.cache"
    cache.write_bytes(b"TRT-calibration")
    p = NODE_DEFAULTS | {"backend": "tensorrt", "precision": precision, "calibration_cache": str(cache)}
    loaded = LoadedModel(inference_config(p, None), create_backend)
    try:
        assert loaded.backend.built and loaded.backend.precision == precision
        assert runtime.last_config["flags"] == flags
        assert (runtime.last_config.get("int8_calibrator") is not None) == (precision == "int8")
    finally:
        loaded.close()


def test_a_prebuilt_engine_at_another_precision_than_its_sidecar_says_is_refused(runtime, tmp_path, tiny_cnn):
    with _backend(tmp_path, precision="fp16") as builder:
        builder.load(tiny_cnn)
        engine = builder.engine_path
    with _backend(tmp_path, precision="fp32") as other:
        with pytest.raises(ModelLoadError, match=r"was built at fp16 \(its sidecar says\), not at precision fp32"):
            other.load(engine)
    with _backend(tmp_path, precision="fp16") as same:
        same.load(engine)
        assert {layer.precision for layer in same.describe_layers()} == {"fp16"}


def test_the_gpu_smoke_script_passes_on_the_stand_in(runtime, tmp_path, monkeypatch, capsys):
    import importlib.util
    from pathlib import Path
    script = Path(__file__).resolve().parents[2] / "scripts" / "trt_smoke.py"
    spec = importlib.util.spec_from_file_location("trt_smoke", script)
    smoke = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(smoke)
    monkeypatch.setattr("sys.argv", ["trt_smoke.py", "--cache", str(tmp_path / "c")])
    assert smoke.main() == 0
    out = capsys.readouterr().out
    assert "FAIL" not in out and "cache hit" in out and "vs ORT" in out


def _on_thread(fn):
    """fn() on a new thread (the inference worker's situation); its result or its exception."""
    import threading
    out = {}

    def target():
        try:
            out["value"] = fn()
        except Exception as exc:  # noqa: BLE001 - handed back to the test
            out["error"] = exc

    t = threading.Thread(target=target)
    t.start()
    t.join(60)
    if "error" in out:
        raise out["error"]
    return out["value"]


def test_a_backend_built_on_one_thread_runs_and_profiles_on_another(runtime, tmp_path, tiny_cnn):
    """pycuda.autoinit made a context current on the importing thread only: the worker thread
    that runs the model had none ("invalid device context"). The backend owns its context."""
    backend = _backend(tmp_path)  # built on the parameter callback's thread ...
    backend.load(tiny_cnn)
    feeds = backend.dummy_feeds(seed=3)
    result = _on_thread(lambda: backend.run(feeds))  # ... run on the inference worker
    profile = _on_thread(lambda: backend.profile(feeds, runs=2))
    expected = ort.InferenceSession(tiny_cnn.SerializeToString(), providers=["CPUExecutionProvider"]).run(None, feeds)
    np.testing.assert_allclose(result.outputs["probs"], expected[0], rtol=1e-6)
    assert profile.layer_times_s and runtime.current() is None  # nothing left current on this thread
    _on_thread(backend.close)  # closed by the worker after a switch
    assert runtime.primary_retains == 0  # the context it retained is released


def test_two_backends_on_two_threads_leave_no_context_behind(runtime, tmp_path, tiny_cnn):
    first, second = _backend(tmp_path), _backend(tmp_path)
    _on_thread(lambda: first.load(tiny_cnn))
    second.load(tiny_cnn)
    feeds = first.dummy_feeds()
    a = _on_thread(lambda: first.run(feeds))
    b = second.run(feeds)
    np.testing.assert_array_equal(a.outputs["probs"], b.outputs["probs"])
    assert runtime.current() is None
    first.close()
    _on_thread(second.close)
    assert runtime.primary_retains == 0
