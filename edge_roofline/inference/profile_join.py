"""Join a backend's measured per-layer times to the cost model (keyed by ONNX node name).

A backend layer may cover several ONNX nodes (ONNX Runtime fusions, TensorRT's "conv1 + bn1 +
relu1"). Its measured time is split across the nodes it covers in proportion to each node's
attainable (roofline) time: the runtime reports one number for the fused kernel, and the
roofline is the best available estimate of where inside it the time goes (a Conv dominates the
ReLU fused into it). Folded nodes (computed at load time) take 0 s; a node no layer covers
and that is not folded stays unmeasured (None), never a made-up zero.
"""

from __future__ import annotations

from dataclasses import replace

from edge_roofline.backends.base import LayerProfile
from edge_roofline.roofline.ceilings import Ceilings
from edge_roofline.roofline.costs import ModelCost
from edge_roofline.roofline.model import RooflineAnalysis, analyze_roofline


def node_times_s(cost: ModelCost, profile: LayerProfile, ceilings: Ceilings) -> dict[str, float]:
    """Measured seconds per ONNX node of ``cost``."""
    estimate = {l.name: l.attainable_time_s for l in analyze_roofline(cost, ceilings).layers}
    known = set(estimate)
    times: dict[str, float] = {name: 0.0 for name in profile.folded_nodes if name in known}
    for layer in profile.layer_info:
        nodes = [n for n in layer.onnx_nodes if n in known]
        measured_s = profile.layer_times_s.get(layer.name)
        if not nodes or measured_s is None:
            continue
        weights = [estimate[n] for n in nodes]
        total = sum(weights)
        for node, weight in zip(nodes, weights):
            share = weight / total if total > 0 else 1.0 / len(nodes)
            times[node] = times.get(node, 0.0) + measured_s * share
    return times


def join_profile(cost: ModelCost, profile: LayerProfile, ceilings: Ceilings) -> RooflineAnalysis:
    """The model's roofline with measured times from ``profile``; its ``measured_time_s`` is
    the end-to-end time of one profiled run."""
    analysis = analyze_roofline(cost, ceilings, measured_times_s=node_times_s(cost, profile, ceilings))
    return replace(analysis, measured_time_s=profile.total_time_s)
