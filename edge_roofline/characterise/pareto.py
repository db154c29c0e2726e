"""Pareto front of latency against energy per inference (both minimised), and the point with
the least energy that meets each latency target."""

from __future__ import annotations

from dataclasses import dataclass
from typing import Callable, Generic, Iterable, Sequence, TypeVar

T = TypeVar("T")


def pareto_front(items: Iterable[T], latency: Callable[[T], float],
                 energy: Callable[[T], float]) -> list[T]:
    """Items no other item beats on both latency and energy (ties on both keep the first),
    sorted by latency (so energy falls along the front)."""
    ordered = sorted(items, key=lambda x: (latency(x), energy(x)))
    front: list[T] = []
    best_energy = float("inf")
    for item in ordered:
        if energy(item) < best_energy:
            front.append(item)
            best_energy = energy(item)
    return front


@dataclass(frozen=True)
class TargetChoice(Generic[T]):
    target_ms: float
    choice: T | None  # None: no point meets the target


def energy_optimal(items: Sequence[T], targets_ms: Iterable[float], latency_ms: Callable[[T], float],
                   energy: Callable[[T], float]) -> list[TargetChoice[T]]:
    """For each latency target, the item with the least energy whose latency is within it."""
    out = []
    for target in targets_ms:
        meeting = [x for x in items if latency_ms(x) <= target]
        out.append(TargetChoice(target, min(meeting, key=energy) if meeting else None))
    return out


def default_targets_ms(latencies_ms: Sequence[float], count: int = 6) -> list[float]:
    """Targets spread geometrically from the fastest latency to the slowest, rounded to 3
    significant digits, when none are given."""
    lo, hi = min(latencies_ms), max(latencies_ms)
    if hi <= lo:
        return [float(f"{lo:.3g}")]
    return [float(f"{lo * (hi / lo) ** (i / (count - 1)):.3g}") for i in range(count)]
