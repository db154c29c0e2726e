"""ros/analysis.py: a RooflineReport, as the inference node publishes it, reads back into the
core's analysis without rclpy (what `edge-roofline recording --plot` charts)."""

import pytest

from builtin_interfaces.msg import Time

from edge_roofline.msg import LayerRoofline
from edge_roofline.nodes.convert import roofline_report_msg
from edge_roofline.roofline.ceilings import spec_ceilings
from edge_roofline.roofline.costs import LayerCost, ModelCost
from edge_roofline.roofline.model import analyze_roofline
from edge_roofline.ros.analysis import BOUND_TO_MSG, roofline_analysis_from_msg


def test_bounds_are_the_message_constants():
    assert set(BOUND_TO_MSG.values()) == {LayerRoofline.BOUND_COMPUTE, LayerRoofline.BOUND_MEMORY,
                                          LayerRoofline.BOUND_LATENCY}


def test_a_published_report_reads_back_into_the_same_analysis():
    ceilings = spec_ceilings("agx_orin_64gb", "fp16")
    cost = ModelCost(model="m", precision="fp16", batch=1, unknown_ops=(), layers=tuple(
        LayerCost(name=name, op_type="Conv", flops=flops, macs=flops / 2, bytes_read=bytes_, bytes_written=0.0,
                  param_bytes=0.0, input_shapes=(), output_shapes=(), precision="fp16")
        for name, flops, bytes_ in (("compute", 4e10, 1e6), ("memory", 1e6, 1e9), ("tiny", 1e3, 1e3))))
    analysis = analyze_roofline(cost, ceilings)
    msg = roofline_report_msg(analysis, Time(), model_id="m", backend="virtual", device="agx", simulated=True,
                              point=None, sample_count=1)
    back = roofline_analysis_from_msg(msg)
    assert [(l.name, l.bound) for l in back.layers] == [(l.name, l.bound) for l in analysis.layers]
    assert {l.bound for l in back.layers} == {"compute", "memory", "overhead"}
    assert back.attainable_time_s == pytest.approx(analysis.attainable_time_s)
    assert back.ceilings.peak_flops == pytest.approx(ceilings.peak_flops)
