"""Candidate points and the predictor's online calibration, against a known law defined here
(not the product's virtual physics)."""

import math

import pytest

from edge_roofline.governor.config import ConfigError, GovernorConfig, PointGridConfig
from edge_roofline.governor.points import candidate_points
from edge_roofline.platforms.grid import caps_grid
from edge_roofline.governor.predictor import Observation, Predictor, RooflineWorkload
from edge_roofline.platforms.base import OperatingPoint
from edge_roofline.roofline.ceilings import preset_ceilings
from edge_roofline.roofline.costs import LayerCost, ModelCost
from edge_roofline.roofline.devices import get_device
from edge_roofline.roofline.model import analyze_roofline
from test.telemetry.fake_platform import ScriptedPlatform

DEVICE = get_device("agx_orin_64gb")


def layer(name, flops, nbytes):
    return LayerCost(name, "Conv", flops, flops / 2, nbytes, 0.0, 0.0, (), (), "fp16")


def analysis():
    cost = ModelCost("toy", "fp16", 1, (layer("conv", 40e9, 20e6), layer("add", 1e6, 400e6),
                                        layer("fc", 2e6, 1e6)), ())
    return analyze_roofline(cost, preset_ceilings(DEVICE, "MAXN", "fp16"))


def true_latency_s(p):
    """The test's own law: GPU-, EMC- and CPU-clock terms plus a constant."""
    g = p.gpu_max_freq_hz or DEVICE.gpu_max_freq_hz
    e = p.emc_max_freq_hz or DEVICE.emc_max_freq_hz
    c = p.cpu_max_freq_hz or DEVICE.cpu_max_freq_hz
    return (3e-3 * DEVICE.gpu_max_freq_hz / g + 2e-3 * DEVICE.emc_max_freq_hz / e
            + 0.2e-3 * DEVICE.cpu_max_freq_hz / c + 0.3e-3)


def true_energy_j(p, rate_hz):
    g = (p.gpu_max_freq_hz or DEVICE.gpu_max_freq_hz) / DEVICE.gpu_max_freq_hz
    e = (p.emc_max_freq_hz or DEVICE.emc_max_freq_hz) / DEVICE.emc_max_freq_hz
    idle_w = 6.0 + 3.0 * e
    busy_w = 30.0 * g ** 2 + 5.0 * e
    return idle_w / rate_hz + busy_w * true_latency_s(p)


def test_default_grid_is_96_points_inside_maxn():
    points = caps_grid(DEVICE, DEVICE.preset(0))
    assert len(points) == 96
    assert all(p.gpu_max_freq_hz <= DEVICE.gpu_max_freq_hz and p.nvpmodel_id == 0 for p in points)
    assert len({p.name for p in points}) == 96


def test_candidates_leave_out_presets_needing_a_reboot():
    from edge_roofline.clock import SimClock
    presets = [OperatingPoint("MAXN", 0), OperatingPoint("MODE_30W", 2), OperatingPoint("MODE_50W", 3)]
    platform = ScriptedPlatform(SimClock(), points=presets)
    names = {p.name for p in candidate_points(platform, PointGridConfig(gpu_steps=2, cpu_steps=1, emc_steps=1))}
    assert "MODE_50W" in names and "MAXN" in names
    assert "MODE_30W" not in names  # TPC mask 240 != MAXN's 0


def test_config_refuses_unknown_keys():
    with pytest.raises(ConfigError, match="gpu_stpes"):
        GovernorConfig.from_dict({"points": {"gpu_stpes": 3}})
    with pytest.raises(ConfigError, match="mode"):
        GovernorConfig.from_dict({"mode": "turbo"})
    cfg = GovernorConfig.from_dict({"target_latency_ms": "20", "safety": {"stale_telemetry_s": 0.5}})
    assert cfg.target_latency_s == 0.02 and cfg.safety.stale_telemetry_s == 0.5


def test_predictor_error_decreases_with_observations():
    points = caps_grid(DEVICE, DEVICE.preset(0))
    rate_hz = 30.0
    probe = points[::7]

    def errors(pred):
        lat = [abs(pred.predict(p, rate_hz).latency_s / true_latency_s(p) - 1) for p in points]
        en = [abs(pred.predict(p, rate_hz).energy_per_inference_j / true_energy_j(p, rate_hz) - 1) for p in points]
        return sum(lat) / len(lat), sum(en) / len(en)

    pred = Predictor(RooflineWorkload(analysis(), DEVICE))
    before_lat = errors(pred)[0]
    seen = []
    history = []
    for p in probe:
        seen.append(Observation(p, true_latency_s(p), true_energy_j(p, rate_hz), rate_hz, samples=30))
        pred.fit(seen)
        history.append(errors(pred))
    assert history[-1][0] < 0.5 * before_lat
    assert history[-1][0] < history[0][0] and history[-1][1] < history[0][1]
    assert history[-1][0] < 0.10 and history[-1][1] < 0.15
    # Uncertainty shrinks where data came in.
    fresh = Predictor(RooflineWorkload(analysis(), DEVICE))
    assert pred.predict(probe[0], rate_hz).latency_std_s < fresh.predict(probe[0], rate_hz).latency_std_s
    assert math.isinf(fresh.predict(probe[0], rate_hz).energy_std_j)
