"""When a point is judged to miss its target, and for how long that verdict holds.

A verdict needs evidence: the samples judged are those that started after the point settled
(moves.py), misses in one burst (no more than BURST_GAP_SAMPLES on-time samples between them)
count as one event once the burst has ended, and the point misses when those events are more
than the percentile allows -- beyond chance (a binomial test) or, over a full window, in count.
A burst (a transient, a neighbour's blip) is then told from a tail (misses spread over the
window) and from a level (every sample late: a run still going counts every sample).

A verdict ages: a point ruled out is tried again after ``ttl_s`` (doubling each time it misses
again), when the predictions say it would save energy. A run of misses of a burst still going
after the point was seen meeting, whose backlog drains before an escape could show, is no
verdict while chance explains it (``burst_going``); beyond chance -- the run may be a level, the work
got much heavier -- the verdict is taken at once (``cut_burst``), but the move away cuts the run
short, so whether it was a burst is never seen there: that verdict ages from the judging window
instead and is not read as a change of the work (learned.py); a point ruled out by a burst is
tried again within its phase. The point with nowhere faster to go is
never ruled out (``Misses.rule_out`` is not called for it: core.py). Where several streams'
runs of misses are going at once at a point not measured to meet, outside a change's grace,
each sample waited for costs a late one in each of them: their evidence is pooled (``pooled_miss``).

Finding a miss costs late inferences: those inside the move's transient, the ones that show it
and those inside the transient of the move back. A stream's target promises at most TAIL_SHARE
of its inferences over any ``late_window_s`` late, so a move the model does not predict to meet
every target (an exploration that may miss) is made only while every active stream that may
miss there has a late budget (what it may still have late, ``Stream.late_budget``) that covers
what a miss would cost it (``miss_cost``). An axis probe (policy.py: one step down an axis the
measurements have not isolated) predicted to draw no less power than the point held (known to
meet) buys only information: its late inferences are not paid from that budget, which must also
cover the held point's own tail and bursts later in the window; it is made only while its
misses would fall in a change's grace.
"""

from __future__ import annotations

import math
from dataclasses import dataclass
from typing import Mapping, Sequence

import numpy as np

from .policy import JointPrediction
from .queueing import TAIL_SHARE, tail_share_seen

MIN_EVENTS = 2  # miss events that can show a miss (one is chance, whatever the window)
ALPHA = 0.01  # chance a point that meets its percentile shows this many misses: below it, a miss
BURST_GAP_SAMPLES = 2  # on-time samples between two misses of one burst, at most
MAX_STRIKES = 4  # the verdict's age doubles per repeated miss, up to 2 ** MAX_STRIKES


def miss_events(over: Sequence[bool], cut: bool = False) -> int:
    """The misses in ``over`` (each sample over its target, in order), a burst that has ended
    counting once and a run still going counting every sample (``cut``: once, as a run a move
    away ends)."""
    events, run, gap = 0, 0, 0
    for late in over:
        if late:
            run, gap = run + 1, 0
        elif run:
            gap += 1
            if gap > BURST_GAP_SAMPLES:
                events, run, gap = events + 1, 0, 0
    if run:
        events += 1 if gap or cut else run  # ended (on-time samples after it) or still going
    return events


def binomial_tail(k: int, n: int, p: float) -> float:
    """P(X >= k) for X ~ Binomial(n, p)."""
    if k <= 0:
        return 1.0
    if p <= 0:
        return 0.0
    if p >= 1:
        return 1.0
    log_p, log_q = math.log(p), math.log1p(-p)
    total = 0.0
    for i in range(k, n + 1):
        term = math.exp(math.lgamma(n + 1) - math.lgamma(i + 1) - math.lgamma(n - i + 1) + i * log_p + (n - i) * log_q)
        total += term
        if term < 1e-12 * total:
            break
    return min(total, 1.0)


def misses_target(over: Sequence[bool], percentile: float, full_window: int, cut: bool = False) -> bool:
    """The samples ``over`` (each over its target or not, in order, all started after the point
    settled) show that the point misses its ``percentile``: at least two events, more than
    chance allows or, over ``full_window`` samples or more, more than the percentile allows.
    A run still going at the end (a backlog draining) shows a miss alone when it is more late
    ones than the stream's promise, at most TAIL_SHARE late, allows by chance: a point near
    saturation is left after the few in a row that break it, not after the many the percentile
    allows in a long window (agx_saturated@seed27: 40 late in a row at n = 690, then 26).
    ``cut``: a run still going counts once (miss_events), as one that ended."""
    allowed = 1.0 - percentile / 100.0
    events = miss_events(over, cut)
    if events < MIN_EVENTS:
        return False
    n = len(over)
    running = 0 if cut else trailing_run(over)
    return binomial_tail(events, n, allowed) < ALPHA or binomial_tail(running, n, min(allowed, TAIL_SHARE)) < ALPHA \
        or (n >= full_window and events > allowed * n)


def pooled_miss(overs: Mapping[str, Sequence[bool]], percentiles: Mapping[str, float]) -> set[str]:
    """The streams (of ``overs``: each one's samples judged at a point not measured to meet, over
    its target or not, in order) whose misses pooled show the point misses: waiting for one more
    sample costs a late inference in every stream whose run of misses is still going there, so
    the evidence is counted over them together, each a sample of the same point -- at least
    MIN_EVENTS events, more than chance allows a point meeting the most lenient of their
    ``percentiles``. Empty unless two or more streams' runs are going (ms_nx_two_p30: the
    classifier and the detector late at once after a step down) and one of them has two samples
    or more: a first sample's wait is not known, and an escape on first samples alone leaves the
    model blind to how slow the point is (Learned._learn_from_miss feeds it from two), and the
    escape's choice with it (ms_thor_two@seed14: 1.045 -> 1.10 x oracle)."""
    going = [name for name, over in overs.items() if trailing_run(over)]
    if len(going) < 2 or max(len(overs[name]) for name in going) < 2:
        return set()
    events = sum(miss_events(overs[name]) for name in going)
    allowed = max(1.0 - percentiles[name] / 100.0 for name in going)
    shown = events >= MIN_EVENTS and binomial_tail(events, sum(len(overs[n]) for n in going), allowed) < ALPHA
    return set(going) if shown else set()


def trailing_run(over: Sequence[bool]) -> int:
    """The misses in a row at the end of ``over`` (a run still going; 0: the last was on time)."""
    return len(over) - next((i + 1 for i in range(len(over) - 1, -1, -1) if not over[i]), 0)


def tail_exceeded(latency_s: np.ndarray, target_s: float) -> bool:
    """``latency_s`` (a window, in order) shows more than TAIL_SHARE over ``target_s`` beyond
    chance (queueing.tail_share_seen's count, a binomial test at ALPHA): a 1 % share is a few
    samples in a window, and a point with 0.6 % late shows 4 in 300 about one window in ten."""
    share, n = tail_share_seen(latency_s, target_s), len(latency_s)
    return share > TAIL_SHARE and binomial_tail(round(share * n), n, TAIL_SHARE) < ALPHA


def margin_missed(latency_s: np.ndarray, limit_s: float, percentile: float) -> bool:
    """``latency_s`` (the samples a point is judged on) show its ``percentile`` over ``limit_s``
    (target x (1 - margin)) beyond chance: more samples over it than a point whose percentile is
    at the limit shows but for ALPHA (binomial test). Over a window of 13 the 95th percentile is
    its top sample or two: a point at the limit reads over it about every other window
    (agx_l2_bound: 1.51 ms over 13 samples, 1.48 ms over the run, limit 1.49 ms)."""
    over = int(np.count_nonzero(np.asarray(latency_s) > limit_s))
    return binomial_tail(over, len(latency_s), 1.0 - percentile / 100.0) < ALPHA


def over_promise(late: int, samples: int) -> bool:
    """``late`` of ``samples`` (a point's stays inside the margin) are more than the stream's
    promise allows: at least MIN_EVENTS and over TAIL_SHARE of them. The margin is a proxy for
    the promise; inside it the count rules (ms_thor_two: p95 1.186 ms, target 1.2, 2.6 % late)."""
    return late >= MIN_EVENTS and late > TAIL_SHARE * samples


def beyond_chance(over: Sequence[bool], percentile: float) -> bool:
    """More misses in ``over`` (a run still going counting every sample) than chance allows a
    point that meets its ``percentile`` (binomial test, ALPHA): a level, not a burst. Judged at
    the percentile alone, not at TAIL_SHARE as misses_target judges a run still going: this is
    asked only where the burst's backlog drains before an escape could show (Stream.violation)."""
    events = miss_events(over, cut=False)
    return events >= MIN_EVENTS and binomial_tail(events, len(over), 1.0 - percentile / 100.0) < ALPHA


def cut_burst(over: Sequence[bool], percentile: float, full_window: int, backlog: int) -> bool:
    """``over`` (as in misses_target) shows a miss only because the run of misses still going
    at its end counts every sample, a burst's run (within the last ``backlog`` samples: its
    outliers, each at least OUTLIER_RATIO x the typical latency, and the backlog draining
    behind them, BurstMeter.run) after the point was seen meeting (``full_window`` samples or
    more): a move away cuts it short, so it may be a burst as well as a level (the work got
    much heavier) -- its end, which would tell, is never seen at the point."""
    run = trailing_run(over)
    before = len(over) - run
    return (before >= full_window and run <= backlog
            and not misses_target(over, percentile, full_window, cut=True))


def burst_going(over: Sequence[bool], percentile: float, full_window: int, backlog: int) -> bool:
    """``over`` misses only by a burst's run still going (``cut_burst``) with no more misses than
    chance allows (``beyond_chance``): no verdict yet, the run may end. Where the burst's backlog
    drains before an escape could show (the caller checks: Stream.violation), an escape at once
    would save nothing if it is a burst and cost the move back (a transient, an EMC stall); a
    level soon shows beyond chance."""
    return cut_burst(over, percentile, full_window, backlog) and not beyond_chance(over, percentile)


def miss_cost(rate_hz: float, settle_s: float, stall_late: float = 0.0, busy_share: float = 1.0,
              shown: bool = True) -> float:
    """The late inferences of a stream at ``rate_hz`` when a move to a point that misses is made
    and undone: those starting inside both transients (``settle_s`` each: the clocks run at the
    slower point until the move back settles), each move's ``stall_late`` (moves.Stalls), the
    MIN_EVENTS that show it and the one in flight at the escape: there is one only for the
    stream's ``busy_share`` of the time (rate x latency; 1: saturated). A 1 ms inference every
    33 ms is seldom in flight (thor_tight@seed4: two probes cost 3 and 2 late, priced 5.4 and 4.2).
    ``shown`` False: only the transients run at a point that misses (the point moved to meets): no
    miss to show, no escape."""
    return (busy_share + MIN_EVENTS if shown else 0.0) + 2 * (rate_hz * settle_s + stall_late)


def busy_share(mine, rate_hz: float) -> float:
    """The share of the time a stream at ``rate_hz`` has an inference in flight at a point that
    misses (``mine``: its policy.StreamPrediction there, None: unknown, saturated): its
    pessimistic latency there, at least its target (a late one runs longer), per period."""
    if mine is None:
        return 1.0
    return min(1.0, rate_hz * max(mine.latency_s + mine.latency_std_s, mine.target_s))


@dataclass(frozen=True)
class MoveBet:
    """A move the choice would make (selection.py) to a point that may miss: what a miss there would cost each
    stream, out and back, is weighed against its late budget (unaffordable_miss)."""

    pred: JointPrediction  # the point moved to, predicted: whether every stream, and each one, meets its target there
    settle_s: float  # s, each transient (out, back), a preset change's included: inferences in it run at the slower
    clocks_settle_s: float | None = None  # s, settle_s less a preset change's (None: settle_s): a slow stream's window
    domains: frozenset[str] = frozenset()  # those it changes: each stream's learned stall per move of them, paid twice
    safe: frozenset[str] = frozenset()  # points measured to meet every target it is no slower than: any, it meets
    doubted: bool = False  # its "meets" was shown wrong (a point predicted no faster missed): it pays as one that may
    through_miss: bool = False  # its transients run at a point a miss rules out: every stream pays them, out and back
    second_best: bool = False  # the choice fell back to it (a better bet did not pay): none where one was late lately
    held_w: float | None = None  # W, the cheapest point known to meet (probes only): one drawing no less buys nothing


def unaffordable_miss(bet: MoveBet, streams, now_s: float, window_s: float, counted_from_s: float = -math.inf,
                      stay_s: float = 0.0) -> str:
    """Why ``bet`` is not made ("": it is): it may miss (its point is neither predicted to meet every target, a
    "meets" not doubted, nor at least as fast as a point measured to meet them) and one of ``streams``
    (streams.Stream) that may miss there has a late budget (over ``window_s``) short of what a miss would cost it
    from ``counted_from_s`` on (the end of a workload change's grace: late ones before it are the change's).
    ``stay_s``: how long a stream that just joined is expected to stay at least (``Stream.late_budget``).

    A second-best bet is not made where a stream that may miss has had a late inference within ``window_s`` (a
    budget started afresh at a change no longer shows the change's: a second-best bet does not add its miss to
    them). A probe (``held_w`` given: a step down one axis draws less whatever the model predicts) predicted to draw
    no less than the point held is not paid from the budget. Through a miss (each clock at the lower of both
    points' in the transients: rules.Dominance.transient) every stream pays the transients, out and back, where it
    meets at the point moved to as well (ms_agx_slow_actuation@30: cpu576-gpu714-emc2133 -> cpu2202-gpu408-emc3199
    ran at cpu576-gpu408-emc2133, measured 1.10 x the target: 2 late unpaid, then a burst: 1.11 %)."""
    sure = (bet.pred.meets() and not bet.doubted) or bool(bet.safe)
    if sure and not bet.through_miss:
        return ""
    for s in streams:
        mine = bet.pred.stream(s.name)
        meets = sure or (mine is not None and mine.meets() and not bet.doubted)  # with its uncertainty
        if meets and not bet.through_miss:
            continue  # its transients at the slower point, which meets: it pays nothing
        if bet.second_best and not meets and now_s - s.last_late_s < window_s:
            return f"a second-best move that may miss {s.name}, late {now_s - s.last_late_s:.1f} s ago"
        rate_hz = s.rate_hz()
        stall_late = s.stalls.late_per_move(bet.domains)
        busy = busy_share(mine, rate_hz)
        cost = miss_cost(rate_hz, bet.settle_s, stall_late, busy, shown=not meets)
        # The miss's late ones come one period apart from now: those before counted_from_s are not priced (what an
        # exploration makes late in a grace is counted all the same where grace_excuses_exploring is false, core.py).
        counted = min(cost, max(0.0, cost - rate_hz * (counted_from_s - now_s)))
        if counted <= 0:
            continue
        if bet.held_w is not None and bet.pred.power_w >= bet.held_w:
            return f"a probe that saves nothing over the point held may miss {s.name} after the change's grace"
        # A slow stream's window may be too short to hold one miss at TAIL_SHARE: its budget is
        # counted over the shortest window that does (one miss per window, still TAIL_SHARE) --
        # a miss of a move within the preset: a preset change's long transient is paid as it is.
        clocks_settle_s = bet.settle_s if bet.clocks_settle_s is None else bet.clocks_settle_s
        usual = miss_cost(rate_hz, clocks_settle_s, stall_late, busy, shown=not meets)
        window = max(window_s, usual / (TAIL_SHARE * rate_hz)) if rate_hz > 0 else window_s
        budget = s.late_budget(now_s, window, stay_s)
        if budget < counted:
            return (f"{'transients at a point that misses' if meets else 'a miss'} would cost {s.name} "
                    f"{counted:.0f} late inference(s), "
                    f"its late budget is {max(budget, 0.0):.1f}")
    return ""


def held_power_w(preds, current, met: frozenset[str]) -> float | None:
    """The predicted power of the cheapest of ``preds`` and ``current`` (policy.JointPrediction)
    known to meet every target (in ``met``, or ``current`` predicted to meet); None: none is."""
    held = [q.power_w for q in (*preds, current) if q.point.name in met or (q is current and q.meets())]
    return min(held, default=None)


def measured_to_meet(preds, current, findings) -> frozenset[str]:
    """The points of ``preds`` and ``current`` (policy.JointPrediction) held as meeting every target
    whose bursts fit and whose queue is sustainable at the rate now (``sustainable``: measured to meet
    at a lower rate or over a short window, a point 98 % busy is not held: nx_rate_changes_p30@20, 17
    late in one burst): those measured to (``findings.met``), and those inside the margin (near) held
    a dwell (``findings.dwelt_near``, recorded by Findings.record_dwell): the dwell's samples are its
    verdict, its late count keeps the promise, and a move away is a transient for nothing
    (ms_agx_slow_actuation@27: a point ruled near over 90 samples left at once, one late in the
    move, 1.11 %). It stays held after a move away while near (its late count over its stays keeps
    the promise, it missed nothing since): a step down from it that misses escapes back to it, not to
    a dearer point met (agx_host_bound_p30@35: 1 late in 175 there, 1.094 x oracle at the dearer point)."""
    return frozenset(q.point.name for q in (*preds, current) if q.bursts_fit() and q.sustainable() and (
        q.point.name in findings.met or q.point.name in findings.dwelt_near))


def near_bets(preds, met: frozenset[str], findings, hysteresis: float) -> frozenset[str]:
    """The points of ``preds`` (policy.JointPrediction) measured to meet every target inside the
    margin (``findings.near``), none of their inferences late yet, worth a bet on their tail once
    exploring is done: those predicted to draw more than ``hysteresis`` less than the cheapest
    point meeting the margin (``met``, or predicted to). A window's few samples cannot show the
    tail the promise is about (ms_agx_model_switch@15: a near point 6.5 % late, 2.4 % cheaper
    than a met one; ms_thor_two: one late in 14, 2.6 %); a saving worth a move is worth that risk
    (ms_thor_two@12: 11 %, 0.24 % late)."""
    margin_w = min((q.power_w for q in preds if q.point.name in met or q.meets()), default=math.inf)
    clean = findings.near - findings.late_seen()
    return frozenset(q.point.name for q in preds if q.point.name in clean and q.point.name not in met
                     and q.bursts_fit() and q.power_w < (1.0 - hysteresis) * margin_w)


class Misses:
    """Points ruled out by a miss, each until its verdict expires."""

    def __init__(self, ttl_s: float) -> None:
        self.ttl_s = ttl_s
        self._until_s: dict[str, float] = {}
        self._strikes: dict[str, int] = {}  # misses per point since the last forget (the age doubles)

    def rule_out(self, name: str, now_s: float, ttl_s: float | None = None) -> None:
        """``ttl_s``: the verdict's first age, if not ``self.ttl_s`` (it doubles per strike all the same)."""
        strikes = self._strikes.get(name, 0)
        self._strikes[name] = min(strikes + 1, MAX_STRIKES)
        self._until_s[name] = now_s + (self.ttl_s if ttl_s is None else min(ttl_s, self.ttl_s)) * 2 ** strikes

    def expire(self, now_s: float) -> list[str]:
        """Drop the verdicts that have aged out; returns their points."""
        gone = [name for name, until in self._until_s.items() if now_s >= until]
        for name in gone:
            del self._until_s[name]
        return gone

    def discard(self, name: str) -> None:
        self._until_s.pop(name, None)

    def clear(self) -> None:
        self._until_s.clear()
        self._strikes.clear()

    def names(self) -> set[str]:
        return set(self._until_s)

    def __contains__(self, name: str) -> bool:
        return name in self._until_s

    def __bool__(self) -> bool:
        return bool(self._until_s)

    def __iter__(self):
        return iter(list(self._until_s))

    def __eq__(self, other) -> bool:
        return isinstance(other, Misses) and self.names() == other.names()

    def copy(self) -> "Misses":
        out = Misses(self.ttl_s)
        out._until_s, out._strikes = dict(self._until_s), dict(self._strikes)
        return out
