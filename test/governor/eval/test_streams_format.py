"""The several-streams scenario form: errors name the file, the key and the fix; streams are cut
into segments at every start, stop and phase change."""

import pytest

from edge_roofline.governor.eval.scenario import ScenarioError, load_scenario, scenario_from_dict

BASE = {"device": "agx_orin_64gb", "precision": "fp16", "duration_s": 10}
DET = {"name": "det", "model": "yolo_tiny", "input_rate_hz": 30, "target_latency_ms": 10}


def multi(*streams, **over):
    return scenario_from_dict({**BASE, "streams": list(streams), **over}, "ms.yaml")


@pytest.mark.parametrize("streams, over, message", [
    ([{**DET, "rate_hz": 3}], {},
     r"ms.yaml: streams\[0\] \(det\): unknown key\(s\) rate_hz; allowed keys: .*input_rate_hz"),
    ([{"model": "yolo_tiny"}], {}, r"streams\[0\]: missing key\(s\) name; add them"),
    ([{"name": "det-1", "model": "yolo_tiny"}], {}, r"name must be letters, digits and _"),
    ([DET, DET], {}, r"streams: names must be unique, got det, det"),
    ([{"name": "det", "model": "yolo_tiny"}], {}, r"\(det\): missing key\(s\) input_rate_hz, target_latency_ms"),
    ([{**DET, "start_s": 5, "stop_s": 4}], {}, r"\(det\): stop_s \(4.0\) must be after start_s \(5.0\)"),
    ([{**DET, "stop_s": 12}], {}, r"\(det\): runs until 12 s, after the scenario's duration_s \(10 s\)"),
    ([{**DET, "stop_s": 8}], {}, r"ms.yaml: no stream runs at 8-10 s; let a stream run at every moment"),
    ([DET, {**DET, "name": "seg", "start_s": 2, "stop_s": 4}, {**DET, "name": "x", "start_s": 3}], {}, None),
    ([{"name": "tr", "input_rate_hz": 3, "phases": [{"duration_s": 10, "model": "yolo_tiny", "input_rate_hz": 30,
                                                     "target_latency_ms": 9}]}], {},
     r"\(tr\): input_rate_hz beside phases; put them into each phase"),
    ([{"name": "tr", "phases": [{"duration_s": 10, "input_rate_hz": 30, "target_latency_ms": 9}]}], {},
     r"\(tr\): phases\[0\]: missing key\(s\) model"),
    ([{"name": "tr", "phases": [{"duration_s": 10, "model": "yolo_tiny", "input_rate_hz": 30, "target_latency_ms": 9,
                                 "background_gpu_load": 0.2}]}], {},
     r"phases\[0\]: unknown key\(s\) background_gpu_load"),
    ([DET], {"model": "resnet50"}, r"ms.yaml: model/phases beside streams; give each stream its model"),
    ([DET], {"duration": 10}, r"ms.yaml: unknown key\(s\) duration; allowed keys: .*duration_s"),
    ([DET], {"governor": {"streams": [{"name": "det", "target_latency_ms": 5}]}},
     r"ms.yaml: governor: streams comes from the scenario .*; drop it from governor"),
    ([{**DET, "model": "yolo_tiny2"}], {}, r"\(det\): phases\[0\]: model 'yolo_tiny2' is neither a zoo model"),
])
def test_stream_errors_name_the_file_key_and_fix(streams, over, message):
    if message is None:  # the valid neighbour of the cases around it
        assert [s.name for s in multi(*streams, **over).stream_specs] == ["det", "seg", "x"]
        return
    with pytest.raises(ScenarioError, match=message):
        multi(*streams, **over)


def test_segments_cut_at_every_stream_event():
    s = multi(DET, {**DET, "name": "seg", "model": "resnet50", "start_s": 2, "stop_s": 6},
              {"name": "tr", "phases": [{"duration_s": 4, "model": "mobilenetv2", "input_rate_hz": 30,
                                         "target_latency_ms": 5},
                                        {"duration_s": 6, "model": "yolo_tiny", "input_rate_hz": 15,
                                         "target_latency_ms": 8, "batch": 2}]})
    cuts = [(g.start_s, g.end_s, [(n, p.model) for n, p in g.active]) for g in s.segments]
    assert cuts == [(0, 2, [("det", "yolo_tiny"), ("tr", "mobilenetv2")]),
                    (2, 4, [("det", "yolo_tiny"), ("seg", "resnet50"), ("tr", "mobilenetv2")]),
                    (4, 6, [("det", "yolo_tiny"), ("seg", "resnet50"), ("tr", "yolo_tiny")]),
                    (6, 10, [("det", "yolo_tiny"), ("tr", "yolo_tiny")])]
    assert s.multi_stream and s.duration_s == 10


def test_single_stream_form_is_the_one_stream_default():
    s = load_scenario("agx_model_switch")
    assert not s.multi_stream and [st.name for st in s.stream_specs] == ["default"]
    assert [(g.start_s, g.end_s) for g in s.segments] == [(0, 15), (15, 30)]
    assert [p.model for p in s.stream_specs[0].phases] == ["resnet50", "yolo_tiny"]


def test_shipped_multi_stream_scenarios_load():
    from edge_roofline.governor.eval import shipped_scenarios
    names = [n for n in shipped_scenarios() if n.startswith("ms_")]
    loaded = [load_scenario(n) for n in names]
    assert len(names) >= 6 and all(s.multi_stream for s in loaded)
    assert {s.device for s in loaded} >= {"agx_orin_64gb", "orin_nx_16gb"}
    assert max(len(s.stream_specs) for s in loaded) >= 3
    assert sum(s.physics_perturbation > 0 for s in loaded) >= 2
