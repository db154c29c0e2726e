"""join_profile on a real ONNX Runtime profile of tiny_cnn: ORT's Conv+Relu fusion is split by
roofline time, every node is attributed once and the layer total is preserved (resnet18 and a
synthetic fusion are covered in test/inference/test_profiling_join.py)."""

from __future__ import annotations

import pytest

from edge_roofline.backends.onnxruntime_backend import OnnxRuntimeBackend
from edge_roofline.inference.profile_join import join_profile
from edge_roofline.roofline.ceilings import spec_ceilings
from edge_roofline.roofline.costs import analyze_model
from edge_roofline.roofline.model import analyze_roofline

CEILINGS = spec_ceilings("agx_orin_64gb", "fp32")


def test_ort_conv_relu_fusion_is_split_by_roofline_time(tiny_cnn):
    with OnnxRuntimeBackend() as backend:
        backend.load(tiny_cnn)
        profile = backend.profile(backend.dummy_feeds(), runs=2)
    cost = analyze_model(tiny_cnn)
    op = {l.name: l.op_type for l in cost.layers}
    fused = next(l for l in profile.layer_info
                 if sorted(op[n] for n in l.onnx_nodes) == ["Conv", "Relu"])
    conv, relu = sorted(fused.onnx_nodes, key=lambda n: op[n])
    roof = {l.name: l.attainable_time_s for l in analyze_roofline(cost, CEILINGS).layers}
    analysis = join_profile(cost, profile, CEILINGS)
    layer_s = profile.layer_times_s[fused.name]
    assert analysis.layer(conv).measured_time_s == pytest.approx(
        layer_s * roof[conv] / (roof[conv] + roof[relu]))
    assert analysis.layer(relu).measured_time_s == pytest.approx(
        layer_s * roof[relu] / (roof[conv] + roof[relu]))
    owners = profile.node_to_layer()  # raises if a node is covered twice
    assert set(owners) | set(profile.folded_nodes) == set(op)
    assert not set(owners) & set(profile.folded_nodes)
    measured = [l.measured_time_s for l in analysis.layers]
    assert None not in measured
    assert sum(measured) == pytest.approx(profile.layer_time_sum_s, rel=1e-9)
    assert analysis.measured_time_s == profile.total_time_s
