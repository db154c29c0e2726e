"""Everything the governor has learned, in one place: how long each kind of move takes to settle
(moves.py), the verdicts on each point under the current workload and mix of streams
(findings.py, verdicts.py), and the calibration of the shared power model and of each stream's
latency predictor from the windows measured at each point."""

from __future__ import annotations

import math
from dataclasses import dataclass
from typing import Callable, Mapping

import numpy as np

from edge_roofline.platforms.base import OperatingPoint
from edge_roofline.roofline.devices import DeviceSpec

from .config import GovernorConfig
from .findings import Findings, MixMemory
from .joint import JointEnergy, contention, stream_loads, uncontended
from .moves import DOMAINS, SettleTimes
from .policy import MAX_UTILISATION
from .queueing import TAIL_SHARE, service_times_s, tail_share_seen
from .streams import PowerWindow, Stream, StreamWindow
from .verdicts import margin_missed, over_promise, pooled_miss, tail_exceeded


@dataclass(frozen=True)
class Readings:
    """What one step reads at the current point: the verdicts on it and the calibration there are made from these."""

    config: GovernorConfig
    point: OperatingPoint  # the current point
    now_s: float
    active: list[Stream]  # the streams publishing: the constraint set
    windows: Mapping[str, StreamWindow | None]  # per stream, its judging window (None: not enough samples yet)
    # Per stream, its judging window or, short of one, enough samples for a mean (Stream.calibration_window).
    cal_windows: Mapping[str, StreamWindow | None]
    power_w: float = math.nan  # the module's mean power over the window (NaN: no reading)

    @classmethod
    def read(cls, config: GovernorConfig, point: OperatingPoint, now_s: float, streams: list[Stream],
             power: PowerWindow) -> Readings:
        """Every stream's windows at ``now_s`` (None where it has too few samples) and ``power``'s mean."""
        active = [s for s in streams if s.active]
        windows = {s.name: s.window(now_s, config.window_s, config.min_window_samples, config.rate_change_rel)
                   for s in streams}
        # A mean needs fewer samples than a percentile: a slower stream calibrates on fewer samples.
        one_full = any(w is not None for w in windows.values())
        cal_windows = {s.name: windows[s.name] or (s.calibration_window(s.config.calibration_samples(
            config.min_calibration_samples), config.dwell_s) if one_full else None) for s in streams}
        return cls(config, point, now_s, active, windows, cal_windows, power.mean_w(now_s - config.window_s))


class Learned:
    def __init__(self, config: GovernorConfig, device: DeviceSpec | None, now_s: float) -> None:
        self.settle = SettleTimes({"cpu": config.settle_cpu_s, "cores": config.settle_cores_s,
                                   "gpu": config.settle_gpu_s, "emc": config.settle_emc_s,
                                   "preset": config.settle_preset_s}, config.settle_s)
        self.findings = Findings(config.verdict_ttl_s)  # under the current workload and mix of streams
        self.mixes = MixMemory()
        self.energy = JointEnergy(device)
        self.calibrated_here: set[str] = set()  # streams calibrated at the current point since the move
        self.calibrated_in_mix: set[str] = set()  # ... since the mix of streams last changed
        self.last_calibration_s = now_s
        # Points moved to as probes (rules.Dominance.probes) under the current model: a probe
        # identifies how the model's latency moves along an axis, which a new input rate, mix
        # or verdict does not change; only a new model (or a new target) probes again.
        self.probed: set[str] = set()
        self.probe_candidates: frozenset[str] = frozenset()
        # The current point's percentile reads over a limit, no miss of it shown (judge): measured on.
        self.margin_unsure = False
        self._miss_fed: dict[str, float] = {}  # stream: its first sample at the stay whose miss it learned

    def measured_here(self, active: list[Stream], here_s: float, window_s: float) -> bool:
        """The current point (held ``here_s`` since its move settled) has been measured: every
        active stream calibrated here, or, when a slow stream has not filled its window within
        ``window_s``, the others. (A point left as soon as the fastest stream is measured would
        teach the slow one's predictor nothing.) Not while its percentile reads over a limit with
        no evidence of a miss (judge): it is measured on, up to the dwell, until one shows or the
        reading falls under the limit (agx_l2_bound: ruled near on 13 samples, 1.51 ms, 1.48
        over the run, limit 1.49; the governor settled one step dearer, 1.056 x oracle)."""
        if self.margin_unsure:
            return False
        if all(s.name in self.calibrated_here for s in active):
            return True
        return bool(self.calibrated_here) and here_s >= window_s

    def surprised(self, streams: list[Stream], slower: bool) -> Findings:
        """The work of ``streams`` changed unannounced: their models and the power model half
        forget; returns the verdicts the change leaves standing."""
        for s in streams:
            s.predictor.forget(0.5)
        self.energy.forget(0.5)
        return self.findings.unchanged_by(slower)

    def mix_changed(self, changed: Stream, active: list[Stream]) -> Findings:
        """``changed`` started or stopped: the current findings are kept for the mix before;
        returns those of the mix now (none if it was never seen). Nothing is calibrated in it."""
        now = frozenset((s.name, s.model_id) for s in active)
        self.calibrated_here.clear()
        self.calibrated_in_mix.clear()
        return self.mixes.switch(now ^ {(changed.name, changed.model_id)}, now, self.findings)

    def calibrate(self, here: Readings, unvisited: bool, power: PowerWindow,
                  surprised: Callable[[list[Stream], bool, float], None], rate_changed: Callable[..., None]) -> None:
        """Each measured window (``here.cal_windows``) feeds its stream's predictor (the contention it
        saw taken out) and, once every active stream has one, the shared power model. ``unvisited``:
        the point had not been measured under this workload before the move to it. ``power``: its
        readings (a phase stream's busy share, power_rate_hz). ``surprised(streams, slower,
        since_s)``: their work changed unannounced, shown by the samples since ``since_s``;
        ``rate_changed(changed_s=)``: an input rate moved far enough to re-rank the points, at
        the latest when the window showing it began."""
        config, point, now_s, active, windows = here.config, here.point, here.now_s, here.active, here.cal_windows
        measured = [s for s in active if windows[s.name] is not None]
        first_here = any(s.name not in self.calibrated_here for s in measured)
        # A rate moved: at once (the points are re-ranked at the new rate as soon as it shows).
        due = first_here or any(s.rate_shifted for s in measured)
        if not measured or (not due and now_s - self.last_calibration_s < config.calibration_interval_s):
            return
        self.last_calibration_s = now_s
        loads = stream_loads(point, [(s, windows.get(s.name)) for s in active])
        stretches = dict(zip((s.name for s in active), contention(loads)[0]))
        gpu_s = {load.name: load.gpu_time_s for load in loads}
        observed = []
        for s in measured:
            w = windows[s.name]
            lat, rate_hz = w.latencies_s, w.rate_hz
            service = s.measure_service(w)  # the waiting in its queue is the queue model's
            mean = uncontended(service.service_mean_s, gpu_s[s.name], stretches[s.name])
            expected = s.predictor.predict(point, rate_hz)
            before = expected.latency_s
            if s.name not in self.calibrated_here and unvisited:
                # The first window at a point: how wrong the model was where it had not looked.
                s.model_rel_error = 0.5 * s.model_rel_error + 0.5 * abs(mean / before - 1)
            # The work changed: a window far from the prediction, beyond the model's own
            # uncertainty, where the model has looked (at a point it had not measured the gap is
            # its error; in a stream's first window under a new mix, the contention model's).
            elif s.name in self.calibrated_in_mix and s.predictor.observations >= 3 and abs(
                    mean - before) > surprise_s(config, expected):
                surprised([s], mean > before, float(w.finish_s[0]))
            last_rate = s.ranked_rate_hz
            if s.rate_shifted or rate_moved(s, rate_hz, config.rate_change_rel):
                s.rate_shifted = False
                rate_changed(changed_s=float(w.finish_s[0]))  # the energy ranking moves with the rate
                last_rate = None
            s.calibrated_rate_hz = rate_hz
            s.ranked_rate_hz = last_rate or rate_hz
            s.predictor.update(point, mean, input_rate_hz=rate_hz, samples=len(lat),
                               latency_var_s2=service.service_var_s2)
            observed.append((s.predictor, mean, power_rate_hz(s, w, power, now_s) or rate_hz))
        self.calibrated_here.update(s.name for s in measured)
        self.calibrated_in_mix.update(s.name for s in measured)
        self.findings.measured.add(point.name)
        # Power is every active stream's. A slow stream (15 Hz) fills its window long after a
        # fast one, usually after an exploration has moved on: its share is then its predicted
        # latency at its last rate, so every visited point still teaches the power model.
        for s in active:
            if windows[s.name] is None:
                solo = s.predictor.predict(point)
                if not math.isfinite(solo.latency_s):
                    return  # nothing known about its share (learned by measuring, none yet)
                observed.append((s.predictor, solo.latency_s, solo.input_rate_hz))
        self.energy.update(point, here.power_w, observed)

    def _learn_from_miss(self, point: OperatingPoint, active: list[Stream], missing: list[Stream]) -> None:
        """A miss is escaped after the few samples that show it, before a window fills: those
        samples still say how slow the point is. Each stream not calibrated here feeds them to
        its predictor (their mean, the others' contention taken out), or the model, unchanged,
        ranks the next point that slow as promising and the same miss comes again."""
        for s in missing:
            # once per stay (a point nowhere beats is held, missing, step after step)
            if s.name in self.calibrated_here or self._miss_fed.get(s.name) == s.latencies[0][0] or (
                    served := miss_service(point, active, s)) is None:
                continue
            self._miss_fed[s.name] = s.latencies[0][0]
            s.predictor.update(point, served[0], samples=served[2], latency_var_s2=served[1])

    def _served_slower(self, config: GovernorConfig, point: OperatingPoint, active: list[Stream], s: Stream) -> bool:
        """A miss at a point measured to meet was served slower than predicted there (as calibrate
        tells a change of work): not where the service is as predicted and only the waiting grew, a
        queue behind an input rate risen past what the point sustains (calibrate re-ranks the points
        at it); forgetting the models then made every point unknown (nx_rate_changes_p30@19, 15 -> 60 Hz:
        latency std 12 ms at the cheaper point, never tried, 1.073 x oracle). Too few samples to tell: slower."""
        first_late_s = min((t for t, v in s.latencies if v > s.config.target_latency_s), default=-math.inf)
        served = miss_service(point, active, s, first_late_s)
        expected = s.predictor.predict(point)
        return served is None or served[0] - expected.latency_s > surprise_s(config, expected)

    def judge(self, here: Readings, gpu_utilisation: float, unbeatable: set[str],
              surprised: Callable[[list[Stream], bool, float], None],
              counted_from_s: float = -math.inf, held_s: float = 0.0) -> dict[str, float]:
        """The verdicts on the current point from the samples judged there; returns, per stream
        that misses with evidence, its measured percentile over its limit. ``gpu_utilisation``:
        the streams' GPU time per second there, together (its prediction).
        ``unbeatable``: points with nowhere faster to go; ``surprised`` as in calibrate.
        ``counted_from_s``: late inferences count from then on (before, a change's grace: waiting
        for more samples costs nothing counted, and the streams' misses are not pooled).
        ``held_s``: since the move to the point."""
        config, point, now_s, active = here.config, here.point, here.now_s, here.active
        windows, cal_windows = here.windows, here.cal_windows
        # An escape shows no sooner than its quickest domain settles: a burst whose backlog drains sooner is waited out.
        escape_s = min(self.settle.domain_s(d) for d in DOMAINS if d != "preset")
        self.margin_unsure = False
        pooled = set() if point.name in self.findings.met or now_s < counted_from_s else \
            pooled_miss({s.name: s.over() for s in active}, {s.name: s.config.percentile for s in active})
        violations = {s.name: v for s in active if (v := s.violation(
            s.limit_s(config.margin), config.min_window_samples, escape_s, s.name in pooled,
            s.late_budget(now_s, config.late_window_s))) is not None}
        if violations:
            # Resting on a run the move away cuts short (a burst or a level: its end is never
            # seen), the verdict ages from the judging window and tells no change of work (a
            # heavier one shows at the next measured point: calibrate).
            burst = all(s.cut_burst(config.min_window_samples) for s in active if s.name in violations)
            if point.name in self.findings.met and not burst:
                # A point measured to meet every target misses now: the work got heavier.
                missing = [s for s in active if s.name in violations and self._served_slower(config, point, active, s)]
                if missing:
                    surprised(missing, True, min(s.latencies[0][0] for s in missing))
            if not burst:  # a heavier work may show here first (streams.uncount_since)
                for s in active:
                    if s.name in violations:
                        s.note_miss(now_s)
            # It rules out every point it dominates; itself too, unless nowhere is faster (the
            # choice never drops an unbeatable point).
            self.findings.missed.rule_out(point.name, now_s, config.window_s if burst else None)
            self.findings.missed_once.add(point.name)
            self.findings.met.discard(point.name)
            self.findings.near.discard(point.name)  # held no more when its verdict expires
            self._learn_from_miss(point, active, [s for s in active if s.name in violations])
            return violations
        if point.name in unbeatable:
            # Held where nowhere is faster, its verdict stands only while the evidence does: a
            # burst there (a neighbour's blip) must not keep every slower point out, nor leave every
            # one doubted (rules.no_faster_than: nothing is faster, so every point is "no faster").
            self.findings.missed.discard(point.name)
            self.findings.missed_once.discard(point.name)
        judged_s = {s.name: s.judged_percentile_s(windows[s.name], cal_windows[s.name]) for s in active}
        # A two-speed spread (a decoder's steps a neighbour's frame stretches) can meet the
        # percentile with more than TAIL_SHARE over the target: that point meets nothing. A point
        # met before loses that verdict on evidence only (verdicts.tail_exceeded): over TAIL_SHARE
        # by chance, it is neither met anew nor dropped.
        tails = [(w.latencies_s, s.config.target_latency_s) for s in active if (w := windows[s.name]) is not None]
        # A point inside the margin (near) is held while its late count over its stays keeps the promise.
        # Every stream's stay is recorded first: any() over the calls would skip those after an over one.
        counts = [self.findings.late_count(point.name, s.name, s.stay, s.stay_samples, s.stay_late)
                  for s in active if s.latencies]
        over = any(over_promise(late, samples) for samples, late in counts)
        if over and point.name in self.findings.near:
            self.findings.near.discard(point.name)
            self.findings.spent.add(point.name)
        if any(tail_exceeded(*tail) for tail in tails):
            self.findings.met.discard(point.name)
            self.findings.near.discard(point.name)
        elif all(tail_share_seen(*tail) <= TAIL_SHARE for tail in tails) and None not in judged_s.values() \
                and gpu_utilisation <= MAX_UTILISATION:
            if all(judged_s[s.name] <= s.config.target_latency_s for s in active):
                # Every target met. A margin missed needs evidence (verdicts.margin_missed: a
                # percentile of a few samples over the limit is none): a reading over the limit
                # without it is no verdict yet, the point is measured on (measured_here).
                near = any(margin_missed(judged_on.latencies_s, s.limit_s(config.margin), s.config.percentile)
                           for s in active for judged_on in [windows[s.name] or cal_windows[s.name]])
                self.margin_unsure = not near and any(judged_s[s.name] > s.limit_s(config.margin) for s in active)
                # Measured on for the whole dwell, the reading over the dwell's samples is the verdict
                # (ms_thor_two@14: p95 1.15 ms over 88 samples, limit 1.14, 9 over; left unjudged, the
                # point was never chosen again and the governor settled dearer, 1.116 x oracle).
                if self.margin_unsure and held_s >= config.dwell_s:
                    near, self.margin_unsure = True, False
                if near:  # one verdict per point, the latest
                    self.findings.met.discard(point.name)
                    if over:
                        self.findings.spent.add(point.name)
                    elif point.name not in self.findings.spent:
                        self.findings.near.add(point.name)
                elif not self.margin_unsure:
                    self.findings.met.add(point.name)
                    self.findings.near.discard(point.name)
        return violations


def surprise_s(config: GovernorConfig, expected) -> float:
    """How far a measured mean service time may be from ``expected`` (a ``Prediction``) before the
    work is taken to have changed: beyond the model's own uncertainty."""
    return max(config.workload_change_rel * expected.latency_s, 3.0 * expected.latency_std_s)


def miss_service(point: OperatingPoint, active: list[Stream], s: Stream,
                 since_s: float = -math.inf) -> tuple[float, float, int] | None:
    """``s``'s samples since the move (finished from ``since_s`` on), waiting taken out (a point
    too slow for its input period queues), the others' contention too: (mean s, variance s^2,
    count); None under two. The first one's wait is not known (it may have queued behind the
    move's own inferences): it is taken as no longer than the longest of the others'. Their mean,
    not a median: a stream another one contends with every other frame runs at two speeds."""
    w = s.calibration_window(2)
    kept = w.finish_s >= since_s if w is not None else None
    if kept is None or kept.sum() < 2:
        return None
    loads = stream_loads(point, [(o, None) for o in active])
    stretch = dict(zip((o.name for o in active), contention(loads)[0]))[s.name]
    gpu_s = next(load.gpu_time_s for load in loads if load.name == s.name)
    order = np.argsort(w.finish_s[kept], kind="stable")
    service = service_times_s(w.finish_s[kept][order], w.latencies_s[kept][order])
    service[0] = min(service[0], service[1:].max())
    return uncontended(float(service.mean()), gpu_s, stretch), float(service.var()), len(service)


def rate_moved(s: Stream, rate_hz: float, rel: float) -> bool:
    """``s``'s measured rate is over ``rel`` from the one the points are ranked at. Decode steps
    come in bursts, one per answer: their window's rate says where it fell in an answer (8 to
    170 Hz on one load), not the load. The engine's request rate is the prefill stream's."""
    return s.ranked_rate_hz is not None and s.config.phase != "decode" and abs(rate_hz / s.ranked_rate_hz - 1) > rel


def power_rate_hz(s: Stream, window: StreamWindow, power: PowerWindow, now_s: float) -> float | None:
    """A language model's phase comes in bursts: the power window's mean holds as much of
    them as finished within it, so its busy share is those over the time it covers (the
    window's own rate is the rate inside a burst). None: no phase stream, or no reading."""
    if not s.config.phase or window.finish_s is None or not now_s > power.first_s:
        return None
    return float((window.finish_s >= power.first_s).sum()) / (now_s - power.first_s)
