"""The governor: measured latency and power in, an operating point out, safety first.

It holds several streams (networks) at once, each with its own latency target; one operating
point must meet every active stream's target at the least module power (streams.py, joint.py).
Time is injected (``clock``; each call carries its timestamp): wall time on a robot, simulated in tests.

``step`` is a state machine (states.py: the states, the named transitions and their order). Moving the
board takes time: a sample whose inference started before the last move settled is the move's (moves.py),
a point is judged on evidence and the verdict ages (verdicts.py); what has been learned is in learned.py.
"""

from __future__ import annotations

import math
from typing import Mapping

from edge_roofline.clock import Clock
from edge_roofline.platforms.base import ApplyError, OperatingPoint, OperatingPointError, Platform
from edge_roofline.roofline.model import RooflineAnalysis

from .config import DEFAULT_STREAM, MODES, ConfigError, GovernorConfig
from .decision import Decision, report
from .joint import predict_all
from .learned import Learned, Readings
from .outside import switched_outside, yield_reason
from .moves import Move, domains_changed, unpaid
from .points import candidate_points, catalogue_device
from .policy import JointPrediction
from .prior_table import fit_prior_table
from .rules import Dominance
from .safety import SafetyMonitor, StateStore, plausible_latency, plausible_power, recover
from .states import PROVISIONAL, State, Transition, resumed, unpaid_hold
from .selection import Selection
from .streams import PowerWindow, Stream, clear_windows, returned, silent, uncount_since, uncount_told
from .verdicts import measured_to_meet


class Governor(Selection):
    def __init__(self, platform: Platform, config: GovernorConfig,
                 model_analysis: RooflineAnalysis | None | Mapping[str, RooflineAnalysis | None], clock: Clock,
                 store: StateStore | None = None) -> None:
        """``model_analysis``: one analysis for every stream, or one per stream name (a stream
        without one waits for its model)."""
        self.platform = platform
        self.config = config
        self.clock = clock
        # Outside the catalogue (NVML) no clock tables carry a roofline: points are learned one by one.
        self.device = catalogue_device(platform)
        self.store = store or StateStore(config.state_path or None)
        recover(platform, self.store)
        self.found = platform.current_operating_point()
        self.safe_point = self.found
        now = clock.now_s()
        self.safety = SafetyMonitor(config.safety, now)
        self.candidates = candidate_points(platform, config.points)
        self.dominance = Dominance(self.device, self.candidates)
        self.current = self.found
        self.mode = config.mode
        self.state = State.MEASURING  # the point found at start is a stopgap
        self.streams = {s.name: Stream(s, config.window_s) for s in config.stream_configs}
        self.learned = Learned(config, self.device, now)
        self.move = Move(now, frozenset(), 0.0)  # the last move (none yet: the start, settled)
        self._power = PowerWindow()  # at the current point, once the last move settled
        self._after_settle = State.SETTLED  # where a move that is not an exploration lands once settled
        self._workload_since_s = now
        self._explored_s = math.inf  # the first exploration since the last change where no grace excuses it
        self._counted_from_s = now + config.change_grace_s  # late ones count from then on (a change's grace)
        self._start_grace_s = self._counted_from_s  # a stream first seen later joined a running mix (late_budget)
        self._explore_left = config.explore_budget
        self._descending = False  # the current point is an exploration one step down (choose)
        self._unvisited = True  # the current point had not been measured under this workload
        self._in_doubt = False  # an apply failed part-way: the files may match no point
        self._seen_any = False  # some stream has published (the first one to start is no change)
        self.yielded = ""  # why mode active gave the board up to someone else ("": it did not)
        self.switches = 0
        analyses = config.analyses_by_stream(model_analysis)
        for name, stream in self.streams.items():
            if analyses.get(name) is not None or self.device is None:
                self.set_model(analyses.get(name), stream=name)
        if config.prior_table:  # one stream (GovernorConfig)
            fit_prior_table(config.prior_table, self.predictor, self.energy, self.device, platform.identity().simulated)
        self.record_found()  # once the settings are found good: a start refused leaves no record

    predictor = property(lambda self: self._stream(DEFAULT_STREAM).predictor, doc="The only stream's predictor.")
    model_id = property(lambda self: next(iter(self.streams.values())).model_id,
                        doc='The first stream\'s model ("" before it is known).')
    model_note = property(lambda self: next(iter(self.streams.values())).model_note)
    findings = property(lambda self: self.learned.findings, doc="The verdicts under the current workload.")
    energy = property(lambda self: self.learned.energy, doc="The power model, every stream's.")

    # ---- crash recovery ----------------------------------------------------------------
    def record_found(self) -> None:
        """The crash record (the point found, every cap file as found), saved before the first change."""
        self.store.save(self.found, self.platform.found_record())

    # ---- inputs ------------------------------------------------------------------------
    def _stream(self, name: str | None) -> Stream:
        """``name``; None, "" or an absent DEFAULT_STREAM: the only stream (refused where there are several)."""
        if name == DEFAULT_STREAM and name not in self.streams:
            name = None
        return self.streams[self.config.stream_name(name)]

    def observe_inference(self, latency_s: float, timestamp_s: float, stream: str = DEFAULT_STREAM,
                          model_id: str = "") -> bool:
        """An inference of ``stream`` (of ``model_id``, if known) finished at ``timestamp_s``. True:
        over its target, judged at the current point (started after the last move settled, on the
        model told) and the point not known to miss: a caller stepping on a timer steps at once."""
        s = self._stream(stream)
        s.note_seen(timestamp_s)
        if not s.active:
            returned(self.streams.values(), s)
            if self._seen_any:  # the set of streams sharing the device changed
                if timestamp_s > self._start_grace_s:  # it joined a running mix: it may leave as soon
                    s.counted_since_s = timestamp_s + self.config.change_grace_s
                self._workload_changed(s)
            self._seen_any = True
        if not plausible_latency(latency_s, self.config.safety):
            self.safety.note_implausible(timestamp_s, f"latency {latency_s!r} s"
                                         + (f" of stream {s.name}" if len(self.streams) > 1 else ""))
            return False
        start_s = timestamp_s - latency_s
        s.note_inference(latency_s, timestamp_s, counted=start_s >= min(self._counted_from_s, self._explored_s))
        self.move.learn(s, start_s, latency_s, self.learned.settle)
        if not s.gate.judged(model_id, start_s, timestamp_s) or self.move.owns(s.name, start_s, timestamp_s):
            return False  # the move's, or another model's: statistics only
        s.add_judged(timestamp_s, latency_s, self.config.late_window_s, in_grace=start_s < self._counted_from_s)
        return latency_s > s.config.target_latency_s and self.current.name not in self.findings.missed

    def observe_power(self, power_w: float, timestamp_s: float, temperatures_c=None, source: str = "") -> None:
        """``source``: where the reading came from, named when it is implausible (a missing rail)."""
        if not plausible_power(power_w, self.config.safety):
            self.safety.note_implausible(timestamp_s, f"power {power_w!r} W" + (f" from {source}" if source else ""))
            return
        self.safety.note_power(timestamp_s, temperatures_c)
        self._power.add(timestamp_s, float(power_w), self.move.settled_s())

    # ---- commands ----------------------------------------------------------------------
    def set_target(self, latency_ms: float, percentile: float, stream: str = DEFAULT_STREAM) -> None:
        self.set_targets({self._stream(stream).name: (latency_ms, percentile)})  # stream: as _stream

    def set_targets(self, targets: Mapping[str, tuple[float, float]]) -> None:
        """Several streams' targets at once, ``{stream: (latency_ms, percentile)}``: one restart
        of exploration, and the verdicts every change leaves standing kept (a point that missed
        misses a tighter target; one that met meets a looser one)."""
        before = [s.config for s in self.streams.values()]
        config = self.config
        for name, (latency_ms, percentile) in targets.items():
            config = config.with_target(latency_ms, percentile, self._stream(name).name)
        self.config = config
        for s in config.stream_configs:
            self.streams[s.name].retarget(s, self.clock.now_s())
        if before != list(config.stream_configs):
            kept = self.findings.kept_for_targets(before, config.stream_configs)
            self.learned.probed.clear()
            self._new_target()
            self.learned.findings = kept or self.findings
            self.state = self._after_settle = State.MEASURING  # the point held was chosen for another target

    def set_mode(self, mode: str) -> None:  # off | advise | active
        if mode not in MODES:
            raise ConfigError(f"mode must be one of {', '.join(MODES)}, got {mode!r}")
        self.mode = mode
        if mode != "off":
            self.yielded = ""

    def set_model(self, model_analysis: RooflineAnalysis | None, model_id: str = "", note: str = "",
                  stream: str = DEFAULT_STREAM) -> None:
        """A new model on ``stream`` (the default: the only stream). ``model_analysis`` None: no
        roofline for it (a platform outside the catalogue, or a model the governor could not
        load, ``note`` says why): each point is then learned by measuring. Frames that started
        before this call, or that report the model switched from, are not judged (ModelGate)."""
        s = self._stream(stream)
        if s.switch_model(model_analysis, self.device):  # its roofline predictor took the new workload in place
            self.energy.forget(0.3)  # as the predictor's own coefficients (set_workload)
        s.model_id = model_id or (model_analysis.model if model_analysis is not None else "")
        s.model_note = note
        if s.last_seen_s > -math.inf:  # frames of the model before may be in flight
            s.gate.switched(model_id, self.clock.now_s())
        self.learned.probed.clear()
        self._new_workload(changed_s=uncount_told(s))
        self.state = self._after_settle = State.MEASURING  # the point held was chosen for another model ...
        self.learned.calibrated_here.discard(s.name)  # ... and is not measured under this one
        s.latencies.clear()
        self._power.clear()

    def stream_left(self, stream: str = DEFAULT_STREAM) -> None:
        """``stream`` stopped publishing (its node was stopped): out of the constraint set now,
        not after its silence limit; its next inference brings it back."""
        s = self._stream(stream)
        if s.active:
            s.active = False
            self._workload_changed(s)

    def _new_target(self, forget_mixes: bool = True, changed_s: float | None = None) -> None:
        """Measurements hold, not verdicts: exploring again. Late ones in the change's grace are the change's, from
        ``changed_s`` (None: now; earlier if seen in a window; -inf: none; in a grace: that one's change, seen late)."""
        self._explore_left = self.config.explore_budget
        self._workload_since_s, self._explored_s = self.clock.now_s(), math.inf
        grace_s = (self._workload_since_s if changed_s is None else changed_s) + self.config.change_grace_s
        if changed_s is None or changed_s >= self._counted_from_s:
            self._counted_from_s = max(self._counted_from_s, grace_s)
        self.findings.forget_verdicts()
        if forget_mixes:
            self.learned.mixes.clear()

    def _new_workload(self, forget_mixes: bool = True, changed_s: float | None = None) -> None:
        """Model, rate or behaviour changed: exploration starts again, every point unmeasured.
        ``forget_mixes`` False: other mixes' findings are kept (a restored miss is caught as any)."""
        self._new_target(forget_mixes, changed_s)
        self.findings.measured.clear()

    def _surprised(self, streams: list[Stream], slower: bool, since_s: float) -> None:
        """The work of ``streams`` changed unannounced (another process on the GPU, other input
        content), shown by their samples since ``since_s``: points are unmeasured again, verdicts
        that still hold stay (Learned.surprised). Nothing told of the change: it is dated by its
        first late inference there, or a heavier work's by a miss judged just before
        (streams.uncount_since), and its grace runs from then (none if it showed none)."""
        kept = self.learned.surprised(streams, slower)
        self._new_workload(forget_mixes=False, changed_s=uncount_since(
            streams, since_s, self.config.change_grace_s if slower else 0.0))
        self.learned.findings = kept

    def _workload_changed(self, changed: Stream) -> None:
        """``changed`` started or stopped: what the windows hold was another mix of work (the
        findings of a mix seen before come back, findings.py)."""
        found = self.learned.mix_changed(changed, [s for s in self.streams.values() if s.active])
        self._new_workload(forget_mixes=False)
        self.learned.findings = found
        clear_windows(self.streams.values(), self._power)

    def shutdown(self) -> str:
        """Put back what was found at start (the platform's own record: every cap file as found),
        clear the crash record and return the platform's "restored ..." line. A restore that
        fails raises and keeps the crash record, so the next start tries again."""
        restored = self.platform.restore()
        self.current = self.found
        self.store.clear()
        return restored

    # ---- the loop: a state machine (states.py) -----------------------------------------
    def step(self, now_s: float) -> Decision:
        """One step of the state machine (states.py): the first transition that applies makes the decision."""
        self._expire(now_s)
        here = Readings.read(self.config, self.current, now_s, list(self.streams.values()), self._power)
        decision = self._stand_by(here)  # off, fall_back, wait, settle
        if decision is not None:
            return decision
        state = resumed(self.state)
        if state is State.SETTLING:
            state = self._after_settle
        current, preds, violations = self._judge_current(here)
        decision = self._dwell(here, state, current, violations)  # wait (no energy yet), measure
        if decision is not None:
            return decision
        return self._move(here, state, current, preds, violations)  # hold, advise, escape, explore, improve

    def _decide(self, here: Readings, transition: Transition, state: State, point: OperatingPoint, reason: str,
                pred: JointPrediction | None = None, applied: bool = False) -> Decision:
        """``transition`` made the step's decision: the governor is in ``state`` now."""
        self.state = state
        return report(point, applied, reason, state.value, pred, self.streams.values(), here.windows, here.power_w,
                      state is State.FALLBACK, transition.value)

    def _stand_by(self, here: Readings) -> Decision | None:
        """off, fall_back, wait (for a model, or a stream), settle: nothing is judged, learned or moved."""
        now_s = here.now_s
        self._follow_outside(now_s)  # mode active yields to a preset switched outside it: off
        if self.mode == "off":
            return self._decide(here, Transition.OFF, State.DISABLED, self.current,
                                f"mode off: {self.yielded}" if self.yielded else "mode off")
        # fall_back: the only move made before the last one settled
        verdict = self.safety.verdict(now_s)
        if not verdict.ok:
            applied, reason = False, verdict.reason
            if self.mode == "active" and (self.current != self.safe_point or self._in_doubt):
                error = self._apply(self.safe_point, now_s)
                applied = not error
                reason += f"; safe point {'applied' if applied else 'failed: ' + error}"
            return self._decide(here, Transition.FALL_BACK, State.FALLBACK, self.safe_point, reason, applied=applied)
        if self.state is State.FALLBACK:
            self.state = State.MEASURING  # recovered: the safe point is a stopgap
        waiting = [s.name for s in here.active if s.predictor is None]
        if waiting:
            which = f" of {', '.join(waiting)}" if len(self.streams) > 1 else ""
            return self._decide(here, Transition.WAIT, State.WAITING, self.current,
                                f"waiting for the model's roofline{which} (the first InferenceStats.model_id)")
        if not here.active:
            return self._decide(here, Transition.WAIT, State.WAITING, self.current,
                                "no stream is publishing inferences: holding")
        if now_s < self.move.settled_s():  # until the last move shows
            return self._decide(here, Transition.SETTLE, resumed(self.state), self.current, f"settling: the move to "
                                f"{self.current.name} takes {self.move.settle_s * 1e3:.0f} ms to show")
        return None

    def _follow_outside(self, now_s: float) -> None:
        """A preset switched outside the governor (outside.py) is a person's choice, what a shutdown leaves from then
        on. Mode advise follows it (the crash record saved again: a restart must not put the old one back); mode active
        yields rather than fight them: mode off, why on ``yielded``, no crash record (nothing it set is in force)."""
        # While an apply failed part-way (in doubt) the fallback puts the safe point back.
        live = None if self.mode == "off" or self._in_doubt else switched_outside(self.platform, self.current)
        if live is None:
            return
        self.platform.refind()
        if self.safe_point == self.found:
            self.safe_point = live
        if self.mode == "advise":
            self.found = live
            self._moved_to(live, now_s)
            self.record_found()
        else:
            self.yielded = yield_reason(live, self.current)
            self.found, self.current, self.mode = live, live, "off"
            self.store.clear()

    def _judge_current(self, here: Readings) -> tuple[JointPrediction, list[JointPrediction], dict[str, float]]:
        """Calibration at the current point and the verdicts on it: its prediction, the points a choice may take, and
        per stream that missed there with evidence, its measured percentile over its limit."""
        cfg, now_s, active = here.config, here.now_s, here.active
        self.learned.calibrate(here, self._unvisited, self._power, self._surprised, self._new_workload)
        loads = [(s, here.windows[s.name], s.limit_s(cfg.margin)) for s in active]
        by_name, current = predict_all(self.current, self.candidates, self.dominance, loads, self.energy,
                                       self.findings.measured, late_window_s=cfg.late_window_s,
                                       counted_from_s=self._counted_from_s)
        violations = self.learned.judge(here, current.gpu_utilisation, self.dominance.unbeatable, self._surprised,
                                        self._counted_from_s, now_s - self.move.time_s)
        if violations and self._descending:
            # The model said this step down would miss and it did: the next steps reach less far.
            for name in violations:
                self.streams[name].model_rel_error *= 0.5
            self._descending = False
        out = self.dominance.ruled_out(self.findings.missed.names(), by_name)  # until each miss's verdict expires
        preds = [q for q in by_name.values() if self.safety.may_apply(q.point.name) and q.point.name not in out] \
            or [current]
        return current, preds, violations

    def _dwell(self, here: Readings, state: State, current: JointPrediction,
               violations: dict[str, float]) -> Decision | None:
        """wait (no energy measured yet), measure: a stopgap until it is measured, the chosen point for its dwell."""
        if not self.energy.has_energy:
            return self._decide(here, Transition.WAIT, State.WAITING, self.current,
                                "calibrating: no energy measured yet", current)
        cfg, now_s = here.config, here.now_s
        dwell_over = now_s - self.move.time_s >= cfg.dwell_s or (state in PROVISIONAL and self.learned.measured_here(
            here.active, now_s - max(self.move.settled_s(), self.move.time_s), cfg.window_s))
        if not violations and not dwell_over:
            return self._decide(here, Transition.MEASURE, state, self.current,
                                "dwelling" if state is State.SETTLED else "measuring", current)
        return None

    def _move(self, here: Readings, state: State, current: JointPrediction, preds: list[JointPrediction],
              violations: dict[str, float]) -> Decision:
        """hold, advise, or a move: escape (a miss), explore, improve; a move that does not pay its transients, one the
        rate limit defers, or one whose apply fails holds."""
        cfg, now_s, active = here.config, here.now_s, here.active
        self.findings.record_dwell(current.point.name, dwelt=now_s - self.move.time_s >= cfg.dwell_s)
        met = measured_to_meet(preds, current, self.findings)
        horizon_s = max(cfg.expected_dwell_s, now_s - self._workload_since_s)  # a move's, to price it
        choice, settle_s = self._choose_affordable(preds, current, violations, state, met, active, now_s, horizon_s)
        target = choice.prediction.point
        backlog = [s.name for s in active if s.late_now] if not violations else []  # its queue drains first
        if backlog and (target == self.current or current.meets() or self.current.name in met):
            return self._decide(here, Transition.HOLD, state, self.current, f"holding: {', '.join(backlog)} late",
                                current)
        if target == self.current:
            return self._decide(here, Transition.HOLD, State.SETTLED, target, choice.reason, choice.prediction)
        transition = Transition.ESCAPE if violations else Transition.EXPLORE if choice.exploring else Transition.IMPROVE
        if transition is not Transition.ESCAPE and not choice.insured and (current.meets() or self.current.name in met):
            if why := unpaid(current, choice.prediction, choice.exploring, horizon_s, settle_s):
                return self._decide(here, Transition.HOLD, unpaid_hold(state), self.current, why, current)
        if self.mode == "advise":
            return self._decide(here, Transition.ADVISE, State.ADVISING, target, choice.reason, choice.prediction)
        if not self.safety.may_switch(now_s, abandon=state is State.EXPLORING and bool(violations)):
            return self._decide(here, Transition.HOLD, state, self.current, "rate limit: change deferred", current)
        error = self._apply(target, now_s)  # escape, explore, improve: a move
        if error:
            return self._decide(here, Transition.HOLD, state, self.current, f"apply failed: {error}", current)
        if choice.exploring:
            self._explore_left -= 1
            self._explored_s = min(self._explored_s, math.inf if cfg.grace_excuses_exploring else now_s)
        self._descending = choice.descent
        stopgap = violations or not (choice.prediction.meets() or target.name in self.findings.met)
        self._after_settle = State.MEASURING if stopgap else State.SETTLED  # an escape, or nothing meets
        return self._decide(here, transition, State.EXPLORING if choice.exploring else State.SETTLING, target,
                            choice.reason, choice.prediction, applied=True)

    def _moved_to(self, point: OperatingPoint, now_s: float) -> None:
        """The board is at ``point`` from ``now_s`` on: a new move, nothing measured there yet."""
        domains = domains_changed(self.device, self.current, point) or frozenset({"cpu"})
        self.move = Move(now_s, domains, self.learned.settle.of(domains))
        self._unvisited = point.name not in self.findings.measured
        self.current = point
        self.learned.calibrated_here.clear()
        clear_windows(self.streams.values(), self._power)

    def _expire(self, now_s: float) -> None:
        """Silent streams leave (streams.silent); verdicts past their age go."""
        for s in silent(list(self.streams.values()), now_s, self.config.stream_timeout_s):
            self.stream_left(s.name)
        self.findings.missed.expire(now_s)

    def _apply(self, point: OperatingPoint, now_s: float) -> str:
        """Apply ``point``; '' on success, else the error (the point is counted as failing)."""
        try:
            self.platform.apply(point)
        except (ApplyError, OperatingPointError) as exc:
            self.safety.note_apply_failure(now_s, point.name, exc)
            # Some writes may have gone through: the fallback applies the safe point again.
            self._in_doubt = self._in_doubt or isinstance(exc, ApplyError)
            return f"{type(exc).__name__}: {exc}"
        self._moved_to(point, now_s)
        if point.name in self.learned.probe_candidates:
            self.learned.probed.add(point.name)
        self._in_doubt = False
        self.safety.note_switch(now_s)
        self.switches += 1
        return ""
