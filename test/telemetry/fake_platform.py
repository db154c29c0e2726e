"""A scripted Platform for telemetry tests: power is a known function of (simulated) time, so
integrals can be checked against closed forms."""

import math

from edge_roofline.platforms.base import (DeviceIdentity, OperatingPoint, Platform, RailSample,
                                          RebootRequiredError, TelemetrySample)


class ScriptedPlatform(Platform):
    def __init__(self, clock, power_w=lambda t: 10.0, fail_every=0, points=None, reboot_ids=(),
                 update_interval_s=None, missing_rails=None):
        self.clock = clock
        self.update_interval_s = update_interval_s
        self.missing_rails = missing_rails or {}
        self.power_w = power_w
        self.fail_every = fail_every
        self.calls = 0
        self.points = points or [OperatingPoint("MAXN", nvpmodel_id=0), OperatingPoint("MODE_50W", nvpmodel_id=3)]
        self.reboot_ids = set(reboot_ids)
        self.current = self.points[0]
        self.applied = []

    def identity(self):
        return DeviceIdentity("jetson", "Jetson AGX Orin 64GB", "agx_orin_64gb")

    def operating_points(self):
        return list(self.points)

    def current_operating_point(self):
        return self.current

    def apply(self, point):
        if point.nvpmodel_id in self.reboot_ids:
            raise RebootRequiredError(f"mode {point.nvpmodel_id} needs a reboot")
        self.current = point
        self.applied.append(point)

    def sample(self):
        self.calls += 1
        if self.fail_every and self.calls % self.fail_every == 0:
            raise OSError("hwmon3/in1_input: No such file or directory")
        t = self.clock.now_s()
        p = self.power_w(t)
        rails = () if p is None else (RailSample("VDD_GPU_SOC", 5.0, p / 5.0, p),)  # None: the rail is lost
        return TelemetrySample(timestamp_s=t, rails=rails,
                               total_power_w=p, temperatures_c={"gpu-thermal": 50.0 + t},
                               source="scripted", nvpmodel_mode=self.current.name,
                               missing_rails=dict(self.missing_rails))

    def power_update_interval_s(self):
        return self.update_interval_s

    def restore(self):
        self.current = self.points[0]
        return f"restored {self.current.name}"


def sine_power(t):
    return 10.0 + 5.0 * math.sin(t)
