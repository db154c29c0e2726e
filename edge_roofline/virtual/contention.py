"""Several inferences in flight on one board at once (SIMULATION): each stream's engine runs on
the same GPU and CPU cores, so each one's progress depends on what the others are doing.

Each inference has its solo timing (``VirtualBoard.prepare_inference``: what it would take
alone, the board's background GPU load already taking its share) and two stages:

- host: the fixed per-inference CPU work (and any preemption of its thread): one core;
- device: its kernels (``gpu_busy_s`` of GPU time) overlapped with their enqueue (CPU).

While it is in a stage it needs a fraction of the GPU and of a core per second of solo
progress. Each resource is shared max-min fairly (processor sharing, as the GPU's time-slicing
between contexts does): with k inferences all GPU-bound, each progresses at 1/k; one that needs
the GPU only part of the time is slowed less. An inference progresses at the rate its scarcer
resource allows. The board's activity (what drives power) is the sum of the inferences' average
activities at their current rates, so GPU utilisation and DRAM traffic add up.

Assumptions (see docs/governor_eval.md): one context per stream, fair time-slicing, no L2 or
DRAM bandwidth interference beyond what the added traffic costs in power, activity averaged
over an inference. With one inference in flight nothing here changes its timing or activity.
"""

from __future__ import annotations

import math
from dataclasses import dataclass

from .physics import Activity, InferenceTiming

_EPS_S = 1e-12


@dataclass
class Run:
    """One inference in flight."""

    timing: InferenceTiming  # solo (jitter included)
    activity: Activity  # solo: the board's activity were it alone
    progress_s: float = 0.0  # solo seconds done
    rate: float = 0.0  # solo seconds per second now
    mark_s: float = 0.0  # when progress_s was last brought up to date
    end_s: float = math.inf  # when it finishes at the current rates

    @property
    def host_stage_s(self) -> float:
        return min(self.timing.host_fixed_s + self.timing.preempt_s, self.timing.latency_s)

    def demands(self) -> tuple[float, float]:
        """(GPU, CPU cores) needed per second of solo progress in the current stage."""
        t = self.timing
        if self.progress_s < self.host_stage_s - _EPS_S:
            return 0.0, 1.0
        device_s = max(t.latency_s - self.host_stage_s, _EPS_S)
        enqueue_s = max(t.host_s - t.host_fixed_s, 0.0)
        return min(t.gpu_busy_s / device_s, 1.0), min(enqueue_s / device_s, 1.0)


def fair_rates(demands: list[float], capacity: float) -> list[float]:
    """Max-min fair sharing of ``capacity`` among users that each want ``demands[i]`` of it
    per unit of progress: the rate each progresses at (1.0 when there is enough)."""
    if sum(demands) <= capacity:
        return [1.0] * len(demands)
    order = sorted(range(len(demands)), key=lambda i: demands[i])
    rates, left = [1.0] * len(demands), capacity
    for n, i in enumerate(order):
        share = left / (len(order) - n)
        if demands[i] > share:  # every remaining one is at least as demanding: equal shares
            for j in order[n:]:
                rates[j] = share / demands[j]
            break
        left -= demands[i]
    return rates


class Contention:
    """The inferences in flight on one board, keyed by stream."""

    def __init__(self, board) -> None:
        self.board = board
        self.runs: dict[str, Run] = {}

    def start(self, key: str, timing: InferenceTiming, activity: Activity, now_s: float) -> None:
        self._catch_up(now_s)
        self.runs[key] = Run(timing, activity, mark_s=now_s)
        self._replan(now_s)

    def finish(self, key: str, now_s: float) -> None:
        self._catch_up(now_s)
        del self.runs[key]
        self._replan(now_s)

    def stage_change(self, now_s: float) -> None:
        """Some inference reached its device stage: its needs, and so the shares, change."""
        self._catch_up(now_s)
        self._replan(now_s)

    def next_event_s(self) -> tuple[float, bool]:
        """(when, is_stage_change): the next end, or stage change where it can change a share."""
        end = min((r.end_s for r in self.runs.values()), default=math.inf)
        stage = math.inf
        if len(self.runs) > 1:  # alone, an inference's stages do not matter (it gets all it needs)
            stage = min((r.mark_s + (r.host_stage_s - r.progress_s) / r.rate for r in self.runs.values()
                         if r.progress_s < r.host_stage_s - _EPS_S and r.rate > 0), default=math.inf)
        return (stage, True) if stage < end else (end, False)

    def ended(self, now_s: float) -> list[str]:
        return [k for k, r in self.runs.items() if r.end_s <= now_s]

    def activity(self) -> Activity | None:
        """What the board does now (None: idle)."""
        runs = list(self.runs.values())
        if len(runs) == 1 and runs[0].rate == 1.0:
            return runs[0].activity
        if not runs:
            return None
        b = self.board
        gpu = [r.rate * r.timing.gpu_busy_s / r.timing.latency_s for r in runs]
        gpu_total = sum(gpu)
        compute = sum(g * r.timing.compute_fraction for g, r in zip(gpu, runs)) / gpu_total if gpu_total else 0.0
        return Activity(gpu_util=min(1.0, gpu_total + b.background_gpu_load), gpu_compute_fraction=compute,
                        gpu_clocked=True,
                        dram_bps=sum(r.rate * r.timing.dram_bytes / r.timing.latency_s for r in runs)
                        + b.background_dram_bps(),
                        cpu_busy_cores=sum(r.rate * min(r.timing.host_s / r.timing.latency_s, 1.0) for r in runs)
                        + b.background_cpu_cores)

    def _catch_up(self, now_s: float) -> None:
        for r in self.runs.values():
            r.progress_s = min(r.progress_s + r.rate * (now_s - r.mark_s), r.timing.latency_s)
            r.mark_s = now_s

    def _replan(self, now_s: float) -> None:
        runs = list(self.runs.values())
        needs = [r.demands() for r in runs]
        cores = self.board.silicon_clocks().cpu_online_cores - self.board.background_cpu_cores
        gpu_rates = fair_rates([g for g, _ in needs], 1.0)
        cpu_rates = fair_rates([c for _, c in needs], max(cores, 1.0))
        for r, g, c in zip(runs, gpu_rates, cpu_rates):
            rate = min(g, c)
            if rate != r.rate:  # an unchanged rate keeps its end time exactly (one inference: start + latency)
                r.rate = rate
                r.end_s = now_s + (r.timing.latency_s - r.progress_s) / rate
