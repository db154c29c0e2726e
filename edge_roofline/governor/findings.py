"""What the governor has measured at each point under the current workload, and under each mix of
streams it has seen (a mix that comes back starts from what was measured under it)."""

from __future__ import annotations

from dataclasses import dataclass, field

from .verdicts import Misses


@dataclass
class Findings:
    """Point names, under one workload (models, rates and targets) and one mix of streams."""

    verdict_ttl_s: float
    measured: set[str] = field(default_factory=set)  # measured under it (not explored again)
    # missed a target under it: not tried again until the verdict expires (verdicts.py)
    missed: Misses = None  # type: ignore[assignment]
    met: set[str] = field(default_factory=set)  # measured to meet every target under it
    near: set[str] = field(default_factory=set)  # ... every target, not every limit (target x (1 - margin))
    # missed under it, verdict expired or not: not explored again (an expired verdict lets the
    # point back only where the model predicts it meets, as any point)
    missed_once: set[str] = field(default_factory=set)
    # inside the margin, more late than the promise allows (verdicts.over_promise): near no more
    spent: set[str] = field(default_factory=set)
    # (point, stream): samples judged and late over the stays before the last, the last's number, its samples, late
    stays: dict[tuple[str, str], tuple[int, int, int, int, int]] = field(default_factory=dict)
    # near and held for a dwell (record_dwell): held to meet after a move away while near (verdicts.measured_to_meet)
    dwelt_near: set[str] = field(default_factory=set)

    def __post_init__(self) -> None:
        if self.missed is None:
            self.missed = Misses(self.verdict_ttl_s)

    @property
    def meets_targets(self) -> set[str]:
        """The points measured to meet every target (``met``, ``near``)."""
        return self.met | self.near

    @property
    def tried(self) -> set[str]:
        """The points measured, or ruled out by a miss now or once: not explored again (a probe that
        missed isolates its axis as well)."""
        return self.measured | self.missed.names() | self.missed_once

    def forget_verdicts(self) -> None:
        """A new target: what each point measured still holds, not whether it met the targets."""
        self.missed.clear()
        self.missed_once.clear()
        self.met.clear()
        self.near.clear()
        self.spent.clear()
        self.stays.clear()
        self.dwelt_near.clear()

    def unchanged_by(self, slower: bool) -> "Findings":
        """The verdicts a change of the work cannot overturn: a point that missed misses slower
        work too; one that met (inside the margin or not) meets faster work."""
        if slower:
            return Findings(self.verdict_ttl_s, missed=self.missed.copy(), missed_once=set(self.missed_once),
                            spent=set(self.spent))
        return Findings(self.verdict_ttl_s, met=set(self.met), near=set(self.near), spent=set(self.spent),
                        dwelt_near=set(self.dwelt_near))

    def kept_for_targets(self, before, after) -> "Findings | None":
        """The verdicts a change of targets from ``before`` to ``after`` (StreamConfigs, in the
        same order) leaves standing: every target tighter, a point that missed misses still;
        every one looser, a point that met meets still; None: mixed (none stands)."""
        tighter = any(b.target_latency_ms < a.target_latency_ms or b.percentile > a.percentile
                      for a, b in zip(before, after))
        looser = any(b.target_latency_ms > a.target_latency_ms or b.percentile < a.percentile
                     for a, b in zip(before, after))
        if tighter == looser:
            return None
        kept = self.unchanged_by(slower=tighter)
        kept.measured = set(self.measured)
        return kept

    def copy(self) -> "Findings":
        return Findings(self.verdict_ttl_s, set(self.measured), self.missed.copy(), set(self.met), set(self.near),
                        set(self.missed_once), set(self.spent), dict(self.stays), set(self.dwelt_near))

    def record_dwell(self, point: str, dwelt: bool) -> None:
        """Keep in ``dwelt_near`` the points still near, and add ``point`` (the one held) where it is
        near and has been held a dwell (``dwelt``)."""
        self.dwelt_near &= self.near
        if dwelt and point in self.near:
            self.dwelt_near.add(point)

    def late_count(self, point: str, stream: str, stay: int, samples: int, late: int) -> tuple[int, int]:
        """The samples of ``stream`` judged at ``point`` over every stay there, and those late:
        ``samples`` and ``late`` so far in the current one (``stay``: its number) and all before."""
        before_n, before_late, last, last_n, last_late = self.stays.get((point, stream), (0, 0, stay, 0, 0))
        if last != stay:
            before_n, before_late = before_n + last_n, before_late + last_late
        self.stays[(point, stream)] = (before_n, before_late, stay, samples, late)
        return before_n + samples, before_late + late

    def late_seen(self) -> set[str]:
        """The points where a stream was late in any stay."""
        return {point for (point, _), (_, before, _, _, last) in self.stays.items() if before + last}


class MixMemory:
    """Findings per mix of streams (each a set of (stream, model id)) since the last change of
    models, rates or targets: a segmenter switched off and on again finds its mix's findings."""

    def __init__(self) -> None:
        self._by_mix: dict[frozenset, Findings] = {}

    def clear(self) -> None:
        self._by_mix.clear()

    def switch(self, before: frozenset, now: frozenset, findings: Findings) -> Findings:
        """Keep ``findings`` (measured under ``before``); those known for ``now``, else none."""
        self._by_mix[before] = findings.copy()
        known = self._by_mix.get(now)
        return known.copy() if known is not None else Findings(findings.verdict_ttl_s)
