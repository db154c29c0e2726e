"""A short two-phase scenario the eval tests share (SIMULATION)."""

from edge_roofline.governor.eval.scenario import scenario_from_dict


def short(**over):
    data = {"device": "agx_orin_64gb", "model": "tiny_cnn", "precision": "fp16", "seed": 1,
            "phases": [{"duration_s": 3, "input_rate_hz": 30, "target_latency_ms": 5},
                       {"duration_s": 3, "input_rate_hz": 60, "target_latency_ms": 2, "background_gpu_load": 0.4}]}
    data.update(over)
    return scenario_from_dict(data, "short")
