"""Queueing in the latency model: a stream's inputs wait while its previous inference runs, so
the latency the application sees is waiting plus service, and the waiting grows without bound
as the service time nears the input period.

The model (one stream = one FIFO server, a G/G/1 queue):

- Utilisation ``rho = rate x service mean``; at ``rho >= 1`` the queue grows without bound.
- Mean wait (Kingman's G/G/1 approximation): ``E[Wq] = rho / (1 - rho) x (ca2 + cs2) / 2 x
  service``, with ``cs2``/``ca2`` the squared coefficients of variation of the service times
  and of the gaps between arrivals, both measured.
- Its tail: a wait with probability ``rho`` (the delay probability, exact for Poisson arrivals),
  then exponential with mean ``E[Wq] / rho`` (the heavy-traffic shape), so the wait exceeded by
  a fraction ``q = 1 - percentile / 100`` of inputs is ``E[Wq] / rho x ln(rho / q)`` (0 when
  ``rho <= q``).
- The latency percentile: the larger of the service-time percentile (``jitter_ratio x
  service``: today's prediction, which it equals while waiting is rare) and the mean service
  plus the waiting percentile x ``wait_scale``.

``wait_scale`` is how far the measured tail has exceeded this waiting (>= 1): rare long
inferences (a preempted host thread) make a backlog that drains over many periods, a tail two
moments do not capture. It is learned where the stream has been seen waiting, so the
utilisation margin a point needs follows the tail measured, not a fixed constant.

What the governor measures (``measure``): each inference's latency and its finish time. For a
FIFO server its service time is ``min(latency, finish - previous finish)`` (it started at its
arrival or when the previous one finished, whichever came later), whether the latency reported
includes the wait or not; its arrival is ``finish - latency``.
"""

from __future__ import annotations

import math
from dataclasses import dataclass, replace

import numpy as np

# A stream measured waiting longer than Kingman's tail says: at most this many times (a window
# with one burst in it must not make every busy point look unusable for long).
MAX_WAIT_SCALE = 20.0
# The measured tail teaches wait_scale only where waiting shows in it: its percentile over the
# service-time percentile by this fraction, or the model's waiting branch binding there.
VISIBLE_WAIT_REL = 0.05
_MIN_SAMPLES = 4  # fewer service times say nothing about their spread
_MIN_TAIL_SAMPLES = 3  # a tail quantile is learned from windows with this many samples beyond it
# A latency this many times the typical one at a point is an outlier (jitter is a few percent):
# it, and the inferences queued behind it until the latency is back under this, are one burst.
OUTLIER_RATIO = 2.0
TYPICAL_MEMORY = 0.05  # each latency outside a burst moves the typical one this share of the way
# At most this share of a stream's inferences may end past its target (what governor-eval
# scores, issue #6): the tail beyond the percentile, the part queueing stretches most.
TAIL_SHARE = 0.01
# A stream is self-paced when at least this share of its inputs arrived within this fraction of
# a service time of the previous inference's finish.
SELF_PACED_SHARE = 0.8
SELF_PACED_REL = 0.02
# Each window moves the shape this share of the way (the first ones: their mean): rare long
# inferences show in some windows and not in others, and the queue remembers them.
SHAPE_MEMORY = 0.25


@dataclass(frozen=True)
class QueueShape:
    """What a stream's measured windows say about its queue, beyond the mean service time."""

    service_scv: float = 0.0  # variance / mean^2 of service times
    arrival_scv: float = 0.0  # variance / mean^2 of the gaps between arrivals (periodic: 0)
    wait_scale: float = 1.0  # measured waiting at the percentile / Kingman's (>= 1)
    tail_wait_scale: float = 1.0  # the same at the tail percentile (tail_percentile)
    windows: int = 0  # windows measured into it
    # Each input issued when the previous one finished (a decoder's steps, a closed loop): the
    # input rate follows the service time, so nothing waits whatever the point.
    self_paced: bool = False


def waiting_percentile_s(service_s: float, rate_hz: float, shape: QueueShape, percentile: float) -> float:
    """The wait (before service starts) that ``percentile`` % of inputs do not exceed, Kingman's
    tail unscaled; inf when the queue is unstable."""
    rho = service_s * rate_hz
    if shape.self_paced or not (math.isfinite(rho) and rho > 0):
        return 0.0
    if rho >= 1.0:
        return math.inf
    q = 1.0 - percentile / 100.0
    if rho <= q:
        return 0.0
    mean_wait_s = rho / (1.0 - rho) * (shape.arrival_scv + shape.service_scv) / 2.0 * service_s
    return mean_wait_s / rho * math.log(rho / q)


def tail_percentile(percentile: float, share: float = TAIL_SHARE) -> float:
    """The percentile that at most ``share`` of inferences exceed (never below ``percentile``)."""
    return max(percentile, 100.0 * (1.0 - share))


def tail_share_seen(latency_s: np.ndarray, target_s: float) -> float:
    """The share of ``latency_s`` (in order) over ``target_s``, late ones in a row counting once:
    a burst and the backlog behind it, drained or still draining, are BurstMeter's to price (a
    level, every sample late, is the verdicts'); 0 where too few samples to show a share of
    TAIL_SHARE (a window of a dozen with one late one says nothing about the 99th)."""
    if len(latency_s) * TAIL_SHARE < _MIN_TAIL_SAMPLES:
        return 0.0
    late = latency_s > target_s
    return float(np.count_nonzero(late[1:] & ~late[:-1]) + late[0]) / len(late)


def percentile_latency_s(service_s: float, rate_hz: float, jitter_ratio: float, shape: QueueShape,
                         percentile: float, tail: bool = False, tail_share: float = TAIL_SHARE) -> float:
    """Waiting plus service at ``percentile`` (``tail``: at ``tail_percentile(percentile,
    tail_share)``): the service-time percentile while waiting is rare (low utilisation),
    Kingman's tail as the input period nears the service time."""
    if tail:
        percentile = tail_percentile(percentile, tail_share)
    wait_s = waiting_percentile_s(service_s, rate_hz, shape, percentile)
    scale = shape.tail_wait_scale if tail else shape.wait_scale
    return max(service_s * jitter_ratio, service_s + scale * wait_s)


@dataclass(frozen=True)
class Bursts:
    """Rare slow inferences (a preempted thread, a neighbour's blip, in bursts) and the backlog
    each leaves in the queue, as measured: how often one starts per inference, and the largest
    backlog seen, in service times. Neither moments nor a window's percentiles price them: one
    burst every few thousand inferences makes every inference queued behind it late while the
    backlog drains, at ``1 - utilisation`` of the input rate. So a point near saturation, where
    a burst's backlog drains slowly, is priced by the share of inferences bursts make late."""

    events: float = 0.0  # backlogs seen (each weighs less as it ages: BurstMeter)
    inferences: float = 0.0  # judged, over every point (the same)
    excess: float = 0.0  # the largest backlog seen: peak latency / typical latency - 1

    def late_per_burst(self, service_s: float, rate_hz: float, target_s: float, self_paced: bool = False) -> float:
        """The inferences one burst makes late at a mean service time ``service_s``: every input
        that arrives while the backlog (``excess`` service times, draining at ``1 - rho``) is
        beyond the target's slack. (The slow inferences themselves are late wherever their own
        latency is: no point is chosen for them.)"""
        if not self.events or self_paced:  # self-paced: nothing queues behind a slow one
            return 0.0
        rho = service_s * rate_hz
        if rho >= 1.0:
            return math.inf
        over_s = self.excess * service_s - (target_s - service_s)
        return max(over_s, 0.0) / (1.0 - rho) * rate_hz

    def late_share(self, service_s: float, rate_hz: float, target_s: float, self_paced: bool = False) -> float:
        """The share of inferences bursts make late at a mean service time ``service_s``."""
        return self.events / max(self.inferences, 1) * self.late_per_burst(service_s, rate_hz, target_s, self_paced)

    def window_late(self, service_s: float, rate_hz: float, target_s: float, window_s: float,
                    self_paced: bool = False) -> float:
        """The late inferences bursts may make over the next ``window_s``: those of the bursts
        expected in it (at least as many as seen, however short the stay so far) and of one
        more. Bursts come one at a time, each a lump of late inferences: a point whose mean
        share fits spends a late budget already drawn on at the next burst (agx_saturated: 21
        late at the first burst, then 27 at the second at a point priced 0.99 %)."""
        window = rate_hz * window_s
        expected = self.events / max(self.inferences, window, 1.0) * window if math.isfinite(window) else 0.0
        return (expected + min(self.events, 1.0)) * self.late_per_burst(service_s, rate_hz, target_s, self_paced)


# One outlier not seen yet: an inference OUTLIER_RATIO x the typical one, its backlog one service time.
ONE_OUTLIER = Bursts(events=1.0, excess=OUTLIER_RATIO - 1.0)


class BurstMeter:
    """Finds bursts in one stream's judged latencies as they come: a latency at least
    OUTLIER_RATIO x the typical one at the current point is in a backlog; the backlog is a
    burst once it drains (an inference in it ran at a typical service time, the finish gap, or
    the latency is back under that), priced from then on at the largest size it reached. A
    backlog cut short by a move that never drained is not counted: it may have been a level (the
    work got heavier), which the verdicts judge. Nor is one that began in a workload change's
    grace: as its late inferences (the late budget's), it is the change's -- a start's or a model
    switch's warm-up, the queue a rate that rose builds at the point held -- not a burst of the
    stream's. Priced, the few inferences after a change make one such outlier a high rate: a
    start's outlier (the 7th inference) and one in a rate change's grace, 2 in 270 inferences,
    kept every point near the oracle's out of a 60 Hz phase (nx_rate_changes@10: 1.18 x oracle).
    ``reset``: another point, another typical latency."""

    def __init__(self) -> None:
        self.bursts = Bursts()
        self._typical_s = math.nan  # a running mean of the latencies outside backlogs
        self._peak_s = 0.0  # of the backlog going on (0: none)
        self._counted = False  # ... counted as a burst (it drains)
        self._in_grace = False  # ... began in a change's grace: not priced
        self._last_s = -math.inf  # the last finish
        # The latest latencies of a burst in a row: its outliers, then the backlog behind them
        # draining (each under the one before, the queue emptying; 0: none going on).
        self.run = 0
        self._previous_s = math.inf

    def reset(self) -> None:
        self._typical_s, self._peak_s, self._counted, self.run = math.nan, 0.0, False, 0
        self._previous_s = math.inf

    def add(self, latency_s: float, timestamp_s: float, memory_s: float, in_grace: bool = False) -> None:
        """One judged latency, finished at ``timestamp_s``: what was counted before weighs
        ``exp(-age / memory_s)`` (an episode of outliers does not price every point for ever).
        ``in_grace``: it started in a workload change's grace (a backlog it begins is the change's)."""
        gap_s = timestamp_s - self._last_s
        keep = math.exp(-max(gap_s, 0.0) / memory_s) if math.isfinite(gap_s) else 1.0
        self._last_s = max(self._last_s, timestamp_s)
        self.bursts = replace(self.bursts, events=self.bursts.events * keep,
                              inferences=self.bursts.inferences * keep + 1)
        draining, self._previous_s = self.run and latency_s < self._previous_s, latency_s
        if not math.isfinite(self._typical_s):
            self._typical_s = latency_s
        elif latency_s >= OUTLIER_RATIO * self._typical_s:
            self._in_grace = self._in_grace if self._peak_s else in_grace
            self._peak_s, self.run = max(self._peak_s, latency_s), self.run + 1
            if min(latency_s, gap_s) < OUTLIER_RATIO * self._typical_s:  # queued behind, served as usual
                self._count()
        else:
            if self._peak_s:
                self._count()  # drained
            self._peak_s, self._counted = 0.0, False
            self.run = self.run + 1 if draining else 0
            self._typical_s += TYPICAL_MEMORY * (latency_s - self._typical_s)

    def drain_s(self, rate_hz: float) -> float:
        """How long the backlog behind the latest latency takes to drain, if no other outlier
        comes (0: no burst going on): its wait over the typical latency, emptied at ``1 -
        utilisation`` of real time; inf where the queue does not drain."""
        if not self.run:
            return 0.0
        rho = rate_hz * self._typical_s
        return max(self._previous_s - self._typical_s, 0.0) / (1.0 - rho) if rho < 1.0 else math.inf

    def late_ahead(self, rate_hz: float, target_s: float) -> float:
        """The inputs the backlog behind the latest latency makes late as it drains, if no other
        outlier comes (0: no burst going on): each waits ``(1 - utilisation) / rate_hz`` less than
        the one before, so near saturation a small backlog makes many; inf where it never drains."""
        if not self.run:
            return 0.0
        rho = rate_hz * self._typical_s
        return max(self._previous_s - target_s, 0.0) * rate_hz / (1.0 - rho) if rho < 1.0 else math.inf

    def count_going(self) -> None:
        """The backlog going is a burst from now on, at its size so far: a move away cuts it short
        and its end, which would count it, is never seen at this point."""
        if self._peak_s:
            self._count()

    def _count(self) -> None:
        b = self.bursts
        if not self._in_grace:
            self.bursts = replace(b, events=b.events + (not self._counted),
                                  excess=max(b.excess, self._peak_s / self._typical_s - 1.0))
        self._counted = True


@dataclass(frozen=True)
class Measured:
    """A window's service times and queue, recovered from latencies and finish times."""

    service_mean_s: float
    service_var_s2: float
    jitter_ratio: float  # service-time percentile / mean (>= 1)
    shape: QueueShape


def service_times_s(finish_s: np.ndarray, latency_s: np.ndarray) -> np.ndarray:
    """Each inference's service time (the first one's latency: an upper bound, its wait is not
    known)."""
    gaps = np.diff(finish_s, prepend=-math.inf)
    return np.minimum(latency_s, np.where(gaps > 0, gaps, latency_s))


def typical_service_s(service_s: np.ndarray) -> np.ndarray:
    """``service_s`` without its outliers (at least OUTLIER_RATIO x the mean of the others) where
    the window is too short to show their share (``tail_share_seen``'s rule): there one outlier
    weighs its share of the window (1 in 12), not the rate it comes at, which BurstMeter prices
    over every inference. In the mean and spread, one 5x outlier in a first window of 12 made MAXN
    look 1.5x slower and every point miss (nx_rate_changes@10: 3 s held at MAXN). A two-speed
    spread (a neighbour's frame every other inference) is no outlier: its mean is both speeds'."""
    if len(service_s) * TAIL_SHARE >= _MIN_TAIL_SAMPLES:
        return service_s  # long enough: a heavy tail is the point's, as measured
    kept = np.ones(len(service_s), dtype=bool)
    while True:  # the mean of those kept falls with each outlier dropped: a fixed point
        now = service_s < OUTLIER_RATIO * float(service_s[kept].mean())
        if np.count_nonzero(now) < _MIN_SAMPLES or (now == kept).all():
            return service_s[kept]
        kept = now


def measure(finish_s: np.ndarray | None, latency_s: np.ndarray, percentile: float, rate_hz: float,
            previous: QueueShape = QueueShape()) -> Measured:
    """Service times, their spread and the arrivals' from one window at one point, and the tail
    measured there against the model's (``wait_scale``); the shape moves from ``previous``
    towards this window's by ``SHAPE_MEMORY`` (the first windows: their mean).
    ``finish_s`` None: latencies taken as service times (nothing known about waiting)."""
    if finish_s is None or len(latency_s) < _MIN_SAMPLES:
        mean = float(latency_s.mean())
        return Measured(mean, float(latency_s.var()),
                        max(1.0, float(np.percentile(latency_s, percentile)) / mean), previous)
    order = np.argsort(finish_s, kind="stable")
    finish_s, latency_s = finish_s[order], latency_s[order]
    service = typical_service_s(service_times_s(finish_s, latency_s))
    mean = float(service.mean())
    jitter = max(1.0, float(np.percentile(service, percentile)) / mean)
    arrival_s = finish_s - latency_s
    gaps = np.diff(np.sort(arrival_s))
    arrival_scv = float(gaps.var() / gaps.mean() ** 2) if gaps.mean() > 0 else 0.0
    step = max(1.0 / (previous.windows + 1), SHAPE_MEMORY)
    shape = replace(previous, windows=previous.windows + 1,
                    service_scv=previous.service_scv + step * (float(service.var()) / mean ** 2 - previous.service_scv),
                    arrival_scv=previous.arrival_scv + step * (arrival_scv - previous.arrival_scv),
                    self_paced=_self_paced(arrival_s, finish_s, mean))
    # Learned at the percentile and, in a window long enough to show it, at the tail
    # percentile (queueing stretches the far tail most, and not by the same factor).
    scales = []
    for q, before in ((percentile, previous.wait_scale), (tail_percentile(percentile), previous.tail_wait_scale)):
        seen = _seen_wait_ratio(service, latency_s, rate_hz, shape, q) \
            if len(latency_s) * (1.0 - q / 100.0) >= _MIN_TAIL_SAMPLES else None
        scales.append(before if seen is None else before + step * (seen - before))
    shape = replace(shape, wait_scale=scales[0], tail_wait_scale=scales[1])
    return Measured(mean, float(service.var()), jitter, shape)


def rate_change_at(arrival_s: np.ndarray, min_samples: int, rel: float) -> float | None:
    """Where the input rate moved within a window of arrivals: the first arrival at the new rate,
    once ``min_samples`` arrivals show it; None: no move beyond ``rel`` (a fraction either way)
    that the gaps' own spread cannot explain. A window spanning a change averages both rates
    (15 -> 60 Hz creeps up over its whole length) and its gaps look irregular to the queue model:
    from the split that best fits two rates (two exponential means), only the new one is kept."""
    t = np.sort(arrival_s)
    gaps = np.diff(t)
    n, m = len(gaps), min_samples - 1  # each side: at least min_samples arrivals
    if m < 1 or n < 2 * m or not (gaps > 0).all():
        return None
    cum = np.cumsum(gaps)
    k = np.arange(m, n)  # gaps before the split; the best one may leave too few after it yet
    before, after = cum[k - 1] / k, (cum[-1] - cum[k - 1]) / (n - k)
    i = int(np.argmax(-k * np.log(before) - (n - k) * np.log(after)))
    split, shift = int(k[i]), abs(math.log(after[i] / before[i]))
    if n - split < m:  # the new rate not shown by min_samples yet (kept, the window would mix both)
        return None
    old = gaps[:split]
    # Four standard errors of the new mean's log (the best of many splits), from the old gaps' spread.
    noise = 4.0 * math.sqrt(float(old.var()) / float(old.mean()) ** 2 * (1.0 / split + 1.0 / (n - split)))
    # A burst of slow inferences where frames are dropped while busy stretches a few gaps and moves
    # the mean: the median of each side moves only with the rate (test_verdicts: a 5x burst of 4).
    typical = abs(math.log(float(np.median(gaps[split:])) / float(np.median(old))))
    return float(t[split]) if min(shift, typical) > max(math.log1p(rel), noise) else None


def _self_paced(arrival_s: np.ndarray, finish_s: np.ndarray, service_mean_s: float) -> bool:
    """Most inputs arrived the moment the previous inference finished: neither idle before it
    (open-loop arrivals at low load) nor waiting behind it (a queue)."""
    issued_after_s = np.abs(arrival_s[1:] - finish_s[:-1])
    return bool(np.mean(issued_after_s <= SELF_PACED_REL * service_mean_s) >= SELF_PACED_SHARE)


def _seen_wait_ratio(service_s: np.ndarray, latency_s: np.ndarray, rate_hz: float, shape: QueueShape,
                     percentile: float) -> float | None:
    """Measured waiting at ``percentile`` / Kingman's, within [1, MAX_WAIT_SCALE]; None where
    waiting does not show in the measured tail (nothing to learn from)."""
    mean = float(service_s.mean())
    service_tail_s = float(np.percentile(service_s, percentile))
    wait_s = waiting_percentile_s(mean, rate_hz, shape, percentile)
    measured_s = float(np.percentile(latency_s, percentile))
    visible = measured_s > service_tail_s * (1.0 + VISIBLE_WAIT_REL) or mean + wait_s >= service_tail_s
    if not (visible and 0.0 < wait_s < math.inf):
        return None
    return float(min(max((measured_s - mean) / wait_s, 1.0), MAX_WAIT_SCALE))
