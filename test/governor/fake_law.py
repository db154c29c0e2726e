"""A scripted Platform whose latency and power follow a simple law per point, defined here (not
the product's virtual physics), and a loop that drives a Governor on simulated time."""

import math
import random

from edge_roofline.platforms.base import (ApplyError, DeviceIdentity, OperatingPoint, Platform,
                                          TelemetrySample)
from edge_roofline.roofline.devices import get_device

DEVICE = get_device("agx_orin_64gb")


def law_latency_s(p, scale=1.0):
    g = p.gpu_max_freq_hz or DEVICE.gpu_max_freq_hz
    e = p.emc_max_freq_hz or DEVICE.emc_max_freq_hz
    c = p.cpu_max_freq_hz or DEVICE.cpu_max_freq_hz
    return scale * (3e-3 * DEVICE.gpu_max_freq_hz / g + 2e-3 * DEVICE.emc_max_freq_hz / e
                    + 0.2e-3 * DEVICE.cpu_max_freq_hz / c + 0.3e-3)


def law_power_w(p, duty, scale=1.0):
    g = (p.gpu_max_freq_hz or DEVICE.gpu_max_freq_hz) / DEVICE.gpu_max_freq_hz
    e = (p.emc_max_freq_hz or DEVICE.emc_max_freq_hz) / DEVICE.emc_max_freq_hz
    cores = (p.cpu_online_cores or 12) / 12
    return 6.0 + 3.0 * e + 1.0 * cores + duty * (30.0 * g ** 2 + 5.0 * e)


class LawPlatform(Platform):
    def __init__(self, start=OperatingPoint("MAXN", 0)):
        self.found = start
        self.current = start
        self.applied = []
        self.fail_apply = False
        self.scale = 1.0

    def identity(self):
        return DeviceIdentity("jetson", DEVICE.name, DEVICE.key)

    def operating_points(self):
        return [OperatingPoint("MAXN", 0), OperatingPoint("MODE_50W", 3)]

    def current_operating_point(self):
        return self.current

    def apply(self, point):
        if self.fail_apply:
            raise ApplyError("nvpmodel timed out")
        self.current = point
        self.applied.append(point)

    def sample(self):
        return TelemetrySample(0.0, (), None)

    def restore(self):
        self.current = self.found
        return f"restored {self.found.name}"


def drive(gov, platform, clock, duration_s, rate_hz=40.0, dt_s=0.1, seed=0, power_ok=lambda t: True,
          latency_of=None, temperature_c=50.0, latency_law=law_latency_s, power_law=law_power_w):
    """Run ``duration_s`` of simulated time; returns the decisions. The laws give a point's
    latency (point, scale) and power (point, duty, scale)."""
    rng = random.Random(seed)
    decisions = []
    end = clock.now_s() + duration_s
    next_inf = clock.now_s()
    while clock.now_s() < end - 1e-9:
        t0 = clock.now_s()
        busy = 0.0
        while next_inf < t0 + dt_s:
            lat = latency_law(platform.current, platform.scale) * math.exp(rng.gauss(0, 0.05))
            if latency_of is not None:
                lat = latency_of(next_inf, lat)
            gov.observe_inference(lat, next_inf + (lat if math.isfinite(lat) else 0))
            busy += lat if math.isfinite(lat) else 0
            next_inf += max(1.0 / rate_hz, lat if math.isfinite(lat) else 0)
        clock.advance(dt_s)
        t = clock.now_s()
        if power_ok(t):
            gov.observe_power(power_law(platform.current, min(1.0, busy / dt_s), platform.scale), t,
                              {"tj-thermal": temperature_c(t) if callable(temperature_c) else temperature_c})
        decisions.append(gov.step(t))
    return decisions


def true_energy_j(p, rate_hz, scale=1.0):
    lat = law_latency_s(p, scale)
    r = min(rate_hz, 1 / lat)
    return law_power_w(p, min(1.0, r * lat), scale) / r
