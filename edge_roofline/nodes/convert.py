"""Core dataclasses <-> edge_roofline messages. The only module that knows both."""

from __future__ import annotations

import math

import numpy as np
from builtin_interfaces.msg import Time
from diagnostic_msgs.msg import DiagnosticArray, DiagnosticStatus, KeyValue
from std_msgs.msg import Header

from edge_roofline.msg import (GeneratedToken, GenerationStats, GovernorState, InferenceStats, LayerRoofline, PowerRail,
                               PowerTelemetry, RooflineReport, StreamState, Tensor, TensorArray)
from edge_roofline.msg import OperatingPoint as OperatingPointMsg
from edge_roofline.governor.config import GovernorConfig
from edge_roofline.governor.decision import Decision
from edge_roofline.governor.streams import StreamStatus
from edge_roofline.platforms.base import OperatingPoint
from edge_roofline.roofline.model import LayerBound, RooflineAnalysis
from edge_roofline.ros.analysis import BOUND_TO_MSG
from edge_roofline.inference.generation_requests import RequestEnd, TokenOut
from edge_roofline.inference.pipeline import FrameResult
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


def latency_s_from_stats(msg: InferenceStats) -> float | None:
    """The frame's execution time, or None for a frame that never ran (rejected input or an
    error before execution publish 0). NaN stays NaN: that is a measurement gone wrong."""
    return None if msg.latency_ms == 0.0 else msg.latency_ms / 1e3


def power_w_from_telemetry(msg: PowerTelemetry) -> float:
    """The window's average power, or the latest total (NaN) when the latest sample measured no
    power: the window's average still holds the power measured before the rails vanished (a
    window with none at all is NaN already), and the governor must fall back now, not a window
    later."""
    return msg.average_power_w if math.isfinite(msg.total_power_w) else msg.total_power_w


def temperatures_from_msg(msg: PowerTelemetry) -> dict[str, float]:
    return {name: float(c) for name, c in zip(msg.temperature_names, msg.temperatures_c)}


# ---- governor -----------------------------------------------------------------------

def stream_state_msg(status: StreamStatus, *, stats_topic: str, binding: bool) -> StreamState:
    return StreamState(
        name=status.name, model_id=status.model_id, model_note=status.model_note, stats_topic=stats_topic,
        active=status.active, target_latency_ms=status.target_latency_ms, target_percentile=status.percentile,
        measured_latency_ms=status.measured_latency_s * 1e3, predicted_latency_ms=status.predicted_latency_s * 1e3,
        predicted_latency_std_ms=status.predicted_latency_std_s * 1e3, violation_rate=status.violation_rate,
        window_samples=status.window_samples, input_rate_hz=status.input_rate_hz, met=status.met,
        inferences=status.inferences, inferences_over_target=status.inferences_over_target, binding=binding)


def governor_state_msg(decision: Decision, config: GovernorConfig, *, mode: str, model_id: str, model_note: str,
                       stats_topics: dict[str, str], current: OperatingPoint, safe_point: OperatingPoint,
                       switches: int, stamp, last_change_stamp, simulated: bool) -> GovernorState:
    """The single-stream fields describe the binding stream (else the first); ``model_id``/``model_note``
    apply while the decision reports no stream."""
    described = next((s for s in decision.streams if s.name == decision.binding_stream),
                     decision.streams[0] if decision.streams else None)
    if described is not None:
        model_id, model_note = described.model_id, described.model_note
    msg = GovernorState(
        simulated=simulated, mode=mode, state=decision.state, model_id=model_id, model_note=model_note,
        target_latency_ms=described.target_latency_ms if described else config.target_latency_ms,
        target_percentile=described.percentile if described else config.percentile, margin=config.margin,
        measured_latency_ms=decision.measured_latency_s * 1e3,
        predicted_latency_ms=decision.predicted_latency_s * 1e3,
        predicted_latency_std_ms=decision.predicted_latency_std_s * 1e3, window_samples=decision.window_samples,
        measured_energy_per_inference_j=decision.measured_energy_per_inference_j,
        predicted_energy_per_inference_j=decision.predicted_energy_j, violation_rate=decision.violation_rate,
        streams=[stream_state_msg(s, stats_topic=stats_topics.get(s.name, ""),
                                  binding=s.name == decision.binding_stream) for s in decision.streams],
        binding_stream=decision.binding_stream, predicted_power_w=decision.predicted_power_w,
        measured_power_w=decision.measured_power_w,
        current_point=operating_point_msg(current), chosen_point=operating_point_msg(decision.point),
        safe_point=operating_point_msg(safe_point), fallback_active=decision.fallback_active,
        reason=decision.reason, switches=switches, header=_header(stamp))
    msg.last_change_stamp = last_change_stamp
    return msg


# ---- inference ----------------------------------------------------------------------

def _nan(value) -> float:
    return NAN if value is None else float(value)


def layer_roofline_msg(layer: LayerBound, precision: str) -> LayerRoofline:
    levels = layer.level_bytes or {}
    return LayerRoofline(
        name=layer.name, op_type=layer.op_type, precision=precision, flops=float(layer.flops),
        bytes_total=float(layer.bytes), bytes_l1=_nan(levels.get("l1")), bytes_l2=_nan(levels.get("l2")),
        bytes_dram=_nan(levels.get("dram", layer.bytes if not levels else None)),
        arithmetic_intensity_flop_per_byte=float(layer.arithmetic_intensity),
        measured_time_s=_nan(layer.measured_time_s), achieved_flop_per_s=_nan(layer.achieved_flops),
        achieved_bytes_per_s=_nan(layer.achieved_bandwidth_bps),
        attainable_flop_per_s=float(layer.attainable_flops), attainable_time_s=float(layer.attainable_time_s),
        bound=BOUND_TO_MSG[layer.bound], efficiency=_nan(layer.efficiency))


def roofline_report_msg(analysis: RooflineAnalysis, stamp, *, model_id: str, backend: str, device: str,
                        simulated: bool, point: OperatingPoint | None, sample_count: int,
                        warnings: list[str] = (), phase: str = "", context_tokens: int = 0,
                        new_tokens: int = 0) -> RooflineReport:
    c = analysis.ceilings
    return RooflineReport(
        model_id=model_id, backend=backend, device=device, simulated=simulated, phase=phase,
        context_tokens=context_tokens, new_tokens=new_tokens,
        operating_point=operating_point_msg(point),
        # the message has no DRAM flag: an unmeasured DRAM roof (an upper bound) is named in the source
        ceilings_source=c.source if c.dram_unresolved is None else f"{c.source}, DRAM unresolved",
        ceilings_engine=c.engine,
        peak_flop_per_s=float(c.peak_flops), dram_bandwidth_bytes_per_s=float(c.dram_bandwidth_bps),
        l2_bandwidth_bytes_per_s=_nan(c.l2_bandwidth_bps), layer_overhead_s=float(c.layer_overhead_s),
        layers=[layer_roofline_msg(l, analysis.precision) for l in analysis.layers],
        total_flops=float(analysis.total_flops), total_bytes=float(analysis.total_bytes),
        total_measured_time_s=_nan(analysis.measured_time_s),
        total_attainable_time_s=float(analysis.attainable_time_s), sample_count=sample_count,
        warnings=list(warnings), unknown_ops=list(analysis.unknown_ops), header=_header(stamp))


def _header(stamp, frame_id: str = "") -> Header:
    header = Header(frame_id=frame_id)
    header.stamp = stamp
    return header


def inference_stats_msg(result: FrameResult) -> InferenceStats:
    c = result.counters
    stamp = result.frame.stamp if result.frame.stamp is not None else Time()
    return InferenceStats(
        header=_header(stamp, result.frame.frame_id), frame_index=result.frame_index, model_id=result.model_id,
        backend=result.backend, simulated=result.simulated, batch=1,
        latency_ms=result.latency_s * 1e3, preprocess_ms=result.preprocess_s * 1e3,
        postprocess_ms=result.postprocess_s * 1e3, queue_delay_ms=result.queue_delay_s * 1e3,
        end_to_end_ms=result.end_to_end_s * 1e3, frames_received=c.received, frames_dropped=c.dropped,
        frames_lost_upstream=c.lost_upstream, frames_lost_transport=c.lost_transport, frames_rejected=c.rejected,
        frames_failed=c.failed, frames_processed=c.processed, nan_outputs=c.nan_outputs, errors=c.errors,
        worker_restarts=c.worker_restarts, last_error=c.last_error)


# ---- generation ---------------------------------------------------------------------

def _request_header(request) -> Header:
    return _header(request.stamp if request.stamp is not None else Time(), request.frame_id)


def generated_token_msg(item: TokenOut) -> GeneratedToken:
    e = item.event
    return GeneratedToken(
        header=_request_header(item.request), request_id=item.request.request_id, index=e.index, token_id=e.token_id,
        text=item.text, phase=e.phase, context_tokens=e.context, step_ms=e.step_s * 1e3,
        since_request_ms=item.since_request_s * 1e3, done=item.done, stop_reason=item.stop_reason)


def request_done_msg(end: RequestEnd) -> GeneratedToken:
    """The last message of a request that did not complete: no token, the reason."""
    return GeneratedToken(header=_request_header(end.request), request_id=end.request.request_id,
                          index=end.tokens_sent, token_id=-1, context_tokens=0, step_ms=NAN, since_request_ms=NAN,
                          done=True, stop_reason=end.stop_reason, error=end.error)


def step_stats_msg(item: TokenOut) -> InferenceStats:
    """One generation step as InferenceStats (docs/nodes.md, "Per-step InferenceStats"): the
    frame counters count requests."""
    e, c, prefill = item.event, item.counters, item.event.phase == "prefill"
    return InferenceStats(
        header=_request_header(item.request), frame_index=item.step_index, model_id=item.served.model_id,
        backend=item.served.backend, simulated=item.served.simulated, batch=1, phase=e.phase,
        context_tokens=e.context, new_tokens=e.new_tokens, latency_ms=e.step_s * 1e3,
        preprocess_ms=item.preprocess_s * 1e3 if prefill else 0.0,
        queue_delay_ms=item.queue_delay_s * 1e3 if prefill else 0.0, end_to_end_ms=item.since_request_s * 1e3,
        frames_received=c.received, frames_dropped=c.dropped, frames_rejected=c.rejected, frames_failed=c.failed,
        frames_processed=c.completed, errors=c.errors, worker_restarts=c.worker_restarts, last_error=c.last_error)


def generation_stats_msg(end: RequestEnd) -> GenerationStats:
    s, c, energy = end.stats, end.counters, end.energy
    energy_j = energy.energy_j if energy is not None else NAN
    msg = GenerationStats(
        header=_request_header(end.request), request_id=end.request.request_id, model_id=end.served.model_id,
        backend=end.served.backend, simulated=end.served.simulated, outcome=end.outcome,
        stop_reason=end.stop_reason, queue_delay_ms=end.queue_delay_s * 1e3, prefill_ms=end.prefill_s * 1e3,
        energy_j=energy_j, energy_note=energy.note if energy is not None else "not measured",
        requests_received=c.received, requests_completed=c.completed, requests_dropped=c.dropped,
        requests_rejected=c.rejected, requests_failed=c.failed, requests_in_flight=max(0, c.in_flight),
        tokens_generated=c.tokens, errors=c.errors, worker_restarts=c.worker_restarts, last_error=c.last_error)
    if s is None:
        msg.ttft_ms = msg.prefill_ms = msg.tpot_p50_ms = msg.tpot_p95_ms = msg.tpot_mean_ms = NAN
        msg.decode_tokens_per_s = msg.tokens_per_s = msg.total_ms = msg.energy_per_output_token_j = NAN
        return msg
    msg.prompt_tokens, msg.output_tokens = s.prompt_tokens, s.output_tokens
    msg.ttft_ms, msg.total_ms = s.ttft_s * 1e3, s.total_s * 1e3
    msg.tpot_p50_ms, msg.tpot_p95_ms = _nan(s.tpot_p50_s) * 1e3, _nan(s.tpot_p95_s) * 1e3
    msg.tpot_mean_ms = sum(s.tpot_s) / len(s.tpot_s) * 1e3 if s.tpot_s else NAN
    msg.decode_tokens_per_s, msg.tokens_per_s = _nan(s.decode_tokens_per_s), s.tokens_per_s
    msg.energy_per_output_token_j = energy_j / s.output_tokens if s.output_tokens else NAN
    return msg


def tensor_array_msg(outputs: dict[str, np.ndarray], header: Header) -> TensorArray:
    return TensorArray(header=header, tensors=[
        Tensor(name=name, dtype=str(value.dtype), shape=list(value.shape),
               data=np.ascontiguousarray(value).astype(value.dtype.newbyteorder("<"), copy=False).tobytes())
        for name, value in outputs.items()])


def tensors_from_msg(msg: TensorArray) -> dict[str, np.ndarray]:
    """Raises ValueError (the message says what is wrong) for any tensor that cannot be read:
    the node rejects and counts the message instead of dying on it."""
    out = {}
    for t in msg.tensors:
        if t.name in out:  # else the last one fed the model in silence
            raise ValueError(f"tensor {t.name!r} given twice; give each input once")
        try:
            dtype = np.dtype(t.dtype).newbyteorder("<")
        except TypeError:  # numpy's word for an unknown dtype name
            dtype = None
        if dtype is None or dtype.kind not in "biufc":  # object, str, void: no numbers to read from bytes
            raise ValueError(f"tensor {t.name!r}: dtype {t.dtype!r} is not a numeric numpy dtype "
                             f"(e.g. float32, uint8)")
        expected = math.prod(t.shape)  # exact: numpy's product wraps around on huge shapes
        if len(t.data) != expected * dtype.itemsize:
            raise ValueError(f"tensor {t.name!r}: {len(t.data)} bytes of data, shape {list(t.shape)} of "
                             f"{t.dtype} needs {expected * dtype.itemsize}")
        array = np.frombuffer(bytes(t.data), dtype=dtype)
        out[t.name] = array.reshape(tuple(t.shape)).astype(dtype.newbyteorder("="))
    return out
