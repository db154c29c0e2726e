"""Measured layer times are joined to ONNX nodes: fused layers split by roofline time, every
node attributed once, totals preserved (synthetic fusions and real ONNX Runtime profiles)."""

import pytest

from edge_roofline.backends import create_backend
from edge_roofline.backends.base import LayerInfo, LayerProfile
from edge_roofline.inference.profile_join import join_profile, node_times_s
from edge_roofline.models import zoo
from edge_roofline.roofline.ceilings import spec_ceilings
from edge_roofline.roofline.costs import analyze_model
from edge_roofline.roofline.model import analyze_roofline

CEILINGS = spec_ceilings("agx_orin_64gb", "fp32")


def test_fused_layer_time_is_split_by_attainable_time():
    cost = analyze_model(zoo.build("tiny_cnn"))
    first, second = cost.layers[0].name, cost.layers[1].name
    estimate = {l.name: l.attainable_time_s for l in analyze_roofline(cost, CEILINGS).layers}
    profile = LayerProfile(layer_times_s={"fused": 3e-3},
                           layer_info=[LayerInfo("fused", "FusedConv", (first, second))], total_time_s=4e-3)
    times = node_times_s(cost, profile, CEILINGS)
    share = estimate[first] / (estimate[first] + estimate[second])
    assert times[first] == pytest.approx(3e-3 * share)
    assert times[first] + times[second] == pytest.approx(3e-3)
    analysis = join_profile(cost, profile, CEILINGS)
    assert analysis.measured_time_s == 4e-3
    assert analysis.layer(cost.layers[2].name).measured_time_s is None  # not covered, not folded: unmeasured


def test_ort_profile_attributes_every_node_once_and_keeps_the_total():
    backend = create_backend("ort")
    backend.load(zoo.build("resnet18"))
    cost = analyze_model(backend.model)
    profile = backend.profile(backend.dummy_feeds())
    owners = profile.node_to_layer()  # raises if a node is covered twice
    assert set(owners) | set(profile.folded_nodes) == {l.name for l in cost.layers}
    times = node_times_s(cost, profile, CEILINGS)
    assert sum(times.values()) == pytest.approx(profile.layer_time_sum_s, rel=1e-9)
    backend.close()


def test_ort_conv_relu_fusion_is_split_by_roofline_time():
    tiny_cnn = zoo.build("tiny_cnn")
    with create_backend("ort") as backend:
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
