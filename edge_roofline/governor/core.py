"""The governor: measured latency and power in, an operating point out, safety first.

Time is injected (``clock``; every ``observe_*`` and ``step`` call carries its own timestamp),
so the same core runs on wall time on a robot and on simulated time in tests.
"""

from __future__ import annotations

import math
from collections import deque
from dataclasses import dataclass

import numpy as np

from edge_roofline.clock import Clock
from edge_roofline.platforms.base import (ApplyError, OperatingPoint, OperatingPointError, Platform,
                                          PlatformError, RebootRequiredError)
from edge_roofline.roofline.model import RooflineAnalysis

from .config import MODES, ConfigError, GovernorConfig
from .points import candidate_points, catalogue_device
from .policy import choose
from .pointwise import PointwisePredictor
from .predictor import Prediction, Predictor, RooflineWorkload
from .rules import Dominance
from .safety import SafetyMonitor, StateStore, plausible_latency, plausible_power


@dataclass(frozen=True)
class Decision:
    point: OperatingPoint  # chosen (active: applied or in force; advise: recommended)
    applied: bool  # a change was applied to the device in this step
    reason: str
    state: str  # disabled | waiting | holding | exploring | switching | advising | fallback
    predicted_latency_s: float
    predicted_energy_j: float
    measured_latency_s: float  # the target percentile over the window (NaN: too few samples)
    measured_energy_per_inference_j: float
    violation_rate: float
    fallback_active: bool
    predicted_latency_std_s: float = math.nan  # the predictor's uncertainty of that latency
    window_samples: int = 0  # latencies in the measured window


class Governor:
    def __init__(self, platform: Platform, config: GovernorConfig,
                 model_analysis: RooflineAnalysis | None, clock: Clock, store: StateStore | None = None) -> None:
        self.platform = platform
        self.config = config
        self.clock = clock
        # Outside the catalogue (NVML) no clock tables carry a roofline between points: they are
        # learned one by one.
        self.device = catalogue_device(platform)
        self.store = store or StateStore(config.state_path or None)
        Governor.recover(platform, self.store)
        self.found = platform.current_operating_point()
        self.record_found()
        self.safe_point = self.found
        now = clock.now_s()
        self.safety = SafetyMonitor(config.safety, now)
        self.candidates = candidate_points(platform, config.points)
        self.dominance = Dominance(self.device, self.candidates)
        self.current = self.found
        self.mode = config.mode
        self.predictor: Predictor | PointwisePredictor | None = PointwisePredictor() if self.device is None else None
        self._latencies: deque[tuple[float, float]] = deque()  # (t, latency) at current point
        self._power: deque[tuple[float, float]] = deque()  # (t, W) at current point
        self._last_switch_s = now
        self._last_calibration_s = now
        self._explore_left = config.explore_budget
        # A provisional point (the one found at start, or one being explored) may be left as soon
        # as it has been measured; a point chosen as the best is held for dwell_s.
        self._provisional = True
        self._measured_here = False  # a calibration at the current point since the switch
        self._measured: set[str] = set()  # points measured under the current workload and rate
        self._missed: set[str] = set()  # points that missed the target under it (not tried again)
        self._apply_failures: dict[str, int] = {}
        self._in_doubt = False  # an apply failed part-way: the files may match no point
        self._jitter_ratio = 1.0
        self._calibrated_rate_hz: float | None = None
        self.switches = 0
        self.model_id = ""  # the model the predictor describes ("" before the first one is known)
        self.model_note = ""  # why there is no roofline for it (learned by measuring), if so
        if model_analysis is not None:
            self.set_model(model_analysis)
        if config.prior_table:
            self._load_prior(config.prior_table)

    def _load_prior(self, path: str) -> None:
        """Fit the predictor to a sweep's operating-point table (docs/characterise.md): the
        points it measured start known instead of from the roofline prior. The table must be of
        this model on this device, and a simulated one cannot stand in for a real board."""
        from .prior_table import load_table

        if self.device is None or not isinstance(self.predictor, Predictor):
            raise ConfigError("prior_table needs a catalogued device and the model's roofline analysis")
        try:
            table = load_table(path)
        except (OSError, ValueError, KeyError) as exc:
            raise ConfigError(f"prior_table {path}: {exc}") from None
        model = self.predictor.workload.name
        if table.device != self.device.key or table.model != model:
            raise ConfigError(f"prior_table {path} is for {table.model} on {table.device}, not {model} on "
                              f"{self.device.key}; sweep this model on this device (edge-roofline sweep)")
        if table.simulated and not self.platform.identity().simulated:
            raise ConfigError(f"prior_table {path} was measured on a virtual Jetson (SIMULATION); on a real "
                              f"board sweep the board itself")
        observations = table.observations()
        if not observations:
            raise ConfigError(f"prior_table {path} has no measured points")
        self.predictor.fit(observations)

    # ---- crash recovery ----------------------------------------------------------------
    def record_found(self) -> None:
        """The crash record: the point found and the platform's exact record of it (every cap
        file as found), saved before the first change."""
        self.store.save(self.found, self.platform.found_record())

    @staticmethod
    def recover(platform: Platform, store: StateStore) -> str | None:
        """A record left by a run that did not shut down: put back what it found, clear it, and
        say what was restored (None: no record). A record the platform cannot put back whole
        is kept, and the ApplyError names what failed."""
        record = store.load()
        if record is None:
            return None
        try:
            if record.platform is not None:
                restored = platform.restore_record(record.platform)
            else:
                platform.apply(record.found_point)
                restored = (f"restored {record.found_point.name} by applying it: a format-{record.format} record "
                            f"holds no cap files, so caps it does not name are the preset's own, not as found")
        except PlatformError as exc:
            raise ApplyError(f"crash record {store.path} not fully put back: {exc}; the record is kept: "
                             f"fix the cause and start again") from None
        store.clear()
        return f"{restored} (from crash record {store.path})"

    # ---- inputs ------------------------------------------------------------------------
    def observe_inference(self, latency_s: float, timestamp_s: float) -> None:
        if not plausible_latency(latency_s, self.config.safety):
            self.safety.note_implausible(timestamp_s, f"latency {latency_s!r} s")
            return
        if timestamp_s >= self._last_switch_s + self.config.settle_s:
            self._latencies.append((timestamp_s, float(latency_s)))

    def observe_power(self, power_w: float, timestamp_s: float, temperatures_c=None, source: str = "") -> None:
        """``source``: where the reading came from, named when it is implausible (a missing rail)."""
        if not plausible_power(power_w, self.config.safety):
            self.safety.note_implausible(timestamp_s, f"power {power_w!r} W" + (f" from {source}" if source else ""))
            return
        self.safety.note_power(timestamp_s, temperatures_c)
        if timestamp_s >= self._last_switch_s + self.config.settle_s:
            self._power.append((timestamp_s, float(power_w)))

    # ---- commands ----------------------------------------------------------------------
    def set_target(self, latency_ms: float, percentile: float) -> None:
        self.config = self.config.with_target(latency_ms, percentile)
        self._explore_left = self.config.explore_budget
        self._missed.clear()

    def set_mode(self, mode: str) -> None:
        if mode not in MODES:
            raise ConfigError(f"mode must be one of {', '.join(MODES)}, got {mode!r}")
        self.mode = mode

    def set_model(self, model_analysis: RooflineAnalysis | None, model_id: str = "", note: str = "") -> None:
        """A new model. ``None``: no roofline for it (a platform outside the catalogue, or a model
        the governor could not load, ``note`` says why): each point is then learned by measuring."""
        if model_analysis is None or self.device is None:
            self.predictor = PointwisePredictor()  # what each point measured was the old model's
        elif isinstance(self.predictor, Predictor):
            self.predictor.set_workload(RooflineWorkload(model_analysis, self.device))
        else:
            self.predictor = Predictor(RooflineWorkload(model_analysis, self.device))
        self.model_id = model_id or (model_analysis.model if model_analysis is not None else "")
        self.model_note = note
        self._new_workload()
        self._latencies.clear()
        self._power.clear()

    def _new_workload(self) -> None:
        """Model, rate or behaviour changed: exploration starts again, every point unmeasured."""
        self._explore_left = self.config.explore_budget
        self._measured.clear()
        self._missed.clear()

    def shutdown(self) -> str:
        """Put back what was found at start (the platform's own record: every cap file as found),
        clear the crash record and return the platform's "restored ..." line. A restore that
        fails raises and keeps the crash record, so the next start tries again."""
        restored = self.platform.restore()
        self.current = self.found
        self.store.clear()
        return restored

    # ---- the loop ----------------------------------------------------------------------
    def _window(self, now_s: float):
        horizon = now_s - self.config.window_s
        while self._latencies and self._latencies[0][0] < horizon:
            self._latencies.popleft()
        while self._power and self._power[0][0] < horizon:
            self._power.popleft()
        lat = np.array([v for _, v in self._latencies])
        if len(lat) < self.config.min_window_samples:
            return None
        span_s = max(self._latencies[-1][0] - self._latencies[0][0], 1e-6)
        rate_hz = (len(lat) - 1) / span_s
        power_w = float(np.mean([v for _, v in self._power])) if self._power else math.nan
        return lat, rate_hz, power_w

    def _decision(self, point, applied, reason, state, pred: Prediction | None, window,
                  fallback=False) -> Decision:
        nan = math.nan
        if window is None:
            meas = energy = nan
            viol = 0.0
            samples = len(self._latencies)
        else:
            lat, rate_hz, power_w = window
            meas = float(np.percentile(lat, self.config.percentile))
            energy = power_w / rate_hz if rate_hz > 0 else nan
            viol = float(np.mean(lat > self.config.target_latency_s))
            samples = len(lat)
        return Decision(point, applied, reason, state,
                        pred.latency_s if pred else nan, pred.energy_per_inference_j if pred else nan,
                        meas, energy, viol, fallback, pred.latency_std_s if pred else nan, samples)

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
        self.current = point
        self._in_doubt = False
        self.safety.note_switch(now_s)
        self._last_switch_s = now_s
        self._measured_here = False
        self._latencies.clear()
        self._power.clear()
        self.switches += 1
        return ""

    def step(self, now_s: float) -> Decision:
        window = self._window(now_s)
        if self.mode == "off":
            return self._decision(self.current, False, "mode off", "disabled", None, window)
        verdict = self.safety.verdict(now_s)
        if not verdict.ok:
            applied = False
            reason = verdict.reason
            if self.mode == "active" and (self.current != self.safe_point or self._in_doubt):
                error = self._apply(self.safe_point, now_s)
                applied = not error
                reason += f"; safe point {'applied' if applied else 'failed: ' + error}"
            return self._decision(self.safe_point, applied, reason, "fallback", None, window, True)
        if self.predictor is None:
            return self._decision(self.current, False, "waiting for the model's roofline (the first "
                                  "InferenceStats.model_id)", "waiting", None, window)
        self._calibrate(now_s, window)
        rate = window[1] if window else None
        # Every prediction the choice sees is monotone in the clocks (rules.py).
        by_name = {q.point.name: q for q in self.dominance.envelope([self.predictor.predict(p, rate)
                                                                     for p in self.candidates])}
        current = by_name.get(self.current.name) or self.predictor.predict(self.current, rate)
        limit_s = self.config.target_latency_s * (1.0 - self.config.margin)
        violation = self._violation(window, limit_s)
        if violation is not None:
            self._missed.add(self.current.name)
        # Measured misses win over predictions: a point that missed, and every point slower in
        # every clock, is out; the fastest point stays (nowhere faster to go).
        fastest = self.dominance.fastest
        out = self.dominance.dominated_by(self._missed) - ({fastest.name} if fastest else set())
        preds = [q for q in by_name.values()
                 if self._apply_failures.get(q.point.name, 0) < self.config.safety.apply_failures_before_disable
                 and q.point.name not in out] or [current]
        fastest_pred = next((q for q in preds if fastest and q.point == fastest), None)
        if not self.predictor.has_energy:
            return self._decision(self.current, False, "calibrating: no energy measured yet", "waiting", current,
                                  window)
        dwell_over = now_s - self._last_switch_s >= self.config.dwell_s or \
            (self._provisional and self._measured_here)
        if violation is None and not dwell_over:
            return self._decision(self.current, False, "dwelling", "holding", current, window)
        choice = choose(preds, current, limit_s=limit_s, jitter_ratio=self._jitter_ratio,
                        violation_scale=violation, hysteresis=self.config.hysteresis,
                        explore=self._explore_left > 0, explore_min_rel_std=self.config.explore_min_rel_std,
                        measured=frozenset(self._measured | self._missed), provisional=self._provisional,
                        fastest=fastest_pred)
        target = choice.prediction.point
        if target == self.current:
            return self._decision(target, False, choice.reason, "holding", choice.prediction, window)
        if self.mode == "advise":
            return self._decision(target, False, choice.reason, "advising", choice.prediction, window)
        if not self.safety.may_switch(now_s):
            return self._decision(self.current, False, "rate limit: change deferred", "holding", current, window)
        error = self._apply(target, now_s)
        if error:
            return self._decision(self.current, False, f"apply failed: {error}", "holding", current, window)
        if choice.exploring:
            self._explore_left -= 1
        # An exploration or an escape from a miss is a stopgap: leave it once it is measured.
        self._provisional = choice.exploring or violation is not None
        return self._decision(target, True, choice.reason, "exploring" if choice.exploring else "switching",
                              choice.prediction, window)

    def _violation(self, window, limit_s: float) -> float | None:
        """Measured percentile / limit when the target is missed, else None. Before the window
        is full, a miss is certain once more samples are over the target than the percentile
        allows in a full window: no later sample can bring the percentile back under it."""
        target_s = self.config.target_latency_s
        if window is not None:
            lat = window[0]
        else:
            lat = np.array([v for _, v in self._latencies])
            allowed = (1.0 - self.config.percentile / 100.0) * self.config.min_window_samples
            if not len(lat) or np.count_nonzero(lat > target_s) <= allowed:
                return None
        meas = float(np.percentile(lat, self.config.percentile))
        return meas / limit_s if meas > target_s else None

    def _calibrate(self, now_s: float, window) -> None:
        if window is None or (self._measured_here and
                              now_s - self._last_calibration_s < self.config.calibration_interval_s):
            return
        self._last_calibration_s = now_s
        self._measured_here = True
        lat, rate_hz, power_w = window
        mean = float(lat.mean())
        self._jitter_ratio = max(1.0, float(np.percentile(lat, self.config.percentile)) / mean)
        before = self.predictor.predict(self.current, rate_hz).latency_s
        if self.predictor.observations >= 3 and abs(mean / before - 1) > self.config.workload_change_rel:
            self.predictor.forget(0.5)
            self._new_workload()
        last_rate = self._calibrated_rate_hz
        if last_rate is not None and abs(rate_hz / last_rate - 1) > self.config.rate_change_rel:
            self._new_workload()  # the energy ranking moves with the rate
        self._calibrated_rate_hz = rate_hz
        self._measured.add(self.current.name)
        self.predictor.update(self.current, mean, power_w / rate_hz if rate_hz > 0 else math.nan,
                              input_rate_hz=rate_hz, samples=len(lat), latency_var_s2=float(lat.var()))
