"""A decoder's phases and its costs over the context from one graph: against graphs torch
exported at each length, against a fresh analysis, weight-only precisions, and the roofline
of every catalogued Jetson."""

from __future__ import annotations

import numpy as np
import pytest
from onnx import TensorProto, helper, numpy_helper

from edge_roofline.models import zoo
from edge_roofline.roofline.ceilings import preset_ceilings
from edge_roofline.roofline.costs import LayerCost, ModelCost, analyze_model
from edge_roofline.roofline.decoder import (DecoderCostModel, DecoderError, _Curve, decoder_signature,
                                            phase_of)
from edge_roofline.roofline.devices import CATALOGUE
from edge_roofline.roofline.phases import bound_phase, phase_to_json

# As test/roofline/conftest.py exports it (test folders are not packages: no import from there).
DECODER = {"layers": 2, "heads": 4, "hidden": 128}


def _rel(a: float, b: float) -> float:
    return abs(a - b) / b


def test_exported_graphs_say_their_phase(torch_decoder):
    for (new, context), path in torch_decoder["static"].items():
        sig = decoder_signature(path)
        assert sig.fixed_length("new") == new and sig.fixed_length("past") == context
        assert phase_of(new, sig.has_kv_cache) == ("decode" if new == 1 else "prefill")
        step = DecoderCostModel(path, precision="fp32").step(new, context)
        assert (step.phase, step.new_tokens, step.context) == (phase_of(new, True), new, context)
    dynamic = decoder_signature(torch_decoder["dynamic"])
    assert dynamic.fixed_length("new") is None and dynamic.fixed_length("past") is None
    assert dynamic.token_input == "input_ids" and len(dynamic.past_inputs) == 2 * DECODER["layers"]


def test_one_graph_projects_every_length_within_2_percent_of_its_export(torch_decoder):
    costs = DecoderCostModel(torch_decoder["dynamic"], precision="fp16")
    assert set(torch_decoder["static"]) == {(64, 0), (256, 0), (1, 128), (1, 1024)}
    for (new, context), path in torch_decoder["static"].items():
        projected = costs.step(new, context)
        assert costs.is_projected(projected.phase)  # from the fitted polynomial, not a re-analysis
        exported = analyze_model(path, precision="fp16")
        assert projected.cost.total_macs == exported.total_macs  # contractions: exact
        assert _rel(projected.flops, exported.total_flops) <= 0.02
        assert _rel(projected.bytes, exported.total_bytes) <= 0.02
        assert _rel(projected.weight_bytes, exported.total_weight_bytes) <= 0.02


def test_fitted_costs_equal_a_fresh_analysis_layer_by_layer(torch_decoder):
    costs = DecoderCostModel(torch_decoder["dynamic"], precision="fp16", weight_precision="int4")
    for context in (0, 300, 4000):  # outside and between the fitted lengths
        assert costs.decode_cost(context).layers == costs.cost(1, context).layers
    assert costs.prefill_cost(100).layers == costs.cost(100, 0).layers
    d = DECODER["hidden"] // DECODER["heads"]
    scores = costs.decode_cost(777).layer("/blocks.0/MatMul")  # Q K^T over the cache and the new token
    assert scores.macs == DECODER["heads"] * 778 * d
    assert costs.step(1, 777).kv_cache_bytes == 2 * DECODER["layers"] * DECODER["heads"] * 777 * d * 2


def test_int4_weights_are_half_of_int8(torch_decoder):
    steps = {w: DecoderCostModel(torch_decoder["dynamic"], precision="fp16", weight_precision=w).step(1, 512)
             for w in ("fp16", "int8", "int4")}
    assert steps["int4"].weight_bytes == steps["int8"].weight_bytes / 2 == steps["fp16"].weight_bytes / 4
    # Only the weights shrink: activations and the KV cache stay fp16.
    assert steps["int8"].bytes - steps["int4"].bytes == steps["int4"].weight_bytes
    assert steps["int4"].kv_cache_bytes == steps["fp16"].kv_cache_bytes
    assert steps["int4"].flops == steps["fp16"].flops


def test_decode_is_memory_bound_at_fp16_batch_1_on_every_catalogued_jetson(torch_decoder):
    costs = DecoderCostModel(torch_decoder["dynamic"], precision="fp16")
    decode = [costs.step(1, c) for c in (128, 1024, 8192)]
    prefill = costs.step(256, 0)
    for step in decode:
        assert 0.2 < step.arithmetic_intensity < 1.5  # ~1 FLOP per fp16 weight byte, falling with the cache
    assert prefill.arithmetic_intensity > 10 * decode[0].arithmetic_intensity
    checked = 0
    for device in CATALOGUE.values():
        for preset in device.presets:
            ceilings = preset_ceilings(device, preset.name, "fp16")
            for step in decode:
                bound = bound_phase(step, ceilings)
                assert bound.bound == "memory", (device.key, preset.name, step.context)
                assert bound.roofline_time_s == pytest.approx(step.bytes / ceilings.dram_bandwidth_bps)
                checked += 1
    assert checked >= 3 * len(CATALOGUE)


def test_phase_bound_times_and_json():
    costs = DecoderCostModel(zoo.build("tiny_decoder"), precision="fp16")
    ceilings = preset_ceilings("agx_orin_64gb", "MAXN", "fp16")
    prefill = bound_phase(costs.step(64, 0), ceilings, measured_time_s=0.032)
    assert prefill.phase == "prefill" and prefill.time_per_token_s == pytest.approx(0.0005)
    assert prefill.tokens_per_s == pytest.approx(2000) and prefill.label == "prefill 64"
    decode = bound_phase(costs.step(1, 64), ceilings)
    assert decode.time_s == decode.attainable_time_s > decode.roofline_time_s
    assert decode.overhead_time_s == pytest.approx(ceilings.layer_overhead_s * sum(
        not l.is_view for l in decode.step.cost.layers))
    doc = phase_to_json(decode)
    assert doc["phase"] == "decode" and doc["context"] == 64 and doc["bound"] == "memory"
    assert doc["weight_bytes"] == decode.weight_bytes > 0


def test_a_graph_with_fixed_lengths_refuses_others(torch_decoder):
    costs = DecoderCostModel(torch_decoder["static"][(1, 128)], precision="fp16")
    assert costs.step(1, 128).context == 128
    with pytest.raises(DecoderError, match=r"fixes the past \(context\) length at 128"):
        costs.step(1, 512)


def test_what_is_not_a_decoder_says_so():
    assert decoder_signature(zoo.build("tiny_cnn")) is None
    assert decoder_signature(zoo.build("transformer", seq_len=16, layers=1)) is None  # an encoder
    with pytest.raises(DecoderError, match="not a decoder with a KV cache"):
        DecoderCostModel(zoo.build("tiny_cnn"))


def _hf_like(extra_input=None):
    """input_ids, position_ids, attention_mask [batch, past + new] and one cache tensor."""
    f, i64 = TensorProto.FLOAT, TensorProto.INT64
    inputs = [helper.make_tensor_value_info("input_ids", i64, ["batch", "sequence"]),
              helper.make_tensor_value_info("attention_mask", i64, ["batch", "past_sequence + sequence"]),
              helper.make_tensor_value_info("past_key_values.0.key", f, ["batch", 2, "past_sequence", 8])]
    nodes = [helper.make_node("Gather", ["table", "input_ids"], ["emb"], name="lookup"),
             helper.make_node("Reshape", ["emb", "heads"], ["k"], name="heads"),
             helper.make_node("Transpose", ["k"], ["kt"], name="kt", perm=[0, 2, 1, 3]),
             helper.make_node("Concat", ["past_key_values.0.key", "kt"], ["present.0.key"], name="cat", axis=2)]
    if extra_input:
        inputs.append(helper.make_tensor_value_info(extra_input, f, ["batch", "frames"]))
    graph = helper.make_graph(nodes, "hf_like", inputs,
                              [helper.make_tensor_value_info("present.0.key", f, None)],
                              [numpy_helper.from_array(np.zeros((50, 16), np.float32), "table"),
                               numpy_helper.from_array(np.array([0, 0, 2, 8], np.int64), "heads")])
    return helper.make_model(graph, opset_imports=[helper.make_opsetid("", 17)])


def test_roles_of_an_attention_mask_and_unnamed_symbolic_dims():
    sig = decoder_signature(_hf_like())
    shapes = sig.input_shapes(3, 10, batch=2)
    assert shapes == {"input_ids": (2, 3), "attention_mask": (2, 13),
                      "past_key_values.0.key": (2, 2, 10, 8)}
    costs = DecoderCostModel(_hf_like(), precision="fp32")
    assert costs.step(1, 10).cost.layer("cat").output_shapes == ((1, 2, 11, 8),)
    with pytest.raises(DecoderError, match=r"input 'audio' dimension 1 \('frames'\) is symbolic"):
        DecoderCostModel(_hf_like("audio")).step(1, 4)
    given = DecoderCostModel(_hf_like("audio"), input_shapes={"audio": (1, 30)})
    assert given.step(1, 4).cost.input_shapes["audio"] == (1, 30)
    with pytest.raises(DecoderError, match="new tokens must be >= 1"):
        sig.input_shapes(0, 4)
    assert DecoderCostModel(_hf_like(), batch=3).step(1, 4).cost.input_shapes["input_ids"] == (3, 1)
    with pytest.raises(DecoderError, match="batch=3 asked, but every input's leading dimension is static"):
        DecoderCostModel(zoo.build("tiny_decoder"), batch=3)


def _cost(values: dict[str, float]) -> ModelCost:
    layer = LayerCost(name="l", op_type="TopK", flops=0, macs=0, bytes_read=0, bytes_written=0,
                      param_bytes=0, input_shapes=(), output_shapes=(), precision="fp32")
    from dataclasses import replace
    return ModelCost(model="m", precision="fp32", batch=1, layers=(replace(layer, **values),),
                     unknown_ops=())


def test_a_cost_that_is_not_polynomial_in_the_length_is_not_fitted():
    assert _Curve.fit(lambda n: _cost({"flops": n * np.log2(n)})) is None  # e.g. a sort
    quadratic = _Curve.fit(lambda n: _cost({"flops": 3 * n * n + n, "bytes_read": 2 * n}))
    assert quadratic.at(1000).layers[0].flops == 3e6 + 1000
