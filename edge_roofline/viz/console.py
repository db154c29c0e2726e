"""A compact live console summary of the suite: latency vs target, power, energy per
inference, operating point, governor decision, and the top layers by time with their bound."""

from __future__ import annotations

import math
from dataclasses import dataclass, field


@dataclass(frozen=True)
class LayerLine:
    name: str
    op_type: str
    time_s: float
    bound: str
    efficiency: float
    above_roof: str | None = None  # why it beat its roof (LayerBound.above_roof): shown, not eff > 100 %


@dataclass(frozen=True)
class GenerationLine:
    """The last request a language model (the generation node) finished."""

    model: str
    outcome: str
    ttft_ms: float
    tpot_p50_ms: float
    tpot_p95_ms: float
    tokens_per_s: float
    energy_per_token_j: float
    energy_note: str
    received: int
    completed: int
    dropped: int
    rejected: int
    failed: int
    in_flight: int


@dataclass
class ConsoleSnapshot:
    simulated: bool = False
    device: str = ""
    model: str = ""
    backend: str = ""
    latency_p50_ms: float = math.nan
    latency_p95_ms: float = math.nan
    fps: float = math.nan
    frames_dropped: int = 0
    errors: int = 0
    target_latency_ms: float = math.nan
    target_percentile: float = math.nan
    power_w: float = math.nan
    energy_per_inference_j: float = math.nan
    operating_point: str = ""  # in force, as the board shows it (the power monitor reads it)
    report_point: str = ""  # the point the per-layer table was profiled at
    governor_point: str = ""  # the point the governor set last
    nvpmodel_mode: str = ""
    gpu_freq_hz: float = math.nan
    emc_freq_hz: float = math.nan
    governor_mode: str = ""
    governor_state: str = ""
    governor_reason: str = ""
    switches: int = 0
    layers: list[LayerLine] = field(default_factory=list)
    generation: GenerationLine | None = None
    # Where the console listens (resolved names, from its parameters) and whether anything
    # publishes there: before the first message a line says what it waits for, not blanks.
    stats_received: bool = False
    power_received: bool = False
    stats_topic: str = ""
    stats_publishers: int = 0
    power_topic: str = ""
    generation_request_topic: str = ""
    generation_publishers: int = 0  # of its generation/stats: a generation node is up


def _f(value: float, fmt: str, unit: str = "") -> str:
    return "  n/a" if value is None or not math.isfinite(value) else f"{value:{fmt}}{unit}"


def render(s: ConsoleSnapshot, top_n: int = 5) -> str:
    heard = s.stats_received or s.power_received or s.generation is not None
    banner = "VIRTUAL JETSON - SIMULATION (times and power from the physics model)" if s.simulated else "real device"
    head = ["edge_roofline"] + ([s.device] if s.device else []) + ([banner] if heard else [])
    lines = [" | ".join(head)]
    llm_up = s.generation is not None or s.generation_publishers > 0
    if s.stats_received:
        lines.append(f"model {s.model} on {s.backend}")
        target = ""
        if math.isfinite(s.target_latency_ms):  # the governor's: none without one
            ok = ""
            if math.isfinite(s.latency_p95_ms):
                ok = "  OK" if s.latency_p95_ms <= s.target_latency_ms else "  OVER TARGET"
            target = f"  target p{_f(s.target_percentile, '.0f')} {s.target_latency_ms:.2f} ms{ok}"
        lines.append(f"latency p50 {_f(s.latency_p50_ms, '7.2f', ' ms')}  p95 {_f(s.latency_p95_ms, '7.2f', ' ms')}"
                     f"{target}  | {_f(s.fps, '5.1f', ' fps')}  dropped {s.frames_dropped}  errors {s.errors}")
    elif s.stats_publishers or not llm_up:  # a language model alone has no camera pipeline to wait for
        idle = "" if s.stats_publishers else " (nothing publishes it yet)"
        lines.append(f"model: waiting for the first InferenceStats on {s.stats_topic}{idle}")
    if s.power_received:
        energy = (f"  energy/inference {_f(s.energy_per_inference_j * 1e3, '7.2f', ' mJ')}"
                  if s.governor_mode else "")  # the governor measures it
        lines.append(f"power {_f(s.power_w, '6.2f', ' W')}{energy}"
                     f"  | mode {s.nvpmodel_mode or '?'}  point {s.operating_point or '?'}"
                     f"  GPU {_f(s.gpu_freq_hz / 1e6, '.0f', ' MHz')}  EMC {_f(s.emc_freq_hz / 1e6, '.0f', ' MHz')}")
    else:
        lines.append(f"power: waiting for the first PowerTelemetry on {s.power_topic}")
    if s.governor_mode:
        lines.append(f"governor {s.governor_mode}/{s.governor_state}  point {s.governor_point or '?'}  "
                     f"switches {s.switches}  last: {s.governor_reason}")
    g = s.generation
    if g is not None:
        energy = _f(g.energy_per_token_j * 1e3, '.2f', ' mJ') if math.isfinite(g.energy_per_token_j) else \
            f"n/a ({g.energy_note})"
        lines.append(f"llm {g.model}: last request {g.outcome}  TTFT {_f(g.ttft_ms, '.2f', ' ms')}  TPOT p50 "
                     f"{_f(g.tpot_p50_ms, '.2f', ' ms')} p95 {_f(g.tpot_p95_ms, '.2f', ' ms')}  "
                     f"{_f(g.tokens_per_s, '.0f', ' tokens/s')}  energy/token {energy}")
        lines.append(f"    requests {g.received} = {g.completed} completed + {g.dropped} dropped + {g.rejected} "
                     f"rejected + {g.failed} failed + {g.in_flight} in flight")
    elif llm_up:
        lines.append(f"llm: no request served yet: send a GenerationRequest to {s.generation_request_topic} "
                     f"(README: Language models; docs/nodes.md#language-models-the-generation-node)")
    if s.layers:
        total_s = sum(l.time_s for l in s.layers) or math.nan
        stale = (f"; the board is at {s.operating_point} now, a new report is due"
                 if s.operating_point and s.report_point and s.report_point != s.operating_point else "")
        lines.append(f"top layers by time ({len(s.layers)} layers, profiled at {s.report_point or '?'}{stale}):")
        for layer in sorted(s.layers, key=lambda l: l.time_s, reverse=True)[:top_n]:
            lines.append(f"  {layer.name[:36]:36s} {layer.op_type[:18]:18s} {layer.time_s * 1e3:8.3f} ms "
                         f"{100 * layer.time_s / total_s:5.1f}%  {layer.bound:8s} "
                         + (layer.above_roof or f"eff {_f(100 * layer.efficiency, '5.1f', '%')}"))
    return "\n".join(lines)
