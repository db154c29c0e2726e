"""ONNX Runtime backend: same outputs as a plain session, per-node profiles that attribute
every ONNX node exactly once, no profiling on the fast path, and clear errors."""

from __future__ import annotations

import numpy as np
import onnx
import onnxruntime as ort
import pytest
from onnx import TensorProto, helper

from edge_roofline.backends import create_backend
from edge_roofline.backends.base import (
    BackendError, InputShapeError, MissingInputError, ModelLoadError, TensorNameError,
)
from edge_roofline.backends.onnxruntime_backend import (
    OnnxRuntimeBackend, group_kernels, kernel_times_from_trace,
)


def _direct(model, level=ort.GraphOptimizationLevel.ORT_ENABLE_EXTENDED):
    so = ort.SessionOptions()
    so.graph_optimization_level = level
    return ort.InferenceSession(model.SerializeToString(), so, providers=["CPUExecutionProvider"])


@pytest.fixture
def backend():
    b = OnnxRuntimeBackend()
    yield b
    b.close()


def test_outputs_equal_a_direct_onnxruntime_session(backend, tiny_cnn, transformer_small):
    for model in (tiny_cnn, transformer_small):
        backend.load(model)
        feeds = backend.dummy_feeds(seed=3)
        result = backend.run(feeds)
        expected = _direct(model).run(None, feeds)
        assert result.computed and not result.has_nonfinite and result.latency_s > 0
        assert list(result.outputs) == [o.name for o in model.graph.output]
        for got, want in zip(result.outputs.values(), expected):
            np.testing.assert_array_equal(got, want)
        # the default "all" level of a plain session agrees to float tolerance
        direct = _direct(model, ort.GraphOptimizationLevel.ORT_ENABLE_ALL).run(None, feeds)
        for got, want in zip(result.outputs.values(), direct):
            np.testing.assert_allclose(got, want, rtol=1e-4, atol=1e-5)


def test_load_from_path_and_describe_io(backend, tiny_cnn, tmp_path):
    path = tmp_path / "tiny.onnx"
    onnx.save(tiny_cnn, str(path))
    backend.load(str(path))
    (inp,) = backend.inputs()
    assert (inp.name, inp.shape, inp.dtype) == ("input", (1, 3, 64, 64), "float32")
    assert [(o.name, o.shape) for o in backend.outputs()] == [("probs", (1, 10))]


def _assert_exact_cover(model, profile):
    owner = profile.node_to_layer()  # raises if a node is covered twice
    names = [n.name for n in model.graph.node]
    assert sorted(list(owner) + list(profile.folded_nodes)) == sorted(names)
    assert not set(owner) & set(profile.folded_nodes)


@pytest.mark.parametrize("fixture", ["tiny_cnn", "resnet18_small", "transformer_small"])
def test_profile_covers_every_node_exactly_once(backend, fixture, request):
    model = request.getfixturevalue(fixture)
    backend.load(model)
    profile = backend.profile(backend.dummy_feeds(), runs=2)
    _assert_exact_cover(model, profile)
    assert profile.runs == 2 and profile.backend == "ort"
    assert set(profile.layer_times_s) == {layer.name for layer in profile.layer_info}
    assert all(t > 0 for t in profile.layer_times_s.values())
    # layers run inside the run; the rest of the run is scheduling overhead
    assert 0 < profile.layer_time_sum_s <= profile.total_time_s * 1.01
    # fusions happened (fewer layers than nodes), so the mapping was actually exercised
    assert len(profile.layer_info) < len(model.graph.node)


def test_fused_layers_are_named_after_their_kernels(backend, resnet18_small):
    backend.load(resnet18_small)
    layers = {layer.name: layer for layer in backend.describe_layers()}
    stem = next(layer for layer in layers.values() if "stem.conv" in layer.onnx_nodes)
    assert set(stem.onnx_nodes) == {"stem.conv", "stem.bn", "stem.act"}
    assert stem.op_type == "FusedConv"


def test_a_3d_matmul_add_rewritten_as_reshape_gemm_reshape_is_one_layer(backend):
    from edge_roofline.models import zoo
    backend.load(zoo.build("lstm", seq_len=10))
    (layer,) = [l for l in backend.describe_layers() if "classifier.add" in l.onnx_nodes]
    assert layer.onnx_nodes == ("classifier.matmul", "classifier.add")
    assert layer.op_type == "Reshape+Gemm+Reshape" and len(layer.extra["kernels"]) == 3


def test_profiling_is_off_on_the_fast_path(backend, tiny_cnn, tiny_feeds, tmp_path, monkeypatch):
    monkeypatch.chdir(tmp_path)  # ORT would write traces to the working directory
    backend.load(tiny_cnn)
    for _ in range(3):
        backend.run(tiny_feeds)
    assert backend.session.get_session_options().enable_profiling is False
    assert backend._next_profiler is None  # no profiling session until one is asked for
    assert not list(tmp_path.iterdir())


def test_repeated_profiles_rotate_sessions_and_leave_outputs_alone(backend, tiny_cnn, tiny_feeds):
    backend.load(tiny_cnn)
    before = backend.run(tiny_feeds).outputs["probs"]
    first = backend.profile(tiny_feeds)
    second = backend.profile(tiny_feeds)  # a used ORT session cannot profile again
    assert set(first.layer_times_s) == set(second.layer_times_s)
    assert backend.profiler_prepare_s > 0  # the next one was prepared ahead
    np.testing.assert_array_equal(backend.run(tiny_feeds).outputs["probs"], before)


# ---- pure logic ------------------------------------------------------------------------

def _graph(nodes, inits=()):
    return helper.make_graph(nodes, "g", [helper.make_tensor_value_info("x", TensorProto.FLOAT, None)],
                             [helper.make_tensor_value_info("out", TensorProto.FLOAT, None)],
                             [helper.make_tensor(n, TensorProto.FLOAT, [1], [1.0]) for n in inits])


def test_group_kernels_follows_dataflow_not_names():
    original = _graph([
        helper.make_node("Conv", ["x", "w"], ["c"], name="conv"),
        helper.make_node("BatchNormalization", ["c", "s", "b", "m", "v"], ["bn"], name="bn"),
        helper.make_node("Relu", ["bn"], ["r"], name="relu"),
        helper.make_node("Shape", ["w"], ["shape"], name="shape_of_w"),  # constant-folded
        helper.make_node("MatMul", ["r", "w2"], ["mm"], name="matmul"),
        helper.make_node("Add", ["mm", "bias"], ["out"], name="add"),
    ], inits=["w", "s", "b", "m", "v", "w2", "bias"])
    optimized = _graph([
        helper.make_node("FusedConv", ["x", "w_fused"], ["r"], name="renamed_by_runtime"),
        helper.make_node("Reshape", ["r", "shape2d"], ["r2d"], name="reshape_in"),
        helper.make_node("Gemm", ["r2d", "w2", "bias"], ["g"], name="gemm"),
        helper.make_node("Reshape", ["g", "shape3d"], ["out"], name="reshape_out"),
        helper.make_node("MemcpyToHost", ["x"], ["x_host"], name="memcpy"),
    ], inits=["w_fused", "w2", "bias", "shape2d", "shape3d"])
    groups, folded = group_kernels(original, optimized)
    by_kernels = {g.kernels: g.onnx_nodes for g in groups}
    assert by_kernels == {
        ("renamed_by_runtime",): ("conv", "bn", "relu"),
        ("reshape_in", "gemm", "reshape_out"): ("matmul", "add"),
        ("memcpy",): (),
    }
    assert folded == ("shape_of_w",)
    assert next(g for g in groups if "gemm" in g.kernels).name == "reshape_in + gemm + reshape_out"


def test_kernel_times_from_trace_skips_warmup_runs():
    def run(ts, dur):
        return {"cat": "Session", "name": "model_run", "ts": ts, "dur": dur}

    def node(name, ts, dur):
        return {"cat": "Node", "name": f"{name}_kernel_time", "ts": ts, "dur": dur,
                "args": {"op_name": "Conv"}}

    events = [run(0, 100), node("a", 1, 60), node("b", 61, 30),  # warm-up
              run(200, 50), node("a", 201, 20), node("b", 221, 10),
              {"cat": "Node", "name": "a_fence_before", "ts": 201, "dur": 5},
              run(300, 40), node("a", 301, 25), node("b", 326, 10)]
    times, runs = kernel_times_from_trace(events, skip_runs=1)
    assert times == pytest.approx({"a": 45e-6, "b": 20e-6})
    assert runs == pytest.approx([50e-6, 40e-6])


# ---- bad input -------------------------------------------------------------------------

def test_corrupt_and_missing_model_files_raise_model_load_error(backend, tmp_path):
    corrupt = tmp_path / "corrupt.onnx"
    corrupt.write_bytes(b"\x08\x07garbage that is not a protobuf" * 10)
    with pytest.raises(ModelLoadError, match="corrupt.onnx"):
        backend.load(corrupt)
    with pytest.raises(ModelLoadError, match="cannot read"):
        backend.load(tmp_path / "missing.onnx")
    truncated = tmp_path / "truncated.onnx"
    from edge_roofline.models import zoo
    truncated.write_bytes(zoo.build("tiny_cnn").SerializeToString()[:5000])
    with pytest.raises(ModelLoadError):
        backend.load(truncated)
    with pytest.raises(ModelLoadError, match="load\\(\\) first"):
        OnnxRuntimeBackend().inputs()


def test_wrong_and_missing_tensor_names_list_the_expected_ones(backend, tiny_cnn, tiny_feeds):
    backend.load(tiny_cnn)
    with pytest.raises(TensorNameError) as err:
        backend.run({"images": tiny_feeds["input"]})
    message = str(err.value)
    assert "'images'" in message and "'input'" in message
    assert err.value.wrong == ["images"] and err.value.expected == ["input"]
    with pytest.raises(MissingInputError, match="missing input.*'input'"):
        backend.run({})
    assert issubclass(TensorNameError, BackendError)


def test_wrong_shape_or_dtype_raise_input_shape_error(backend, tiny_cnn):
    backend.load(tiny_cnn)
    with pytest.raises(InputShapeError, match=r"\[1, 3, 64, 64\].*\[1, 3, 32, 32\]"):
        backend.run({"input": np.zeros((1, 3, 32, 32), np.float32)})
    with pytest.raises(InputShapeError, match="float32.*float64"):
        backend.run({"input": np.zeros((1, 3, 64, 64))})


def test_nan_and_inf_outputs_are_flagged(backend, nan_model):
    backend.load(nan_model)
    bad = backend.run({"x": np.array([4.0, -1.0, 0.0, 1.0], np.float32)})
    assert bad.nonfinite_outputs == ("y", "z") and bad.has_nonfinite
    assert np.isnan(bad.outputs["y"][1]) and np.isneginf(bad.outputs["z"][2])
    good = backend.run({"x": np.array([4.0, 1.0, 2.0, 1.0], np.float32)})
    assert good.nonfinite_outputs == () and not good.has_nonfinite


def test_unnamed_nodes_are_refused_because_they_cannot_be_attributed(backend, model_factory):
    x = helper.make_tensor_value_info("x", TensorProto.FLOAT, [2])
    model = model_factory([helper.make_node("Relu", ["x"], ["y"])], [x],
                       [helper.make_tensor_value_info("y", TensorProto.FLOAT, [2])])
    with pytest.raises(ModelLoadError, match="unnamed"):
        backend.load(model)


def test_factory():
    assert isinstance(create_backend("ort"), OnnxRuntimeBackend)
    with pytest.raises(ValueError, match="'ort', 'tensorrt' or 'virtual'"):
        create_backend("openvino")
