"""Governor behaviour on a scripted platform with a known law, on simulated time."""

import json
import math

import numpy as np
import pytest

from edge_roofline.characterise.store import point_to_dict
from edge_roofline.clock import SimClock
from edge_roofline.governor.config import ConfigError, GovernorConfig
from edge_roofline.governor.core import Governor
from edge_roofline.governor.prior_table import TABLE_FORMAT
from edge_roofline.roofline.ceilings import preset_ceilings
from edge_roofline.roofline.costs import LayerCost, ModelCost
from edge_roofline.roofline.model import analyze_roofline

from .fake_law import DEVICE, LawPlatform, drive, law_latency_s, law_power_w, true_energy_j


def analysis():
    def layer(name, flops, nbytes):
        return LayerCost(name, "Conv", flops, flops / 2, nbytes, 0.0, 0.0, (), (), "fp16")
    cost = ModelCost("toy", "fp16", 1, (layer("conv", 40e9, 20e6), layer("add", 1e6, 400e6),
                                        layer("fc", 2e6, 1e6)), ())
    return analyze_roofline(cost, preset_ceilings(DEVICE, "MAXN", "fp16"))


def make(tmp_path, **cfg):
    clock = SimClock(100.0)
    platform = LawPlatform()
    config = GovernorConfig.from_dict({"target_latency_ms": 20.0, "percentile": 95.0,
                                       "state_path": str(tmp_path / "state.json"), **cfg})
    return Governor(platform, config, analysis(), clock), platform, clock


def best_true(gov, target_s, rate_hz, margin=0.1):
    ok = [p for p in gov.candidates if law_latency_s(p) * 1.1 <= target_s * (1 - margin)]
    return min(true_energy_j(p, rate_hz) for p in ok)


def test_converges_to_low_energy_point_meeting_target(tmp_path):
    gov, platform, clock = make(tmp_path)
    decisions = drive(gov, platform, clock, 60.0)
    last = decisions[-1]
    assert platform.current != platform.found
    e = true_energy_j(platform.current, 40.0)
    assert e <= 1.10 * best_true(gov, 0.020, 40.0), (platform.current, e)
    assert e < 0.8 * true_energy_j(platform.found, 40.0)  # MAXN is not the efficient point
    # What GovernorState publishes: the prediction's uncertainty and the window behind it.
    assert 0 < last.predicted_latency_std_s < last.predicted_latency_s
    assert last.window_samples >= gov.config.min_window_samples
    assert last.measured_latency_s < 0.020
    assert np.mean([d.violation_rate for d in decisions[-50:]]) < 0.05


def test_reacts_to_target_change(tmp_path):
    gov, platform, clock = make(tmp_path)
    drive(gov, platform, clock, 40.0)
    slow_point = platform.current
    gov.set_target(8.0, 95.0)
    decisions = drive(gov, platform, clock, 20.0)
    assert platform.current != slow_point
    assert law_latency_s(platform.current) < 8e-3
    assert decisions[-1].measured_latency_s < 8e-3


def test_advise_mode_applies_nothing(tmp_path):
    gov, platform, clock = make(tmp_path, mode="advise")
    decisions = drive(gov, platform, clock, 20.0)
    assert platform.applied == []
    assert any(d.state == "advising" and d.point != platform.found for d in decisions)


def test_stale_telemetry_falls_back_within_a_second(tmp_path):
    gov, platform, clock = make(tmp_path)
    drive(gov, platform, clock, 30.0)
    assert platform.current != platform.found
    stop = clock.now_s()
    decisions = drive(gov, platform, clock, 3.0, power_ok=lambda t: t <= stop)
    first = next(i for i, d in enumerate(decisions) if d.fallback_active)
    assert (first + 1) * 0.1 <= 1.0 + 0.15
    assert "stale telemetry" in decisions[first].reason
    assert platform.current == platform.found


def test_nan_latency_falls_back(tmp_path):
    gov, platform, clock = make(tmp_path)
    drive(gov, platform, clock, 30.0)
    start = clock.now_s()
    decisions = drive(gov, platform, clock, 1.0, latency_of=lambda t, lat: math.nan if t > start + 0.2 else lat)
    d = next(d for d in decisions if d.fallback_active)
    assert "implausible" in d.reason and platform.current == platform.found


def test_thermal_alarm_falls_back(tmp_path):
    gov, platform, clock = make(tmp_path)
    drive(gov, platform, clock, 30.0)
    start = clock.now_s()
    decisions = drive(gov, platform, clock, 1.0, temperature_c=lambda t: 93.0 if t > start + 0.3 else 50.0)
    d = next(d for d in decisions if d.fallback_active)
    assert "thermal" in d.reason and platform.current == platform.found


def test_failing_apply_keeps_the_device_where_it_was(tmp_path):
    gov, platform, clock = make(tmp_path)
    platform.fail_apply = True
    decisions = drive(gov, platform, clock, 10.0)
    assert platform.applied == []
    assert any("apply failed" in d.reason or "applying a point failed" in d.reason for d in decisions)
    assert any(d.fallback_active for d in decisions)


def test_shutdown_restores_found_point(tmp_path):
    gov, platform, clock = make(tmp_path)
    drive(gov, platform, clock, 30.0)
    assert platform.current != platform.found
    gov.shutdown()
    assert platform.current == platform.found
    assert not (tmp_path / "state.json").exists()


def test_restart_after_crash_restores_found_point(tmp_path):
    gov, platform, clock = make(tmp_path)
    drive(gov, platform, clock, 30.0)
    assert platform.current != platform.found and (tmp_path / "state.json").exists()
    # crash: no shutdown. A new process starts on the same board, now at the governor's point.
    board = LawPlatform(start=platform.current)
    Governor(board, gov.config, analysis(), SimClock(0.0))
    assert board.current == platform.found


def test_reacts_fast_to_a_heavier_workload(tmp_path):
    gov, platform, clock = make(tmp_path)
    drive(gov, platform, clock, 40.0)
    before = platform.current
    platform.scale = 1.6  # the same model now takes 60 % longer everywhere
    decisions = drive(gov, platform, clock, 10.0)
    first = next(i for i, d in enumerate(decisions) if d.applied)
    assert (first + 1) * 0.1 <= 1.5  # a violation skips the dwell time
    assert law_latency_s(decisions[first].point, 1.6) < law_latency_s(before, 1.6)
    assert law_latency_s(platform.current, 1.6) < 0.020
    measured = [d.measured_latency_s for d in decisions[-50:] if not math.isnan(d.measured_latency_s)]
    assert measured and max(measured) < 0.020


def grid(gov):
    return [p for p in gov.candidates if p.gpu_max_freq_hz is not None]


def law_table(path, gov, model="toy", simulated=False):
    """An operating-point table as `edge-roofline sweep --points grid` writes it, measured on the
    law (which knows caps, not presets: the grid only)."""
    points = [{**point_to_dict(p), "source": "measured", "latency_ms": law_latency_s(p) * 1e3,
               "latency_std_ms": 0.05 * law_latency_s(p) * 1e3, "runs": 50,
               "energy_per_inference_j": law_power_w(p, 1.0) * law_latency_s(p)} for p in grid(gov)]
    path.write_text(json.dumps({"format": TABLE_FORMAT, "simulated": simulated, "device": DEVICE.key,
                                "model": model, "precision": "fp16", "points": points}))
    return str(path)


def test_prior_table_starts_the_predictor_calibrated(tmp_path):
    (tmp_path / "a").mkdir(), (tmp_path / "b").mkdir()
    plain, _, _ = make(tmp_path / "a")
    primed, platform, clock = make(tmp_path / "b", prior_table=law_table(tmp_path / "t.json", plain))

    def mean_error(gov, rate_hz=40.0):
        preds = [gov.predictor.predict(p, rate_hz) for p in grid(gov)]
        latency = np.mean([abs(q.latency_s / law_latency_s(q.point) - 1) for q in preds])
        energy = np.mean([abs(q.energy_per_inference_j / true_energy_j(q.point, rate_hz) - 1) for q in preds])
        return latency, energy

    # before a single inference: the table's points are known, the roofline prior's are not
    # (energy: the table is back to back, the prediction is for 40 Hz)
    assert mean_error(primed)[0] < 0.03 and mean_error(plain)[0] > 0.08
    assert mean_error(primed)[1] < 0.15 and not plain.predictor.has_energy
    drive(primed, platform, clock, 15.0)
    assert true_energy_j(platform.current, 40.0) <= 1.10 * best_true(primed, 0.020, 40.0)


def test_prior_table_of_another_model_or_a_simulation_is_refused(tmp_path):
    gov, _, _ = make(tmp_path)
    with pytest.raises(ConfigError, match="is for other on agx_orin_64gb, not toy on agx_orin_64gb"):
        make(tmp_path, prior_table=law_table(tmp_path / "t.json", gov, model="other"))
    with pytest.raises(ConfigError, match="virtual Jetson .SIMULATION.; on a real board sweep the board"):
        make(tmp_path, prior_table=law_table(tmp_path / "t.json", gov, simulated=True))
    (tmp_path / "bad.json").write_text("{")
    with pytest.raises(ConfigError, match="prior_table .*bad.json"):
        make(tmp_path, prior_table=str(tmp_path / "bad.json"))
    (tmp_path / "bad.yaml").write_text("device: [agx")  # a YAML parser's error is no ValueError: it must be caught too
    with pytest.raises(ConfigError, match="prior_table .*bad.yaml is not valid YAML at line 1, column 13"):
        make(tmp_path, prior_table=str(tmp_path / "bad.yaml"))
