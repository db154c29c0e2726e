"""Core dataclasses <-> edge_roofline messages. The only module that knows both."""

from __future__ import annotations

import math

from diagnostic_msgs.msg import DiagnosticArray, DiagnosticStatus, KeyValue

from edge_roofline.msg import OperatingPoint as OperatingPointMsg
from edge_roofline.msg import PowerRail, PowerTelemetry
from edge_roofline.platforms.base import OperatingPoint
from edge_roofline.telemetry.diagnostics import Status
from edge_roofline.telemetry.sampler import TelemetryWindow

NAN = math.nan
_DIAG_LEVELS = {0: DiagnosticStatus.OK, 1: DiagnosticStatus.WARN, 2: DiagnosticStatus.ERROR,
                3: DiagnosticStatus.STALE}


def _or(value, default):
    return default if value is None else value


def operating_point_msg(point: OperatingPoint | None) -> OperatingPointMsg:
    if point is None:
        return OperatingPointMsg(name="", nvpmodel_id=-1)
    return OperatingPointMsg(
        name=point.name, nvpmodel_id=_or(point.nvpmodel_id, -1),
        cpu_online_cores=_or(point.cpu_online_cores, 0),
        cpu_max_freq_hz=float(_or(point.cpu_max_freq_hz, 0.0)),
        gpu_max_freq_hz=float(_or(point.gpu_max_freq_hz, 0.0)),
        emc_max_freq_hz=float(_or(point.emc_max_freq_hz, 0.0)),
        power_limit_w=float(_or(point.power_limit_w, 0.0)))


def operating_point_from_msg(msg: OperatingPointMsg) -> OperatingPoint:
    def opt(v):
        return None if not v else float(v)
    return OperatingPoint(
        name=msg.name, nvpmodel_id=None if msg.nvpmodel_id < 0 else int(msg.nvpmodel_id),
        cpu_online_cores=msg.cpu_online_cores or None, cpu_max_freq_hz=opt(msg.cpu_max_freq_hz),
        gpu_max_freq_hz=opt(msg.gpu_max_freq_hz), emc_max_freq_hz=opt(msg.emc_max_freq_hz),
        power_limit_w=opt(msg.power_limit_w))


def power_telemetry_msg(window: TelemetryWindow, stamp, device: str, point: OperatingPoint | None) -> PowerTelemetry:
    msg = PowerTelemetry()
    msg.header.stamp = stamp
    msg.device = device
    msg.energy_j = window.total_energy_j
    msg.window_energy_j = window.window_energy_j
    msg.average_power_w = window.average_power_w
    msg.sample_rate_hz = window.sample_rate_hz
    msg.samples_in_window = window.samples
    msg.operating_point = operating_point_msg(point)
    sample = window.latest
    if sample is None:
        msg.source = "no telemetry"
        msg.total_power_w = NAN
        return msg
    msg.source = sample.source
    msg.simulated = sample.simulated
    msg.rails = [PowerRail(name=r.name, voltage_v=r.voltage_v, current_a=r.current_a, power_w=r.power_w)
                 for r in sample.rails]
    msg.total_power_w = _or(sample.total_power_w, NAN)
    msg.cpu_freq_hz = [float(f) for f in sample.cpu_freq_hz]
    msg.gpu_freq_hz = float(_or(sample.gpu_freq_hz, NAN))
    msg.emc_freq_hz = float(_or(sample.emc_freq_hz, NAN))
    msg.cpu_load_pct = float(_or(sample.cpu_load_pct, NAN))
    msg.gpu_load_pct = float(_or(sample.gpu_load_pct, NAN))
    msg.emc_load_pct = float(_or(sample.emc_load_pct, NAN))
    msg.temperature_names = list(sample.temperatures_c)
    msg.temperatures_c = [float(v) for v in sample.temperatures_c.values()]
    msg.nvpmodel_mode = sample.nvpmodel_mode
    return msg


def diagnostic_array_msg(statuses: list[Status], stamp, hardware_id: str) -> DiagnosticArray:
    array = DiagnosticArray()
    array.header.stamp = stamp
    array.status = [
        DiagnosticStatus(level=_DIAG_LEVELS[s.level], name=s.name, message=s.message, hardware_id=hardware_id,
                         values=[KeyValue(key=k, value=v) for k, v in s.values.items()])
        for s in statuses]
    return array
