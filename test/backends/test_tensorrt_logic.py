"""TensorRT backend logic that needs no GPU, on fixtures built from the documented formats."""

from __future__ import annotations

from pathlib import Path

import pytest

from edge_roofline.backends.base import EngineVersionError, ModelLoadError
from edge_roofline.backends.tensorrt_layers import (
    LayerTimeAccumulator, check_engine_metadata, deserialize_failure, engine_cache_key,
    engine_metadata, parse_layer_information, parse_trtexec_profile,
)

FIXTURES = Path(__file__).parent / "fixtures"
NODES = ["conv1", "relu1", "conv2", "relu2", "pool", "fc"]


def test_cache_key_changes_with_model_version_device_and_flags():
    base = engine_cache_key(b"model", "10.3.0", "Orin", {"fp16": True})
    assert base == engine_cache_key(b"model", "10.3.0", "Orin", {"fp16": True})
    others = {engine_cache_key(b"model2", "10.3.0", "Orin", {"fp16": True}),
              engine_cache_key(b"model", "8.6.1", "Orin", {"fp16": True}),
              engine_cache_key(b"model", "10.3.0", "H200", {"fp16": True}),
              engine_cache_key(b"model", "10.3.0", "Orin", {"fp16": False}),
              engine_cache_key(b"model", "10.3.0", "Orin", {"fp16": True}, (8, 7))}
    assert base not in others and len(others) == 5
    assert "/" not in base and base.endswith("trt10.3.0")


def test_inspector_layers_map_to_onnx_nodes_and_reformats_cover_none():
    layers = parse_layer_information((FIXTURES / "trt_engine_info.json").read_text(), NODES, "fp16")
    by_name = {l.name: l for l in layers}
    assert by_name["Reformatting CopyNode for Input Tensor 0 to conv1 + relu1"].onnx_nodes == ()
    assert by_name["conv1 + relu1"].onnx_nodes == ("conv1", "relu1")  # from Metadata
    assert by_name["conv1 + relu1"].tactic == "sm80_xmma_fprop"
    assert by_name["PWN(relu2)"].onnx_nodes == ("relu2",)
    assert by_name["pool + fc"].onnx_nodes == ("pool", "fc")  # from the name
    covered = [n for l in layers for n in l.onnx_nodes]
    assert sorted(covered) == sorted(set(covered))  # each node once; conv2 was fused away


def test_a_node_named_by_two_layers_goes_to_the_first():
    layers = parse_layer_information({"Layers": ["conv1 + relu1", "relu1"]}, NODES)
    assert [l.onnx_nodes for l in layers] == [("conv1", "relu1"), ()]


def test_trtexec_profile_parse_and_profiler_accumulation():
    times_s, count = parse_trtexec_profile((FIXTURES / "trtexec_profile.json").read_text())
    assert count == 100
    assert times_s["conv1 + relu1"] == pytest.approx(0.3e-3)
    assert sum(times_s.values()) == pytest.approx(0.5e-3)
    acc = LayerTimeAccumulator()
    for ms in (1.0, 3.0):
        acc.add("conv1 + relu1", ms)
    assert acc.mean_times_s(runs=2) == {"conv1 + relu1": pytest.approx(2e-3)}
    assert acc.reports == {"conv1 + relu1": 2}


def test_without_tensorrt_the_backend_says_what_to_install():
    from edge_roofline.backends import create_backend
    from edge_roofline.backends.base import BackendError
    try:
        import tensorrt  # noqa: F401
        pytest.skip("tensorrt is installed here")
    except ImportError:
        pass
    with pytest.raises(BackendError, match="tensorrt and pycuda.*use the ort or virtual backend"):
        create_backend("tensorrt")


# TensorRT's messages on a failed deserialize, as reported in NVIDIA/TensorRT issues #2041,
# #2195 and jetson-inference #426 (TRT 8.x/10.x tag check; TRT <= 8.0 library check).
TAG_MISMATCH = ["1: [stdArchiveReader.cpp::StdArchiveReader::40] Error Code 1: Serialization "
                "(Serialization assertion stdVersionRead == serializationVersion failed.Version tag "
                "does not match. Note: Current Version: 213, Serialized Engine Version: 205)",
                "4: [runtime.cpp::deserializeCudaEngine::50] Error Code 4: Internal Error "
                "(Engine deserialization failed.)"]
LIBRARY_MISMATCH = ["6: The engine plan file is not compatible with this version of TensorRT, "
                    "expecting library version 8.0.0 got 8.0.1, please rebuild."]


def test_deserialize_failures_tell_version_mismatch_from_corruption():
    err = deserialize_failure(TAG_MISMATCH, "8.4.1", "'m.engine'")
    assert isinstance(err, EngineVersionError)
    assert "205" in str(err) and "213" in str(err) and "rebuild" in str(err)
    err = deserialize_failure(LIBRARY_MISMATCH, "8.0.0", "'m.engine'")
    assert isinstance(err, EngineVersionError) and "built by TensorRT 8.0.1" in str(err)
    corrupt = deserialize_failure(["1: Serialization (Magic tag does not match)", TAG_MISMATCH[1]],
                                  "10.3.0", "'m.engine'")
    assert type(corrupt) is ModelLoadError and "Magic tag" in str(corrupt)


def test_sidecar_checks_version_architecture_and_precision():
    meta = engine_metadata("10.3.0", "Orin", (8, 7), {"precision": "fp16"}, b"onnx")
    check_engine_metadata(meta, "10.3.0", (8, 7), "'e'")  # same build: fine
    with pytest.raises(EngineVersionError, match="built with TensorRT 10.3.0, this is TensorRT 8.6.1"):
        check_engine_metadata(meta, "8.6.1", (8, 7), "'e'")
    with pytest.raises(EngineVersionError, match="compute capability 8.7 \\(Orin\\).*7.2"):
        check_engine_metadata(meta, "10.3.0", (7, 2), "'e'")
    check_engine_metadata(meta, "10.3.0", (8, 7), "'e'", "fp16")  # built at the precision asked for
    # An engine's precision is fixed at build time: one asked at another would be claimed, not run.
    with pytest.raises(ModelLoadError, match=r"^engine 'e' was built at fp16 \(its sidecar says\), not at "
                                             "precision int8: set precision to fp16, or load the ONNX model to "
                                             "build it at int8$"):
        check_engine_metadata(meta, "10.3.0", (8, 7), "'e'", "int8")


def test_myelin_foreign_node_ranges_take_the_unclaimed_nodes_between():
    nodes = ["embed", "q", "k", "softmax", "ctx", "norm", "head"]
    layers = parse_layer_information({"Layers": [
        "embed", "{ForeignNode[encoder.weight...ctx]}", "norm + head"]}, nodes)
    assert [l.onnx_nodes for l in layers] == [("embed",), ("q", "k", "softmax", "ctx"), ("norm", "head")]
    # a range whose last node is unknown covers nothing rather than guessing
    assert parse_layer_information(["{ForeignNode[q...gone]}"], nodes)[0].onnx_nodes == ()
