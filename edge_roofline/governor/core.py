"""The governor: measured latency and power in, an operating point out, safety first.

It holds several streams (networks) at once, each with its own latency target; one operating
point must meet every active stream's target at the least module power (streams.py, joint.py).
Time is injected (``clock``; every ``observe_*`` and ``step`` call carries its own timestamp),
so the same core runs on wall time on a robot and on simulated time in tests.
"""

from __future__ import annotations

import math
from typing import Mapping

from edge_roofline.clock import Clock
from edge_roofline.platforms.base import (ApplyError, OperatingPoint, OperatingPointError, Platform,
                                          RebootRequiredError)
from edge_roofline.roofline.model import RooflineAnalysis

from .config import DEFAULT_STREAM, MODES, ConfigError, GovernorConfig
from .decision import Decision, report
from .findings import Findings, MixMemory
from .joint import JointEnergy, contention, predict_candidates, predict_point, stream_loads, uncontended
from .points import candidate_points, catalogue_device
from .policy import MAX_UTILISATION, JointPrediction, choose
from .pointwise import PointwisePredictor
from .predictor import Predictor, RooflineWorkload
from .prior_table import fit_prior_table
from .rules import Dominance
from .safety import SafetyMonitor, StateStore, plausible_latency, plausible_power, recover
from .streams import PowerWindow, Stream, StreamWindow


class Governor:
    def __init__(self, platform: Platform, config: GovernorConfig,
                 model_analysis: RooflineAnalysis | None | Mapping[str, RooflineAnalysis | None], clock: Clock,
                 store: StateStore | None = None) -> None:
        """``model_analysis``: one analysis for every stream, or one per stream name (a stream
        without one waits for its model)."""
        self.platform = platform
        self.config = config
        self.clock = clock
        # Outside the catalogue (NVML) no clock tables carry a roofline between points: they are
        # learned one by one.
        self.device = catalogue_device(platform)
        self.store = store or StateStore(config.state_path or None)
        recover(platform, self.store)
        self.found = platform.current_operating_point()
        self.record_found()
        self.safe_point = self.found
        now = clock.now_s()
        self.safety = SafetyMonitor(config.safety, now)
        self.candidates = candidate_points(platform, config.points)
        self.dominance = Dominance(self.device, self.candidates)
        self.current = self.found
        self.mode = config.mode
        self.streams = {s.name: Stream(s) for s in config.stream_configs}
        self.energy = JointEnergy(self.device)
        self._power = PowerWindow()  # at the current point
        self._last_switch_s = now
        self._last_calibration_s = now
        self._explore_left = config.explore_budget
        # A provisional point (the one found at start, or one being explored) may be left as soon
        # as it has been measured; a point chosen as the best is held for dwell_s.
        self._provisional = True
        self._exploring = False  # the current point is an exploration
        self._descending = False  # ... one step down (choose)
        self._unvisited = True  # the current point had not been measured under this workload
        self._calibrated_here: set[str] = set()  # streams calibrated at the current point since the switch
        self._calibrated_in_mix: set[str] = set()  # ... since the mix of streams last changed
        self.findings = Findings()  # under the current workload and mix of streams
        self._mixes = MixMemory()
        self._apply_failures: dict[str, int] = {}
        self._in_doubt = False  # an apply failed part-way: the files may match no point
        self._seen_any = False  # some stream has published (the first one to start is no change)
        self.switches = 0
        analyses = model_analysis if isinstance(model_analysis, Mapping) else dict.fromkeys(self.streams,
                                                                                           model_analysis)
        unknown = sorted(set(analyses) - set(self.streams))
        if unknown:
            raise ConfigError(f"model analysis for unknown stream(s) {', '.join(unknown)}; "
                              f"streams: {', '.join(self.streams)}")
        for name, stream in self.streams.items():
            if analyses.get(name) is not None or self.device is None:
                self.set_model(analyses.get(name), stream=name)
        if config.prior_table:
            if len(self.streams) > 1:
                raise ConfigError("prior_table describes one model: use it with one stream (no streams list)")
            fit_prior_table(config.prior_table, self.predictor, self.energy, self.device, platform.identity().simulated)

    @property
    def predictor(self) -> Predictor | PointwisePredictor | None:
        """The only stream's predictor."""
        return self._stream(None).predictor

    @property
    def model_id(self) -> str:
        """The first stream's model ("" before it is known)."""
        return next(iter(self.streams.values())).model_id

    @property
    def model_note(self) -> str:
        return next(iter(self.streams.values())).model_note

    # ---- crash recovery ----------------------------------------------------------------
    def record_found(self) -> None:
        """The crash record: the point found and the platform's exact record of it (every cap
        file as found), saved before the first change."""
        self.store.save(self.found, self.platform.found_record())

    # ---- inputs ------------------------------------------------------------------------
    def _stream(self, name: str | None) -> Stream:
        return self.streams[self.config.stream_name(name)]

    def observe_inference(self, latency_s: float, timestamp_s: float, stream: str = DEFAULT_STREAM) -> bool:
        """True: the inference was over its stream's target at a point not known to miss. A caller
        that steps on a timer steps at once: a miss is acted on before the stream's next input
        runs where it missed (and a device that misses everywhere costs no step per inference)."""
        s = self._stream(stream)
        s.note_seen(timestamp_s)
        if not s.active:
            s.active = True
            if self._seen_any:  # the set of streams sharing the device changed
                self._workload_changed(s)
            self._seen_any = True
        if not plausible_latency(latency_s, self.config.safety):
            self.safety.note_implausible(timestamp_s, f"latency {latency_s!r} s"
                                         + (f" of stream {s.name}" if len(self.streams) > 1 else ""))
            return False
        if timestamp_s >= self._last_switch_s + self.config.settle_s:
            s.latencies.append((timestamp_s, float(latency_s)))
        elif self._exploring and timestamp_s - latency_s >= self._last_switch_s:
            # Arrived after a move from a point that met every target (no backlog behind it).
            s.early.append(float(latency_s))
        return latency_s > s.config.target_latency_s and self.current.name not in self.findings.missed

    def observe_power(self, power_w: float, timestamp_s: float, temperatures_c=None, source: str = "") -> None:
        """``source``: where the reading came from, named when it is implausible (a missing rail)."""
        if not plausible_power(power_w, self.config.safety):
            self.safety.note_implausible(timestamp_s, f"power {power_w!r} W" + (f" from {source}" if source else ""))
            return
        self.safety.note_power(timestamp_s, temperatures_c)
        if timestamp_s >= self._last_switch_s + self.config.settle_s:
            self._power.add(timestamp_s, float(power_w))

    # ---- commands ----------------------------------------------------------------------
    def set_target(self, latency_ms: float, percentile: float, stream: str | None = None) -> None:
        """``stream``: its name (None: the only stream; refused when there are several)."""
        self.config = self.config.with_target(latency_ms, percentile, stream)
        for s in self.config.stream_configs:
            self.streams[s.name].config = s
        self._new_target()

    def set_mode(self, mode: str) -> None:
        if mode not in MODES:
            raise ConfigError(f"mode must be one of {', '.join(MODES)}, got {mode!r}")
        self.mode = mode

    def set_model(self, model_analysis: RooflineAnalysis | None, model_id: str = "", note: str = "",
                  stream: str | None = None) -> None:
        """A new model on ``stream`` (None: the only stream). ``model_analysis`` None: no
        roofline for it (a platform outside the catalogue, or a model the governor could not
        load, ``note`` says why): each point is then learned by measuring."""
        s = self._stream(stream)
        if model_analysis is None or self.device is None:
            s.predictor = PointwisePredictor()  # what each point measured was the old model's
        elif isinstance(s.predictor, Predictor):
            s.predictor.set_workload(RooflineWorkload(model_analysis, self.device))
            self.energy.forget(0.3)  # as the predictor's own coefficients (set_workload)
        else:
            s.predictor = Predictor(RooflineWorkload(model_analysis, self.device))
        s.model_id = model_id or (model_analysis.model if model_analysis is not None else "")
        s.model_note = note
        self._new_workload()
        s.latencies.clear()
        self._power.clear()

    def _new_target(self, forget_mixes: bool = True) -> None:
        """What each point measured still holds, but not whether it met the targets:
        exploration starts again."""
        self._explore_left = self.config.explore_budget
        self.findings.forget_verdicts()
        if forget_mixes:
            self._mixes.clear()

    def _new_workload(self, forget_mixes: bool = True) -> None:
        """Model, rate or behaviour changed: exploration starts again, every point unmeasured.
        ``forget_mixes`` False: other mixes' findings are kept (a restored miss is caught as any)."""
        self._new_target(forget_mixes)
        self.findings.measured.clear()

    def _surprised(self, streams: list[Stream], slower: bool) -> None:
        """The work of ``streams`` changed unannounced (another process on the GPU, other input
        content): models half forget, points are unmeasured again, verdicts that still hold stay."""
        for s in streams:
            s.predictor.forget(0.5)
        self.energy.forget(0.5)
        kept = self.findings.unchanged_by(slower)
        self._new_workload(forget_mixes=False)
        self.findings = kept

    def _workload_changed(self, changed: Stream) -> None:
        """``changed`` started or stopped: what the windows hold was another mix of work (the
        findings of a mix seen before come back, findings.py)."""
        now = frozenset((s.name, s.model_id) for s in self.streams.values() if s.active)
        found = self._mixes.switch(now ^ {(changed.name, changed.model_id)}, now, self.findings)
        self._new_workload(forget_mixes=False)
        self.findings = found
        self._clear_windows()
        self._calibrated_here.clear()
        self._calibrated_in_mix.clear()

    def _clear_windows(self) -> None:
        for s in self.streams.values():
            s.latencies.clear()
            s.early.clear()
        self._power.clear()

    def shutdown(self) -> str:
        """Put back what was found at start (the platform's own record: every cap file as found),
        clear the crash record and return the platform's "restored ..." line. A restore that
        fails raises and keeps the crash record, so the next start tries again."""
        restored = self.platform.restore()
        self.current = self.found
        self.store.clear()
        return restored

    # ---- the loop ----------------------------------------------------------------------
    def _expire_streams(self, now_s: float) -> None:
        """A stream silent beyond ``Stream.silence_limit_s`` leaves the constraint set."""
        for s in self.streams.values():
            if s.active and now_s - s.last_seen_s > s.silence_limit_s(self.config.stream_timeout_s):
                s.active = False
                self._workload_changed(s)

    def _apply(self, point: OperatingPoint, now_s: float) -> str:
        """Apply ``point``; '' on success, else the error (the point is counted as failing)."""
        try:
            self.platform.apply(point)
        except (ApplyError, OperatingPointError) as exc:
            fails = self._apply_failures.get(point.name, 0) + 1
            if isinstance(exc, RebootRequiredError):
                fails = self.config.safety.apply_failures_before_disable
            self._apply_failures[point.name] = fails
            self.safety.note_apply_failure(now_s, f"{point.name}: {exc}")
            # Some writes may have gone through: what is in force is no longer known, so the
            # fallback applies the safe point again even where it was the current one.
            self._in_doubt = self._in_doubt or isinstance(exc, ApplyError)
            return f"{type(exc).__name__}: {exc}"
        self._unvisited = point.name not in self.findings.measured
        self.current = point
        self._in_doubt = False
        self.safety.note_switch(now_s)
        self._last_switch_s = now_s
        self._calibrated_here.clear()
        self._clear_windows()
        self.switches += 1
        return ""

    def _joint(self, point: OperatingPoint, active: list[Stream], windows) -> JointPrediction:
        return predict_point(point, [(s, windows[s.name], s.limit_s(self.config.margin)) for s in active], self.energy)

    def _predict_all(self, active: list[Stream], windows) -> list[JointPrediction]:
        """Every candidate, each stream's latency made monotone in the clocks (rules.py)."""
        return predict_candidates(self.candidates, self.dominance,
                                  [(s, windows[s.name], s.limit_s(self.config.margin)) for s in active], self.energy,
                                  self.findings.measured)

    def step(self, now_s: float) -> Decision:
        self._expire_streams(now_s)
        active = [s for s in self.streams.values() if s.active]
        cfg = self.config
        windows: dict[str, StreamWindow | None] = {
            s.name: s.window(now_s, cfg.window_s, cfg.min_window_samples) for s in self.streams.values()}
        # A mean needs fewer samples than a percentile: once another stream has a full window,
        # a slower one calibrates on fewer samples and does not hold every exploration back.
        one_full = any(w is not None for w in windows.values())
        cal_windows = {s.name: windows[s.name] or (s.calibration_window(cfg.min_calibration_samples) if one_full
                                                   else None) for s in self.streams.values()}
        power_w = self._power.mean_w(now_s - cfg.window_s)

        def decision(point, applied, reason, state, pred=None, fallback=False) -> Decision:
            return report(point, applied, reason, state, pred, self.streams.values(), windows, power_w, fallback)

        if self.mode == "off":
            return decision(self.current, False, "mode off", "disabled")
        verdict = self.safety.verdict(now_s)
        if not verdict.ok:
            applied = False
            reason = verdict.reason
            if self.mode == "active" and (self.current != self.safe_point or self._in_doubt):
                error = self._apply(self.safe_point, now_s)
                applied = not error
                reason += f"; safe point {'applied' if applied else 'failed: ' + error}"
            return decision(self.safe_point, applied, reason, "fallback", fallback=True)
        waiting = [s.name for s in active if s.predictor is None]
        if waiting:
            which = f" of {', '.join(waiting)}" if len(self.streams) > 1 else ""
            return decision(self.current, False, f"waiting for the model's roofline{which} (the first "
                            f"InferenceStats.model_id)", "waiting")
        if not active:
            return decision(self.current, False, "no stream is publishing inferences: holding", "waiting")
        self._calibrate(now_s, active, cal_windows, power_w)
        by_name = {q.point.name: q for q in self._predict_all(active, windows)}
        current = by_name.get(self.current.name) or self._joint(self.current, active, windows)
        judged_s = {s.name: s.judged_percentile_s(windows[s.name], cal_windows[s.name]) for s in active}
        violations = {s.name: v for s in active if (v := s.violation(
            windows[s.name], s.limit_s(cfg.margin), cfg.min_window_samples)) is not None}
        if violations:
            if self.current.name in self.findings.met:
                # A point measured to meet every target misses now: the work got heavier.
                self._surprised([self.streams[name] for name in violations], slower=True)
            self.findings.missed.add(self.current.name)
            self.findings.met.discard(self.current.name)
            if self._descending:
                # The model said this step would miss and it did: it is less wrong than its
                # error so far says, so the next steps reach less far.
                for name in violations:
                    self.streams[name].model_rel_error *= 0.5
                self._descending = False
        elif None not in judged_s.values() and current.gpu_utilisation <= MAX_UTILISATION:
            if all(judged_s[s.name] <= s.limit_s(cfg.margin) for s in active):
                self.findings.met.add(self.current.name)
            elif all(judged_s[s.name] <= s.config.target_latency_s for s in active):
                self.findings.near.add(self.current.name)  # every target met, not every margin
        # Measured misses win over predictions: a point that missed, and every point slower in
        # every clock, is out; the fastest point stays (nowhere faster to go).
        fastest = self.dominance.fastest
        out = self.dominance.dominated_by(self.findings.missed) - ({fastest.name} if fastest else set())
        preds = [q for q in by_name.values()
                 if self._apply_failures.get(q.point.name, 0) < self.config.safety.apply_failures_before_disable
                 and q.point.name not in out] or [current]
        fastest_pred = next((q for q in preds if fastest and q.point == fastest), None)
        if not self.energy.has_energy:
            return decision(self.current, False, "calibrating: no energy measured yet", "waiting", current)
        dwell_over = now_s - self._last_switch_s >= self.config.dwell_s or \
            (self._provisional and self._measured_here(now_s, active))
        if not violations and not dwell_over:
            return decision(self.current, False, "dwelling", "holding", current)
        found = self.findings
        choice = choose(preds, current, violations=violations, hysteresis=self.config.hysteresis,
                        explore=self._explore_left > 0, explore_min_rel_std=self.config.explore_min_rel_std,
                        measured=frozenset(found.measured | found.missed), provisional=self._provisional,
                        fastest=fastest_pred, met=frozenset(found.met), step_below=self.dominance.step_below,
                        near=frozenset(found.near), step_above=self.dominance.step_above)
        target = choice.prediction.point
        if target == self.current:
            return decision(target, False, choice.reason, "holding", choice.prediction)
        if self.mode == "advise":
            return decision(target, False, choice.reason, "advising", choice.prediction)
        if not self.safety.may_switch(now_s, abandon=self._exploring and bool(violations)):
            return decision(self.current, False, "rate limit: change deferred", "holding", current)
        error = self._apply(target, now_s)
        if error:
            return decision(self.current, False, f"apply failed: {error}", "holding", current)
        if choice.exploring:
            self._explore_left -= 1
        # An exploration or an escape from a miss is a stopgap: leave it once it is measured.
        self._provisional = choice.exploring or bool(violations)
        self._exploring = choice.exploring
        self._descending = choice.descent
        return decision(target, True, choice.reason, "exploring" if choice.exploring else "switching",
                        choice.prediction)

    def _measured_here(self, now_s: float, active: list[Stream]) -> bool:
        """The current point has been measured: every active stream calibrated here, or, when a
        slow stream has not filled its window within window_s, the others. (A point left as soon
        as the fastest stream is measured would teach the slow one's predictor nothing.)"""
        if all(s.name in self._calibrated_here for s in active):
            return True
        return bool(self._calibrated_here) and now_s - self._last_switch_s >= self.config.window_s

    def _calibrate(self, now_s: float, active: list[Stream], windows, power_w: float) -> None:
        """Each measured window feeds its stream's predictor (the contention it saw taken out)
        and, once every active stream has one, the shared power model."""
        measured = [s for s in active if windows[s.name] is not None]
        first_here = any(s.name not in self._calibrated_here for s in measured)
        if not measured or (not first_here and now_s - self._last_calibration_s < self.config.calibration_interval_s):
            return
        self._last_calibration_s = now_s
        loads = stream_loads(self.current, [(s, windows.get(s.name)) for s in active])
        stretches = dict(zip((s.name for s in active), contention(loads)[0]))
        gpu_s = {load.name: load.gpu_time_s for load in loads}
        observed = []
        for s in measured:
            w = windows[s.name]
            lat, rate_hz = w.latencies_s, w.rate_hz
            service = s.measure_service(w)  # the waiting in its queue is the queue model's
            mean = uncontended(service.service_mean_s, gpu_s[s.name], stretches[s.name])
            expected = s.predictor.predict(self.current, rate_hz)
            before = expected.latency_s
            first_look = s.name not in self._calibrated_here and self._unvisited
            if first_look:
                # The first window at a point: how wrong the model was where it had not looked.
                s.model_rel_error = 0.5 * s.model_rel_error + 0.5 * abs(mean / before - 1)
            # The work changed: a window far from the prediction, beyond the model's own
            # uncertainty, where the model has looked (at a point it had not measured the gap is
            # its error; in a stream's first window under a new mix, the contention model's).
            elif s.name in self._calibrated_in_mix and s.predictor.observations >= 3 and abs(mean - before) > max(
                    self.config.workload_change_rel * before, 3.0 * expected.latency_std_s):
                self._surprised([s], slower=mean > before)
            last_rate = s.calibrated_rate_hz
            if last_rate is not None and abs(rate_hz / last_rate - 1) > self.config.rate_change_rel:
                self._new_workload()  # the energy ranking moves with the rate
            s.calibrated_rate_hz = rate_hz
            s.predictor.update(self.current, mean, input_rate_hz=rate_hz, samples=len(lat),
                               latency_var_s2=service.service_var_s2)
            observed.append((s.predictor, mean, rate_hz))
        self._calibrated_here.update(s.name for s in measured)
        self._calibrated_in_mix.update(s.name for s in measured)
        self.findings.measured.add(self.current.name)
        # Power is every active stream's. A slow stream (15 Hz) fills its window long after a
        # fast one, usually after an exploration has moved on: its share is then its predicted
        # latency at its last rate, so every visited point still teaches the power model.
        for s in active:
            if windows[s.name] is None:
                solo = s.predictor.predict(self.current)
                if not math.isfinite(solo.latency_s):
                    return  # nothing known about its share (learned by measuring, none yet)
                observed.append((s.predictor, solo.latency_s, solo.input_rate_hz))
        self.energy.update(self.current, power_w, observed)
