"""How the virtual Jetson moves between operating points, and what disturbs its latencies and
its power sensor: the ``physics`` knob set (``Actuation``). SIMULATION.

Actuation, per clock domain (CPU, GPU, EMC):

- a new clock takes effect after a settle time (docs/jetson-facts.md, "Actuation": about 1 ms
  CPU, 5 ms GPU, 8 ms EMC on Orin NX / Nano; the catalogue has no other figure, so AGX Orin and
  Thor use the same); while it settles the domain runs at the SLOWER of its old and new clock
  (a DVFS step lowers the clock before the voltage drops, and raises the voltage before the
  clock rises), cores going on- or offline included (the fewer cores count, for longer:
  ``core_hotplug_s`` more);
- the first inference that starts after an EMC change stalls (``emc_stall_s``: the memory
  controller retrains and holds DRAM traffic; no public figure, an assumption);
- an nvpmodel preset change (another mode, not a cap change inside one) runs a process that
  rewrites many files: every domain it moves stays in transition ``preset_change_s`` longer
  (facts: "hundreds of milliseconds [likely]").

Disturbances:

- outlier bursts: with ``outlier_burst_probability`` per inference a burst starts, its length
  drawn from ``outlier_burst_length`` inferences, each ``outlier_factor`` times slower
  (deadline misses come in bursts, facts S10; the rate is an assumption);
- the power sensor averages its conversion window (``PhysicsParams.ina_window_s``) and a read
  returns a finished conversion: ``sensor_lag_conversions`` 0 is a conversion ending exactly
  at the read (idealised), 1 the last one a free-running converter finished (a real INA3221),
  more is further behind.

Every duration and factor is a number or a ``[low, high]`` range drawn uniformly per event.
Presets: ``realistic`` (the default), ``slow`` (settles of 15-80 ms, an AGX Orin measured
outside this project: issue 28) and ``instant`` (nothing takes time: the board as it was before
actuation was modelled, apart from its 1-8 ms old-clock hold).
"""

from __future__ import annotations

import math
import random
from dataclasses import asdict, dataclass, fields, replace
from typing import Any, Mapping

from edge_roofline.virtual.physics import Clocks, InferenceTiming

DOMAINS = ("cpu", "gpu", "emc")
Range = tuple[float, float]


class PhysicsKnobError(ValueError):
    """A ``physics`` knob is wrong; the message names it and the fix."""


@dataclass(frozen=True)
class Actuation:
    """The ``physics`` knob set (ranges are (low, high), drawn uniformly per event)."""

    settle_cpu_s: Range = (0.001, 0.001)
    settle_gpu_s: Range = (0.005, 0.005)
    settle_emc_s: Range = (0.008, 0.008)
    core_hotplug_s: Range = (0.002, 0.005)  # on top of the CPU settle when cores go on/offline (assumption)
    preset_change_s: Range = (0.1, 0.3)  # nvpmodel -m: every domain it moves stays in transition this much longer
    emc_stall_s: Range = (0.001, 0.004)  # added to the first inference after an EMC change
    outlier_burst_probability: float = 0.0003  # per inference: a burst of slow inferences starts
    outlier_burst_length: Range = (1, 4)  # inferences per burst (integers)
    outlier_factor: Range = (2.0, 5.0)  # each outlier's latency multiplier
    sensor_lag_conversions: int = 1  # 0: the conversion ends at the read; 1: the last finished one

    def __post_init__(self) -> None:
        for f in fields(self):
            value = getattr(self, f.name)
            values = value if isinstance(value, tuple) else (value,)
            if not all(math.isfinite(v) and v >= 0 for v in values):
                raise PhysicsKnobError(f"physics: {f.name} must be >= 0, got {_show(value)}")
            if isinstance(value, tuple) and value[0] > value[1]:
                raise PhysicsKnobError(f"physics: {f.name} must be [low, high] with low <= high, got {_show(value)}")
        if self.outlier_burst_probability > 1:
            raise PhysicsKnobError(f"physics: outlier_burst_probability must be <= 1, "
                                   f"got {self.outlier_burst_probability}")
        if self.outlier_factor[0] < 1:
            raise PhysicsKnobError(f"physics: outlier_factor must be >= 1 (an outlier is slower), "
                                   f"got {_show(self.outlier_factor)}")
        if self.outlier_burst_length[0] < 1 or not all(float(n).is_integer() for n in self.outlier_burst_length):
            raise PhysicsKnobError(f"physics: outlier_burst_length must be whole inferences >= 1, "
                                   f"got {_show(self.outlier_burst_length)}")

    def settle_range_s(self, domain: str) -> Range:
        return getattr(self, f"settle_{domain}_s")

    def to_dict(self) -> dict:
        return asdict(self)

    @classmethod
    def from_dict(cls, data: Any, where: str = "physics") -> "Actuation":
        """A preset name, or a mapping: optional ``preset`` (default realistic) plus knobs that
        override it. Unknown keys and presets are refused by name."""
        if data is None:
            return PRESETS["realistic"]
        if isinstance(data, str):
            data = {"preset": data}
        if not isinstance(data, Mapping):
            raise PhysicsKnobError(f"{where}: must be a preset name ({', '.join(PRESETS)}) or a mapping of "
                                   f"knobs, got {data!r}")
        data = dict(data)
        preset = data.pop("preset", "realistic")
        if preset not in PRESETS:
            raise PhysicsKnobError(f"{where}: unknown preset {preset!r}; use one of {', '.join(PRESETS)}")
        known = [f.name for f in fields(cls)]
        unknown = sorted(set(data) - set(known))
        if unknown:
            raise PhysicsKnobError(f"{where}: unknown key(s) {', '.join(unknown)}; known: preset, "
                                   f"{', '.join(known)} (check the spelling)")
        out = {}
        for name, value in data.items():
            ranged = isinstance(getattr(PRESETS[preset], name), tuple)
            out[name] = _knob(value, name, where, ranged)
        try:
            return replace(PRESETS[preset], **out)
        except PhysicsKnobError as exc:
            raise PhysicsKnobError(f"{where}: {str(exc).removeprefix('physics: ')}") from None


def _show(value) -> str:
    return f"[{value[0]:g}, {value[1]:g}]" if isinstance(value, tuple) else f"{value!r}"


def _knob(value: Any, name: str, where: str, ranged: bool):
    def number(v):
        if isinstance(v, bool) or not isinstance(v, (int, float)):
            raise PhysicsKnobError(f"{where}: {name} must be a number{' or [low, high]' if ranged else ''}, "
                                   f"got {value!r}")
        return float(v)
    if not ranged:
        if name == "sensor_lag_conversions" and not (isinstance(value, int) and not isinstance(value, bool)):
            raise PhysicsKnobError(f"{where}: {name} must be a whole number of conversions, got {value!r}")
        return value if name == "sensor_lag_conversions" else number(value)
    if isinstance(value, (list, tuple)):
        if len(value) != 2:
            raise PhysicsKnobError(f"{where}: {name} must be a number or [low, high], got {value!r}")
        return (number(value[0]), number(value[1]))
    return (number(value), number(value))


_NO_TIME = (0.0, 0.0)
PRESETS: dict[str, Actuation] = {
    "realistic": Actuation(),
    # Issue 28's outside AGX Orin physics: clocks settle in 15-80 ms, +50 ms for a preset change.
    "slow": Actuation(settle_cpu_s=(0.010, 0.020), settle_gpu_s=(0.020, 0.040), settle_emc_s=(0.050, 0.080),
                      preset_change_s=(0.05, 0.05)),
    "instant": Actuation(settle_cpu_s=_NO_TIME, settle_gpu_s=_NO_TIME, settle_emc_s=_NO_TIME,
                         core_hotplug_s=_NO_TIME, preset_change_s=_NO_TIME, emc_stall_s=_NO_TIME,
                         outlier_burst_probability=0.0, sensor_lag_conversions=0),
}


def _draw(rng: random.Random, span: Range) -> float:
    return span[0] if span[0] == span[1] else rng.uniform(*span)


def _part(c: Clocks, domain: str) -> tuple:
    if domain == "cpu":
        return c.cpu_freq_hz, c.cpu_online_cores
    if domain == "gpu":
        return c.gpu_freq_hz, c.tpc_pg_mask
    return (c.emc_freq_hz,)


def _slower(a: Clocks, b: Clocks, domain: str, active_tpcs) -> Clocks:
    """``a`` with ``domain`` at the slower of ``a``'s and ``b``'s settings."""
    if domain == "cpu":
        return replace(a, cpu_freq_hz=min(a.cpu_freq_hz, b.cpu_freq_hz),
                       cpu_online_cores=min(a.cpu_online_cores, b.cpu_online_cores))
    if domain == "gpu":
        mask = min((a.tpc_pg_mask, b.tpc_pg_mask), key=active_tpcs)
        return replace(a, gpu_freq_hz=min(a.gpu_freq_hz, b.gpu_freq_hz), tpc_pg_mask=mask)
    return replace(a, emc_freq_hz=min(a.emc_freq_hz, b.emc_freq_hz))


def _with(a: Clocks, b: Clocks, domain: str) -> Clocks:
    """``a`` with ``domain`` taken from ``b``."""
    if domain == "cpu":
        return replace(a, cpu_freq_hz=b.cpu_freq_hz, cpu_online_cores=b.cpu_online_cores)
    if domain == "gpu":
        return replace(a, gpu_freq_hz=b.gpu_freq_hz, tpc_pg_mask=b.tpc_pg_mask)
    return replace(a, emc_freq_hz=b.emc_freq_hz)


class Actuator:
    """The clocks the silicon runs at while cap changes settle. ``active_tpcs(mask)``: how many
    TPCs a power-gating mask leaves on (fewer is slower)."""

    def __init__(self, knobs: Actuation, clocks: Clocks, rng: random.Random, active_tpcs) -> None:
        self.knobs, self.rng, self.active_tpcs = knobs, rng, active_tpcs
        self.target = clocks  # the caps' clocks
        self.in_force = clocks
        self._from: dict[str, Clocks] = {}  # domain in transition -> the clocks in force when it started
        self._until_s: dict[str, float] = {}
        self.emc_changes = 0  # EMC changes requested so far (a live board's clients count them)

    def request(self, target: Clocks, now_s: float, preset_change: bool) -> list[str]:
        """New caps at ``now_s``; returns the domains that moved."""
        # A list in DOMAINS order, not a set: each domain draws its delay from the shared rng in
        # turn, and a set's order follows PYTHONHASHSEED (the draws would land per hash seed).
        moved = [d for d in DOMAINS if _part(target, d) != _part(self.target, d)]
        for d in moved:
            k = self.knobs
            delay = _draw(self.rng, k.settle_range_s(d))
            if d == "cpu" and target.cpu_online_cores != self.target.cpu_online_cores:
                delay += _draw(self.rng, k.core_hotplug_s)
            if preset_change:
                delay += _draw(self.rng, k.preset_change_s)
            self._from[d] = self.in_force
            self._until_s[d] = now_s + delay
        self.emc_changes += "emc" in moved
        self.target = target
        self.settle(now_s)
        return moved

    def next_settle_s(self) -> float | None:
        return min(self._until_s.values(), default=None)

    def settle(self, now_s: float) -> None:
        """Domains whose settle time has passed take their new clocks."""
        for d in [d for d, t in self._until_s.items() if t <= now_s + 1e-12]:
            del self._until_s[d], self._from[d]
        clocks = self.target
        for d, old in self._from.items():
            clocks = _slower(clocks, _with(clocks, old, d), d, self.active_tpcs)
        self.in_force = clocks

    def in_transition(self) -> tuple[str, ...]:
        return tuple(sorted(self._until_s))


class Disturbances:
    """What happens to one inference beyond its clocks: the EMC stall and outlier bursts. The
    board has one; a live board's client process has its own (the same knobs)."""

    def __init__(self, knobs: Actuation, rng: random.Random) -> None:
        self.knobs, self.rng = knobs, rng
        self._stall_due = False
        self._burst_left = 0

    def emc_changed(self) -> None:
        self._stall_due = True

    def apply(self, timing: InferenceTiming) -> InferenceTiming:
        """``timing`` (jitter already drawn) with this inference's stall and outlier factor."""
        stall_s = _draw(self.rng, self.knobs.emc_stall_s) if self._stall_due else 0.0
        self._stall_due = False
        factor = self._outlier_factor()
        if stall_s == 0.0 and factor == 1.0:
            return timing
        # An outlier slows all of it (as the run's jitter does); the stall holds the GPU waiting.
        return replace(timing, latency_s=timing.latency_s * factor + stall_s, gpu_busy_s=timing.gpu_busy_s * factor,
                       host_s=timing.host_s * factor, layer_scale=timing.layer_scale * factor,
                       host_fixed_s=timing.host_fixed_s * factor, preempt_s=timing.preempt_s * factor)

    def _outlier_factor(self) -> float:
        k = self.knobs
        if self._burst_left == 0:
            if k.outlier_burst_probability <= 0 or self.rng.random() >= k.outlier_burst_probability:
                return 1.0
            low, high = k.outlier_burst_length
            self._burst_left = self.rng.randint(int(low), int(high))
        self._burst_left -= 1
        return _draw(self.rng, k.outlier_factor)


def sensor_window_end_s(now_s: float, window_s: float, lag_conversions: int) -> float:
    """When the conversion a read at ``now_s`` returns ended (converter free-running from 0)."""
    if lag_conversions == 0 or window_s <= 0:
        return now_s
    return (math.floor(now_s / window_s + 1e-9) - (lag_conversions - 1)) * window_s
