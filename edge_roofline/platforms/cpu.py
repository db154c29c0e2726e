"""CPU-only platform: any Linux machine without a power sensor we can read (a laptop, CI, a
non-Jetson robot computer). Clocks, loads and temperatures where readable; power is reported
as unavailable (None), never guessed."""

from __future__ import annotations

import platform as pyplatform
from pathlib import Path

from edge_roofline.clock import Clock
from edge_roofline.platforms.base import (DeviceIdentity, OperatingPoint, OperatingPointError, Platform,
                                          TelemetrySample)
from edge_roofline.platforms.jetson.cpu import load_pct, read_cores, read_proc_stat
from edge_roofline.platforms.jetson.thermal import read_thermal

SOURCE = "cpu (no power sensor)"


class CpuPlatform(Platform):
    def __init__(self, root: str | Path = "/", clock: Clock | None = None) -> None:
        self.root = Path(root)
        self.clock = clock or Clock()
        self._point = OperatingPoint(name="current")
        self._last_stat = read_proc_stat(self.root)

    def identity(self) -> DeviceIdentity:
        return DeviceIdentity(kind="cpu", model=f"{pyplatform.machine()} CPU ({pyplatform.node()})", catalogue_key=None)

    def operating_points(self) -> list[OperatingPoint]:
        return [self._point]

    def current_operating_point(self) -> OperatingPoint:
        return self._point

    def apply(self, point: OperatingPoint) -> None:
        if point != self._point:
            raise OperatingPointError("the CPU-only platform has no operating points to change "
                                      "(no nvpmodel, no NVML); run on a Jetson (platform: jetson) to govern")

    def sample(self) -> TelemetrySample:
        stat = read_proc_stat(self.root)
        _, mean_load = load_pct(self._last_stat, stat)
        self._last_stat = stat
        freqs = tuple(c.cur_freq_hz for c in read_cores(self.root) if c.online and c.cur_freq_hz)
        return TelemetrySample(timestamp_s=self.clock.now_s(), rails=(), total_power_w=None, cpu_freq_hz=freqs,
                               cpu_load_pct=mean_load, temperatures_c=read_thermal(self.root),
                               operating_point=self._point.name, source=SOURCE)

    def restore(self) -> str:
        return "restored nothing: the CPU platform changes nothing"
