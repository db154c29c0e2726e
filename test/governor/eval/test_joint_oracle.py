"""The joint per-phase oracle (SIMULATION): every candidate point simulated with all of the
phase's streams at once; the least energy where EVERY stream meets its target."""

from edge_roofline.governor.eval.hindsight import Hindsight
from edge_roofline.governor.eval.scenario import scenario_from_dict

SMALL_GRID = {"points": {"cpu_steps": 1, "gpu_steps": 3, "emc_steps": 2, "core_options": [6],
                         "include_presets": False}}
DETECTOR = {"name": "detector", "model": "yolo_tiny", "input_rate_hz": 30, "target_latency_ms": 5}
CLASSIFIER = {"name": "classifier", "model": "resnet50", "batch": 4, "input_rate_hz": 15, "target_latency_ms": 8}


def _scenario(*streams):
    return scenario_from_dict({"device": "agx_orin_64gb", "precision": "fp16", "seed": 2, "duration_s": 4,
                               "streams": list(streams), "governor": SMALL_GRID}, "joint")


def test_joint_oracle_is_the_least_energy_point_meeting_every_stream():
    s = _scenario(DETECTOR, CLASSIFIER)
    hindsight = Hindsight(s)
    segment = s.segments[0]
    results = hindsight.phase_results(segment)
    assert len(results) == len(hindsight.candidates) == 6
    best = hindsight.oracle()[0]
    assert best.meets(segment)
    for r in results:
        per_stream = [st.latency_percentile_s <= ph.target_latency_s and st.violation_rate <= 0.01
                      for st, (_, ph) in zip(r.streams, segment.active)]
        assert r.meets(segment) == all(per_stream)
        if r.energy_per_inference_j < best.energy_per_inference_j:
            assert not all(per_stream), r.point.name  # every cheaper point misses some stream's target
    # jointly: a point where each stream alone would meet its target can miss with both running
    alone = {st["name"]: {r.point.name: r for r in Hindsight(_scenario(st)).phase_results(_scenario(st).segments[0])}
             for st in (DETECTOR, CLASSIFIER)}
    fits_alone = [r for r in results if all(alone[n][r.point.name].meets(_scenario(st).segments[0])
                                            for n, st in (("detector", DETECTOR), ("classifier", CLASSIFIER)))]
    cheapest_alone = min(fits_alone, key=lambda r: r.energy_per_inference_j)
    assert not cheapest_alone.meets(segment) and best.energy_per_inference_j > cheapest_alone.energy_per_inference_j
