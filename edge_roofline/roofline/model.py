"""Rooflines over a model's per-layer costs: classic, time-based and cache-aware.

- Classic: attainable FLOP/s = min(peak, AI x bandwidth).
- Time: T_layer = max(W / F, Q / B) + overhead, summed over layers. ``overhead`` is the
  ceilings' fixed per-layer term (kernel launch, dispatch) that no bandwidth explains.
- Cache-aware: Q / B becomes the slowest of Q_level / B_level over DRAM, L2 and L1, with
  per-level bytes measured by a profiler when given, else estimated (``estimate_level_bytes``).

A layer is overhead-bound when the fixed term exceeds both roofline terms, else compute- or
memory-bound by the larger of W / F and Q / B. Views (Reshape...) cost nothing.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Mapping

from edge_roofline.roofline.ceilings import Ceilings
from edge_roofline.roofline.costs import LayerCost, ModelCost

LEVELS = ("dram", "l2", "l1")
_ELEMENT_BYTES = {"fp32": 4, "fp16": 2, "int8": 1}
# Operand reuse a tiled contraction gets at each level: a register tile of 8 outputs per
# loaded operand (L1 traffic) and a 64-wide block tile staged through shared memory / L1
# (L2 traffic). Typical GEMM/conv tilings; a profiler's measured bytes replace the estimate.
_L1_REUSE = 8.0
_L2_REUSE = 64.0


@dataclass(frozen=True)
class LayerBound:
    name: str
    op_type: str
    flops: float
    bytes: float
    arithmetic_intensity: float
    attainable_flops: float        # FLOP/s, classic roofline
    attainable_time_s: float
    compute_time_s: float
    memory_time_s: float
    overhead_time_s: float
    bound: str                     # "compute" | "memory" | "overhead"
    measured_time_s: float | None = None
    achieved_flops: float | None = None
    achieved_bandwidth_bps: float | None = None
    efficiency: float | None = None  # attainable_time / measured
    macs: float = 0.0
    known: bool = True
    memory_level: str = "dram"     # the level whose traffic sets memory_time_s
    level_bytes: Mapping[str, float] | None = None  # cache-aware analyses only

    @property
    def above_roof(self) -> str | None:
        """Why the layer ran faster than its attainable time (efficiency > 1), or None. There the
        roofline is no bound on the layer, so reports print this instead of an efficiency over
        100 %: its bytes came from a cache (faster than the memory roof), or only the fixed
        per-layer overhead, an estimate, was beaten."""
        if self.efficiency is None or self.efficiency <= 1.0:
            return None
        if self.measured_time_s < self.memory_time_s:
            served = ": served from cache" if self.memory_level == "dram" else ""
            return f"above the {self.memory_level.upper()} roof{served}"
        if self.measured_time_s < self.compute_time_s:
            return "above the compute roof"
        return f"under the assumed {self.overhead_time_s * 1e6:.1f} us/layer overhead"


@dataclass(frozen=True)
class RooflineAnalysis:
    model: str
    ceilings: Ceilings
    layers: tuple[LayerBound, ...]
    total_flops: float
    total_bytes: float
    attainable_time_s: float
    measured_time_s: float | None
    unknown_ops: tuple[str, ...]
    precision: str = "fp32"
    batch: int = 1
    cache_aware: bool = False

    @property
    def total_macs(self) -> float:
        return sum(l.macs for l in self.layers)

    def layer(self, name: str) -> LayerBound:
        for l in self.layers:
            if l.name == name:
                return l
        raise KeyError(f"no layer named {name!r} in {self.model}")

    def time_by_bound(self) -> dict[str, float]:
        """Attainable time summed per bound class."""
        out = {"compute": 0.0, "memory": 0.0, "overhead": 0.0}
        for l in self.layers:
            out[l.bound] += l.attainable_time_s
        return out


def attainable_flops(ceilings: Ceilings, arithmetic_intensity: float,
                     bandwidth_bps: float | None = None) -> float:
    """Classic roofline: min(peak, AI x bandwidth); DRAM bandwidth unless told otherwise."""
    bw = ceilings.dram_bandwidth_bps if bandwidth_bps is None else bandwidth_bps
    return min(ceilings.peak_flops, arithmetic_intensity * bw)


def estimate_level_bytes(layer: LayerCost) -> dict[str, float]:
    """Bytes each memory level serves for a layer: DRAM sees the compulsory traffic; for
    contractions L2 and L1 see the operand re-reads left after tiling (never less than the
    level below)."""
    dram = layer.bytes
    operand_bytes = 2.0 * layer.macs * _ELEMENT_BYTES.get(layer.precision, 4)
    l2 = max(dram, operand_bytes / _L2_REUSE)
    l1 = max(l2, operand_bytes / _L1_REUSE)
    return {"dram": dram, "l2": l2, "l1": l1}


def _bound_layer(layer: LayerCost, ceilings: Ceilings, measured_s: float | None,
                 level_bytes: Mapping[str, float] | None) -> LayerBound:
    compute_s = layer.flops / ceilings.peak_flops
    memory_s, level = layer.bytes / ceilings.dram_bandwidth_bps, "dram"
    if level_bytes is not None:
        for lvl in LEVELS:
            bw = ceilings.bandwidth_bps(lvl)
            if bw and level_bytes.get(lvl) is not None and level_bytes[lvl] / bw > memory_s:
                memory_s, level = level_bytes[lvl] / bw, lvl
    overhead_s = 0.0 if layer.is_view else ceilings.layer_overhead_s
    roof_s = max(compute_s, memory_s)
    if overhead_s > roof_s:
        bound = "overhead"
    else:
        bound = "compute" if compute_s > memory_s else "memory"
    attainable_s = roof_s + overhead_s
    achieved_flops = achieved_bps = efficiency = None
    if measured_s is not None and measured_s > 0:
        achieved_flops = layer.flops / measured_s
        achieved_bps = layer.bytes / measured_s
        efficiency = attainable_s / measured_s
    return LayerBound(
        name=layer.name, op_type=layer.op_type, flops=layer.flops, bytes=layer.bytes,
        arithmetic_intensity=layer.arithmetic_intensity,
        attainable_flops=attainable_flops(ceilings, layer.arithmetic_intensity),
        attainable_time_s=attainable_s, compute_time_s=compute_s, memory_time_s=memory_s,
        overhead_time_s=overhead_s, bound=bound, measured_time_s=measured_s,
        achieved_flops=achieved_flops, achieved_bandwidth_bps=achieved_bps, efficiency=efficiency,
        macs=layer.macs, known=layer.known, memory_level=level,
        level_bytes=dict(level_bytes) if level_bytes is not None else None)


def analyze_roofline(cost: ModelCost, ceilings: Ceilings,
                     measured_times_s: dict[str, float] | None = None, *,
                     cache_aware: bool = False,
                     measured_level_bytes: Mapping[str, Mapping[str, float]] | None = None,
                     ) -> RooflineAnalysis:
    """Bound every layer of ``cost`` under ``ceilings``.

    ``measured_times_s`` maps node names to measured seconds (layers missing from it have no
    measurement). ``cache_aware`` adds the L2 and L1 terms using ``measured_level_bytes``
    (node name -> {"dram"|"l2"|"l1": bytes}) where given and estimates elsewhere.
    """
    measured_times_s = measured_times_s or {}
    measured_level_bytes = measured_level_bytes or {}
    cache_aware = cache_aware or bool(measured_level_bytes)
    layers = []
    for layer in cost.layers:
        level_bytes = None
        if cache_aware:
            level_bytes = estimate_level_bytes(layer) | dict(measured_level_bytes.get(layer.name, {}))
        layers.append(_bound_layer(layer, ceilings, measured_times_s.get(layer.name), level_bytes))
    measured = [measured_times_s[l.name] for l in cost.layers if l.name in measured_times_s]
    return RooflineAnalysis(
        model=cost.model, ceilings=ceilings, layers=tuple(layers),
        total_flops=cost.total_flops, total_bytes=cost.total_bytes,
        attainable_time_s=sum(l.attainable_time_s for l in layers),
        measured_time_s=sum(measured) if measured else None, unknown_ops=cost.unknown_ops,
        precision=cost.precision, batch=cost.batch, cache_aware=cache_aware)


def to_json_dict(analysis: RooflineAnalysis, *, device: str | None = None,
                 operating_point: str | None = None) -> dict:
    """The ``edge-roofline analyze --json`` document (``profile`` adds measured times)."""
    layers = []
    for l in analysis.layers:
        entry = {
            "name": l.name, "op_type": l.op_type, "flops": l.flops, "macs": l.macs,
            "bytes": l.bytes, "arithmetic_intensity": l.arithmetic_intensity, "bound": l.bound,
            "attainable_time_s": l.attainable_time_s, "attainable_flops": l.attainable_flops,
            "compute_time_s": l.compute_time_s, "memory_time_s": l.memory_time_s,
            "overhead_time_s": l.overhead_time_s, "memory_level": l.memory_level,
            "known": l.known, "measured_time_s": l.measured_time_s,
            "achieved_flops": l.achieved_flops, "achieved_bandwidth_bps": l.achieved_bandwidth_bps,
            "efficiency": l.efficiency,
        }
        if l.level_bytes is not None:
            entry["level_bytes"] = dict(l.level_bytes)
        layers.append(entry)
    totals = {"flops": analysis.total_flops, "macs": analysis.total_macs,
              "bytes": analysis.total_bytes, "attainable_time_s": analysis.attainable_time_s,
              "measured_time_s": analysis.measured_time_s,
              "time_by_bound_s": analysis.time_by_bound()}
    return {"model": analysis.model, "device": device, "operating_point": operating_point,
            "precision": analysis.precision, "batch": analysis.batch,
            "ceilings": analysis.ceilings.to_dict(), "layers": layers, "totals": totals,
            "unknown_ops": list(analysis.unknown_ops)}
