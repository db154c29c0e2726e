"""Decoded messages back into the core's dataclasses, without rclpy: the offline CLI charts a
recording (ros/recording.py) with the same code as a live analysis."""

from __future__ import annotations

import math

from edge_roofline.roofline.ceilings import Ceilings
from edge_roofline.roofline.model import LayerBound, RooflineAnalysis

# LayerBound.bound -> LayerRoofline.bound (the BOUND_* constants of msg/LayerRoofline.msg).
BOUND_TO_MSG = {"compute": "compute", "memory": "memory", "overhead": "latency"}


def roofline_analysis_from_msg(msg) -> RooflineAnalysis:
    """A RooflineReport (live, or decoded from a recording) back into the core's analysis, so
    the CLI can chart recordings with the same code as live analyses."""
    def opt(value):
        return None if value is None or math.isnan(value) else float(value)

    bound_back = {v: k for k, v in BOUND_TO_MSG.items()}
    ceilings = Ceilings(engine=msg.ceilings_engine, precision=msg.layers[0].precision if msg.layers else "fp32",
                        peak_flops=msg.peak_flop_per_s, dram_bandwidth_bps=msg.dram_bandwidth_bytes_per_s,
                        l2_bandwidth_bps=opt(msg.l2_bandwidth_bytes_per_s), l1_bandwidth_bps=None,
                        layer_overhead_s=msg.layer_overhead_s, source=msg.ceilings_source,
                        dram_unresolved="as reported" if "DRAM unresolved" in msg.ceilings_source else None,
                        label=f"{msg.device} {msg.operating_point.name}".strip())
    layers = tuple(LayerBound(
        name=l.name, op_type=l.op_type, flops=l.flops, bytes=l.bytes_total,
        arithmetic_intensity=l.arithmetic_intensity_flop_per_byte, attainable_flops=l.attainable_flop_per_s,
        attainable_time_s=l.attainable_time_s,
        compute_time_s=l.flops / msg.peak_flop_per_s if msg.peak_flop_per_s else 0.0,
        memory_time_s=l.bytes_total / msg.dram_bandwidth_bytes_per_s if msg.dram_bandwidth_bytes_per_s else 0.0,
        overhead_time_s=msg.layer_overhead_s, bound=bound_back.get(l.bound, l.bound),
        measured_time_s=opt(l.measured_time_s), achieved_flops=opt(l.achieved_flop_per_s),
        achieved_bandwidth_bps=opt(l.achieved_bytes_per_s), efficiency=opt(l.efficiency)) for l in msg.layers)
    return RooflineAnalysis(model=msg.model_id, ceilings=ceilings, layers=layers, total_flops=msg.total_flops,
                            total_bytes=msg.total_bytes, attainable_time_s=msg.total_attainable_time_s,
                            measured_time_s=opt(msg.total_measured_time_s), unknown_ops=tuple(msg.unknown_ops),
                            precision=ceilings.precision)
