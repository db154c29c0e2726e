"""A decoder's phases on the roofline of an operating point: where each sits, what bounds it,
and its time per token.

A phase's ``bound`` is where its whole step sits against the ridge point (its FLOPs over its
bytes, as one unit): ``memory`` left of the ridge, ``compute`` right of it. The per-layer view
(``analysis``) adds each unfused layer's fixed overhead: a small model on a GPU can spend most
of a decode step launching kernels, which ``overhead_time_s`` says beside the bound rather
than hiding it in it.
"""

from __future__ import annotations

from dataclasses import dataclass

from edge_roofline.roofline.ceilings import Ceilings
from edge_roofline.roofline.decoder import PhaseCost
from edge_roofline.roofline.model import RooflineAnalysis, analyze_roofline


@dataclass(frozen=True)
class PhaseBound:
    step: PhaseCost              # what was bound: phase, new tokens, context, per-layer costs
    analysis: RooflineAnalysis   # per layer at the operating point
    bound: str                   # "memory" | "compute": the step's intensity against the ridge
    roofline_time_s: float       # max(W/F, Q/B) of the step as one fused unit
    measured_time_s: float | None = None

    phase = property(lambda self: self.step.phase)
    new_tokens = property(lambda self: self.step.new_tokens)
    context = property(lambda self: self.step.context)
    flops = property(lambda self: self.step.flops)
    bytes = property(lambda self: self.step.bytes)
    weight_bytes = property(lambda self: self.step.weight_bytes)
    kv_cache_bytes = property(lambda self: self.step.kv_cache_bytes)
    arithmetic_intensity = property(lambda self: self.step.arithmetic_intensity)

    @property
    def ridge_point(self) -> float:
        return self.analysis.ceilings.ridge_point

    @property
    def attainable_time_s(self) -> float:
        """Per-layer roofline plus per-layer overhead (unfused layers), summed."""
        return self.analysis.attainable_time_s

    @property
    def overhead_time_s(self) -> float:
        return sum(l.overhead_time_s for l in self.analysis.layers)

    @property
    def time_s(self) -> float:
        """The measured time when there is one, else the attainable time."""
        return self.measured_time_s or self.attainable_time_s

    @property
    def time_per_token_s(self) -> float:
        return self.time_s / self.new_tokens

    @property
    def tokens_per_s(self) -> float:
        return self.new_tokens / self.time_s if self.time_s > 0 else 0.0

    @property
    def achieved_flops(self) -> float:
        """FLOP/s at ``time_s``: the phase's height on the roofline chart."""
        return self.flops / self.time_s if self.time_s > 0 else 0.0

    @property
    def label(self) -> str:
        if self.phase == "decode":
            return f"decode @ {self.context}"
        return f"prefill {self.new_tokens}" + (f" @ {self.context}" if self.context else "")


def bound_phase(step: PhaseCost, ceilings: Ceilings, measured_time_s: float | None = None,
                measured_layer_times_s: dict[str, float] | None = None, *,
                cache_aware: bool = False) -> PhaseBound:
    """``step`` on the roofline of ``ceilings`` (an operating point, spec or measured)."""
    analysis = analyze_roofline(step.cost, ceilings, measured_layer_times_s, cache_aware=cache_aware)
    compute_s = step.flops / ceilings.peak_flops
    memory_s = step.bytes / ceilings.dram_bandwidth_bps
    return PhaseBound(step=step, analysis=analysis,
                      bound="compute" if compute_s > memory_s else "memory",
                      roofline_time_s=max(compute_s, memory_s), measured_time_s=measured_time_s)


def phase_to_json(p: PhaseBound) -> dict:
    """One phase of the ``analyze --json`` document (``phases[]``)."""
    return {"phase": p.phase, "new_tokens": p.new_tokens, "context": p.context,
            "flops": p.flops, "bytes": p.bytes, "weight_bytes": p.weight_bytes,
            "kv_cache_bytes": p.kv_cache_bytes, "arithmetic_intensity": p.arithmetic_intensity,
            "ridge_point": p.ridge_point, "bound": p.bound, "roofline_time_s": p.roofline_time_s,
            "attainable_time_s": p.attainable_time_s, "overhead_time_s": p.overhead_time_s,
            "measured_time_s": p.measured_time_s, "time_per_token_s": p.time_per_token_s,
            "tokens_per_s": p.tokens_per_s}
