"""The virtual Jetson as a ``Platform`` on simulated time: the same validation as the real
Jetson backend (reboot-free presets only, caps from the tables inside the preset's envelope),
applied to a ``VirtualBoard`` directly, so scenarios and sweeps run faster than real time.
Everything it reports is labelled SIMULATION.

(The other way in, used by the nodes, is the real ``JetsonPlatform`` over the tree a live
virtual Jetson renders: ``runtime.create_platform("virtual:DEVICE", sysfs_root=...)``.)
"""

from __future__ import annotations

from edge_roofline.platforms.base import (SIMULATION_SOURCE, ApplyError, DeviceIdentity, OperatingPoint,
                                          Platform, RailSample, TelemetrySample)
from edge_roofline.platforms.jetson.platform import reachable_points, validate_point
from edge_roofline.virtual.board import VirtualBoard
from edge_roofline.virtual.physics import module_power_w


class VirtualPlatform(Platform):
    """``fail_apply``: make every ``apply`` raise ``ApplyError`` (fault tests)."""

    def __init__(self, board: VirtualBoard) -> None:
        self.board = board
        self.device = board.device
        self.fail_apply = False
        self.applied: list[OperatingPoint] = []
        self._found_mode = board.state.nvpmodel_mode_id
        self._found_caps = self._caps()
        self._point = self._found_point()

    def _preset(self):
        return self.device.preset(self.board.state.nvpmodel_mode_id)

    def _caps(self) -> dict:
        s = self.board.state
        return dict(cpu_online_cores=sum(s.cpu_online), cpu_max_freq_hz=s.cpu_max_freq_hz[0],
                    gpu_max_freq_hz=s.gpu_max_freq_hz, emc_max_freq_hz=s.emc_max_hz)

    def _found_point(self) -> OperatingPoint:
        return OperatingPoint(name=self.device.preset(self._found_mode).name, nvpmodel_id=self._found_mode)

    def identity(self) -> DeviceIdentity:
        return DeviceIdentity(kind="virtual", model=f"virtual {self.device.name} (SIMULATION)",
                              catalogue_key=self.device.key, simulated=True)

    def device_spec(self):
        return self.device

    def operating_points(self) -> list[OperatingPoint]:
        return reachable_points(self.device, self._preset())

    def current_operating_point(self) -> OperatingPoint:
        return self._point

    def apply(self, point: OperatingPoint) -> None:
        preset = validate_point(self.device, self._preset(), point)
        if self.fail_apply:
            raise ApplyError(f"{point.name}: simulated failure (fail_apply is set)")
        self.board.set_mode(preset.mode_id, point)
        self._point = point
        self.applied.append(point)

    def sample(self) -> TelemetrySample:
        state = self.board.refresh_state()
        rails = tuple(RailSample(name, v, a, v * a) for name, (v, a) in state.rails.items())
        total = module_power_w(self.device, {r.name: r.power_w for r in rails})
        online = [f for f, up in zip(state.cpu_cur_freq_hz, state.cpu_online) if up]
        busy = [b for b, up in zip(state.cpu_busy, state.cpu_online) if up]
        return TelemetrySample(
            timestamp_s=self.board.now_s, rails=rails, total_power_w=total, cpu_freq_hz=tuple(online),
            gpu_freq_hz=state.gpu_cur_freq_hz, emc_freq_hz=state.emc_rate_hz,
            cpu_load_pct=100.0 * sum(busy) / max(len(busy), 1), gpu_load_pct=100.0 * state.gpu_load,
            emc_load_pct=100.0 * state.emc_util, temperatures_c=dict(state.temperatures_c),
            nvpmodel_mode=self._preset().name, operating_point=self._point.name,
            source=SIMULATION_SOURCE, simulated=True)

    def restore(self) -> str:
        if self.board.state.nvpmodel_mode_id != self._found_mode:
            self.board.set_mode(self._found_mode)
        self.board.set_caps(**self._found_caps)
        self._point = self._found_point()
        return f"restored {self._point.name} and its caps as found (SIMULATION)"
