"""The governor on a platform outside the device catalogue (a discrete GPU as NVML shows it:
power-limit points), where each point is learned by measuring it; a scripted law, simulated time."""

import math

import numpy as np

from edge_roofline.clock import SimClock
from edge_roofline.governor.config import GovernorConfig
from edge_roofline.governor.core import Governor
from edge_roofline.governor.pointwise import PointwisePower, PointwisePredictor
from edge_roofline.platforms.base import DeviceIdentity, OperatingPoint

from .fake_law import LawPlatform, drive

LIMITS_W = (100.0, 150.0, 200.0, 250.0, 300.0)
IDLE_W = 30.0


def latency_s(p, scale=1.0):
    """8 ms at 300 W; a lower power limit slows the clocks (performance ~ power^0.6)."""
    return scale * 8e-3 * (300.0 / p.power_limit_w) ** 0.6


def power_w(p, duty, scale=1.0):
    return IDLE_W + duty * (p.power_limit_w - IDLE_W)


def energy_j(p, rate_hz):
    return power_w(p, min(1.0, latency_s(p) * rate_hz)) / rate_hz


class NvmlLawPlatform(LawPlatform):
    def __init__(self):
        super().__init__(OperatingPoint("limit300W", power_limit_w=300.0))

    def identity(self):
        return DeviceIdentity("nvml", "law GPU", None)

    def operating_points(self):
        return [OperatingPoint(f"limit{w:.0f}W", power_limit_w=w) for w in LIMITS_W]


def make(tmp_path, target_ms):
    clock = SimClock(0.0)
    platform = NvmlLawPlatform()
    config = GovernorConfig.from_dict({"target_latency_ms": target_ms, "state_path": str(tmp_path / "s.json")})
    return Governor(platform, config, None, clock), platform, clock


def test_pointwise_models_learn_each_point_and_bound_unmeasured_limits():
    pred, power = PointwisePredictor(), PointwisePower()
    assert not power.has_energy and math.isnan(pred.predict(OperatingPoint("limit100W", power_limit_w=100.0)).latency_s)
    top, low = OperatingPoint("limit300W", power_limit_w=300.0), OperatingPoint("limit100W", power_limit_w=100.0)
    pred.update(top, latency_s(top), input_rate_hz=30.0, samples=50)
    duty_top = latency_s(top) * 30.0
    power.update(top, power_w(top, duty_top), duty_top)
    here, there = pred.predict(top, 30.0), pred.predict(low, 30.0)
    assert here.latency_s == latency_s(top)
    assert abs(power.predict(top, duty_top)[0] / 30.0 / energy_j(top, 30.0) - 1) < 0.01
    assert there.latency_std_s > 0.3 * there.latency_s  # unmeasured: wide
    assert power.predict(low, latency_s(low) * 30.0)[0] <= 100.0  # ... but never above its power limit
    pred.update(low, latency_s(low), input_rate_hz=30.0, samples=50)
    assert abs(pred.predict(low, 30.0).latency_s / latency_s(low) - 1) < 1e-9


def test_governor_finds_the_cheapest_power_limit_meeting_the_target(tmp_path):
    # 20 Hz, target 16 ms: 150 W (12.1 ms) is the lowest limit that meets it with margin
    gov, platform, clock = make(tmp_path, 16.0)
    decisions = drive(gov, platform, clock, 40.0, rate_hz=20.0, latency_law=latency_s, power_law=power_w)
    ok = [p for p in platform.operating_points() if latency_s(p) * 1.1 <= 0.016 * 0.95]
    best = min(ok, key=lambda p: energy_j(p, 20.0))
    assert platform.current == best, [d.reason for d in decisions if d.applied]
    assert energy_j(platform.current, 20.0) < 0.85 * energy_j(platform.found, 20.0)  # -19 % on this law
    assert np.mean([d.violation_rate for d in decisions[-100:]]) < 0.02
    gov.shutdown()
    assert platform.current == platform.found
