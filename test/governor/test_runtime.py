"""The governor's runtime (what the node wraps) on a GPU outside the device catalogue, through a
fake pynvml: no roofline prior, each power limit learned by measuring it, the limit found at
start put back on close. No ROS."""

import sys

from edge_roofline.clock import SimClock
from edge_roofline.governor.pointwise import PointwisePredictor
from edge_roofline.governor.runtime import GovernorRuntime
from test.platforms.test_nvml_platform import fake_pynvml


def params(tmp_path):
    return {"mode": "active", "target_latency_ms": 20.0, "percentile": 95.0, "margin": 0.05,
            "platform": "nvml", "sysfs_root": "/", "nvpmodel_cmd": "nvpmodel", "device": "",
            "model": "zoo:tiny_cnn", "precision": "fp16", "engine": "gpu", "points_cpu_steps": 4,
            "points_gpu_steps": 4, "points_emc_steps": 3, "points_core_options": "",
            "points_include_presets": True, "safe_point": "", "prior_table": "",
            "state_path": str(tmp_path / "state.json"), "window_s": 5.0, "dwell_s": 3.0,
            "stale_telemetry_s": 1.0, "thermal_limit_c": 95.0, "thermal_margin_c": 5.0}


def test_runtime_governs_an_nvml_gpu_by_measuring_each_point(monkeypatch, tmp_path):
    fake = fake_pynvml()
    monkeypatch.setitem(sys.modules, "pynvml", fake)
    logs = []
    runtime = GovernorRuntime(params(tmp_path), SimClock(0.0), log=logs.append)
    gov = runtime.governor
    assert isinstance(gov.predictor, PointwisePredictor)
    assert any("not in the device catalogue" in line for line in logs)
    assert {p.power_limit_w for p in gov.candidates} == {100.0, 200.0, 250.0, 300.0, 400.0}
    runtime.platform.apply(next(p for p in gov.candidates if p.power_limit_w == 100.0))
    assert fake.state["limit_mw"] == 100_000
    runtime.close()
    assert fake.state["limit_mw"] == 250_000  # the limit found at start
