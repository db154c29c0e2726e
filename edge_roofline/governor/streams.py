"""One network the governor holds a target for: its measured latencies, its own latency
predictor (the model it serves, calibrated online) and whether it is publishing at all.

A stream that has been silent for ``stream_timeout_s`` and for SILENT_PERIODS of its own input
periods leaves the constraint set (a node that was stopped, a model that is not being run) and
comes back with its next inference: a 15 Hz segmenter switched off does not hold the device at
the point chosen for it for long, and a 1 Hz language model is not dropped between frames.
The module's power readings at the current point are windowed here too (PowerWindow).
"""

from __future__ import annotations

import copy
import math
from collections import deque
from dataclasses import dataclass
from typing import Iterable

import numpy as np

from edge_roofline.roofline.devices import DeviceSpec
from edge_roofline.roofline.model import RooflineAnalysis

from .config import StreamConfig
from .model_follow import ModelGate
from .moves import Stalls
from .pointwise import PointwisePredictor
from .predictor import Predictor, RooflineWorkload
from .queueing import TAIL_SHARE, BurstMeter, Measured, QueueShape, measure, rate_change_at
from .verdicts import burst_going, cut_burst, misses_target


SILENT_PERIODS = 10  # missed input periods in a row: the stream has stopped, not stuttered
# The counted late inferences kept (the newest): far more than any late budget allows (TAIL_SHARE
# of a window's inferences), so a budget that would count a dropped one is long spent.
LATE_KEPT = 10_000


@dataclass(frozen=True)
class StreamStatus:
    """What the governor knows of one stream at a decision."""

    name: str
    model_id: str
    model_note: str
    active: bool  # publishing (within stream_timeout_s): in the constraint set
    target_latency_ms: float
    percentile: float
    measured_latency_s: float  # the percentile over the window (NaN: too few samples)
    predicted_latency_s: float  # at the chosen point, contention included
    predicted_latency_std_s: float
    violation_rate: float
    window_samples: int
    input_rate_hz: float  # measured (NaN before enough samples)
    met: bool  # measured percentile <= target (False while unmeasured)
    inferences: int = 0  # every inference judged since the stream started ...
    inferences_over_target: int = 0  # ... and those over its target (a move's transient included)


class PowerWindow:
    """The module's power readings at the current point (a switch clears them)."""

    def __init__(self) -> None:
        self._readings: deque[tuple[float, float]] = deque()  # (t, W)
        self._period_s = 0.0  # between readings
        self._last_s = -math.inf

    def add(self, timestamp_s: float, power_w: float, settled_s: float = -math.inf) -> None:
        """A reading; kept once the last move ``settled_s`` and one reading after (a sensor that
        averages and reports late shows a transient one reading after it ends)."""
        if math.isfinite(self._last_s) and timestamp_s > self._last_s:
            self._period_s = timestamp_s - self._last_s
        self._last_s = max(self._last_s, timestamp_s)
        if timestamp_s >= settled_s + self._period_s:
            self._readings.append((timestamp_s, power_w))

    def clear(self) -> None:
        self._readings.clear()

    @property
    def first_s(self) -> float:
        """When the first reading kept was taken (NaN: none)."""
        return self._readings[0][0] if self._readings else math.nan

    def mean_w(self, since_s: float) -> float:
        """Mean of the readings since ``since_s`` (older ones are dropped); NaN: none."""
        while self._readings and self._readings[0][0] < since_s:
            self._readings.popleft()
        return float(np.mean([w for _, w in self._readings])) if self._readings else math.nan


def answer_rate_hz(s: Stream, streams) -> float | None:
    """A decode stream's steps per second over time: its engine's request rate (the prefill
    stream's) times the steps per answer seen. Its window's rate is the rate inside an answer
    (the steps come in bursts), right for what a step contends with, not for the energy spent
    between answers. None: no decode stream, or no request seen yet."""
    prefill = next((o for o in streams if o.config.phase == "prefill" and o.config.engine == s.config.engine), None)
    if s.config.phase != "decode" or prefill is None or not prefill.inferences or prefill.rate_hz() <= 0:
        return None
    return prefill.rate_hz() * s.inferences / prefill.inferences


@dataclass(frozen=True)
class StreamWindow:
    latencies_s: np.ndarray
    rate_hz: float
    finish_s: np.ndarray | None = None  # when each inference finished (None: not known)


class Stream:
    """``model_patience_s``: how long frames of a model reported but not announced (set_model)
    are not judged (model_follow.ModelGate)."""

    def __init__(self, config: StreamConfig, model_patience_s: float = 5.0) -> None:
        self.config = config
        self.predictor: Predictor | PointwisePredictor | None = None
        self.model_id = ""  # the model the predictor describes ("" before the first one is known)
        self.model_note = ""  # why there is no roofline for it (learned by measuring), if so
        self.gate = ModelGate(model_patience_s)
        self._predictors: dict[tuple, Predictor] = {}  # workload: its predictor, as calibrated when it was left
        self._workload: tuple | None = None  # the one the predictor describes
        # (t, latency) of the inferences judged at the current point: started after it settled,
        # on the model the governor was told (a move clears them)
        self.latencies: deque[tuple[float, float]] = deque()
        self.stay_samples = self.stay_late = 0  # judged at the current point since the move, and those late
        self.stay = 0  # the number of that stay
        self.inferences = 0  # every plausible inference seen ...
        self.late = 0  # ... and those over the target, judged or not (a move's transient included)
        self.late_now = False  # the latest one was over the target (a backlog may be draining)
        self.late_at_s: deque[float] = deque()  # when the counted late ones finished (the late budget's window)
        self.late_run_from_s = math.inf  # when the first of its latest inferences late in a row started (inf: none)
        self.counted_since_s = -math.inf  # counted from then on, if it joined a running mix (late_budget)
        self.last_late_s = -math.inf  # when the last late one finished, counted or not (no change forgets it)
        # The latest miss judged on it (no burst): when, and when its first late one finished.
        self.missed_s = self.missed_from_s = -math.inf
        self.last_seen_s = -math.inf
        self.last_gap_s = 0.0  # between the last two inferences
        self.active = False
        self.jitter_ratio = 1.0  # service-time percentile / mean
        self.queue = QueueShape()  # its input queue, as measured (queueing.py)
        self.bursts = BurstMeter()  # rare slow inferences and their backlogs (queueing.py)
        self.stalls = Stalls()  # late first inferences after a move, per domain (moves.py)
        # How far off the predictor was at the points it had not measured yet (a running mean
        # of |measured / predicted - 1| at each point's first window).
        self.model_rel_error = 0.0
        self.calibrated_rate_hz: float | None = None
        # The rate the points are ranked at: a change is measured from it, not from the last
        # window (a sliding window held at one point creeps to a new rate in steps each too small).
        self.ranked_rate_hz: float | None = None
        self.rate_shifted = False  # the window was cut to a new input rate since the points were ranked

    @property
    def name(self) -> str:
        return self.config.name

    def retarget(self, config: StreamConfig, now_s: float) -> None:
        """``config`` from ``now_s`` on: where its target changed, the frames so far are not judged against it."""
        if config != self.config:
            self.gate.since(now_s)
            self.latencies.clear()
        self.config = config

    def switch_model(self, model_analysis: RooflineAnalysis | None, device: DeviceSpec | None) -> bool:
        """A switch to ``model_analysis`` (None: no roofline for it; ``device`` None: outside the catalogue; either
        way each point is learned by measuring). The roofline predictor is kept under the workload it describes
        (name, precision, batch, FLOPs) and one kept for the new one (served before) comes back calibrated. The rate
        measured so far was the old model's inputs: the new one's is measured from its second inference on (until
        then its predictor's last). True: the roofline predictor took the new workload in place (set_workload)."""
        workload = None if model_analysis is None else (
            model_analysis.model, model_analysis.precision, model_analysis.batch, model_analysis.total_flops)
        self.calibrated_rate_hz = self.ranked_rate_hz = None
        self.last_gap_s = 0.0
        if isinstance(self.predictor, Predictor) and self._workload is not None:
            self._predictors[self._workload] = copy.deepcopy(self.predictor)
        self._workload = workload
        kept = self._predictors.get(workload) if workload is not None else None
        if model_analysis is None or device is None:
            self.predictor = PointwisePredictor()  # what each point measured was the old model's
        elif kept is not None:
            self.predictor = kept
        elif isinstance(self.predictor, Predictor):
            self.predictor.set_workload(RooflineWorkload(model_analysis, device))
            return True
        else:
            self.predictor = Predictor(RooflineWorkload(model_analysis, device))
        return False

    def note_seen(self, timestamp_s: float) -> None:
        """An inference finished at ``timestamp_s`` (the gap since the last one is its period
        until its rate is calibrated)."""
        if timestamp_s > self.last_seen_s > -math.inf:
            self.last_gap_s = timestamp_s - self.last_seen_s
        self.last_seen_s = max(self.last_seen_s, timestamp_s)

    def limit_s(self, margin: float) -> float:
        """What the governor holds the stream's percentile under: its target less the margin."""
        return self.config.target_latency_s * (1.0 - margin)

    def rate_hz(self) -> float:
        """Its input rate: the calibrated one, else from the last gap (0 before the second)."""
        if self.calibrated_rate_hz and math.isfinite(self.calibrated_rate_hz):
            return self.calibrated_rate_hz
        return 1.0 / self.last_gap_s if self.last_gap_s > 0 else 0.0

    def silence_limit_s(self, stream_timeout_s: float) -> float:
        """How long this stream may be silent and still count as publishing: its period is the
        calibrated rate's, else the last gap between two inferences (none before the second)."""
        rate_hz = self.rate_hz()
        return max(stream_timeout_s, SILENT_PERIODS / rate_hz if rate_hz > 0 else 0.0)

    def window(self, now_s: float, window_s: float, min_samples: int,
               rate_change_rel: float = math.inf) -> StreamWindow | None:
        """The samples of the last ``window_s``; a stream too slow to give ``min_samples`` in
        that time (a 1 Hz language model) keeps its last ``min_samples``, all taken at the
        current point (a switch clears them). Once ``min_samples`` show its input rate moved by
        over ``rate_change_rel``, only those at the new rate (queueing.rate_change_at): the
        points are ranked at it then, not seconds later as the old ones age out."""
        horizon = now_s - window_s
        while len(self.latencies) > min_samples and self.latencies[0][0] < horizon:
            self.latencies.popleft()
        if self.config.phase != "decode" and not self.queue.self_paced:  # their rate is the point's
            changed_s = rate_change_at(np.array([t - v for t, v in self.latencies]), min_samples, rate_change_rel)
            while changed_s is not None and self.latencies[0][0] - self.latencies[0][1] < changed_s:
                self.latencies.popleft()
                self.rate_shifted = True  # the points are ranked again at the new rate (Learned.calibrate)
        return self._kept(min_samples)

    def calibration_window(self, min_samples: int, dwell_s: float = math.inf) -> StreamWindow | None:
        """Every sample kept since the switch, if ``min_samples`` (and two, for a rate) or more;
        a prefill's one time to first token where its requests come more than ``dwell_s`` apart
        (a second would hold the point a request longer; the gap gives the rate, and a prefill's
        time barely varies)."""
        if len(self.latencies) == 1 and self.config.phase == "prefill" and self.last_gap_s >= dwell_s:
            (t_s, latency_s), = self.latencies
            return StreamWindow(np.array([latency_s]), 1.0 / self.last_gap_s, np.array([t_s]))
        return self._kept(max(min_samples, 2))

    def _kept(self, min_samples: int) -> StreamWindow | None:
        """Every sample kept (all at the current point: a switch clears them), if ``min_samples``
        or more."""
        if len(self.latencies) < min_samples:
            return None
        lat = np.array([v for _, v in self.latencies])
        span_s = max(self.latencies[-1][0] - self.latencies[0][0], 1e-6)
        return StreamWindow(lat, (len(lat) - 1) / span_s, np.array([t for t, _ in self.latencies]))

    def measure_service(self, window: StreamWindow) -> Measured:
        """The window's service times (waiting taken out) and queue; the stream's jitter ratio
        and queue shape follow them."""
        service = measure(window.finish_s, window.latencies_s, self.config.percentile, window.rate_hz, self.queue)
        self.jitter_ratio, self.queue = service.jitter_ratio, service.shape
        return service

    def measured_percentile_s(self, window: StreamWindow) -> float:
        return float(np.percentile(window.latencies_s, self.config.percentile))

    def judged_percentile_s(self, window: StreamWindow | None, calibration: StreamWindow | None) -> float | None:
        """The measured percentile; before the window is full, the worst sample of the
        calibration window (a slow stream judged before it fills its window); None: neither."""
        if window is not None:
            return self.measured_percentile_s(window)
        return None if calibration is None else float(calibration.latencies_s.max())

    def note_inference(self, latency_s: float, timestamp_s: float = 0.0, counted: bool = True) -> None:
        """``counted`` False: in a workload change's grace, the change's (not the budget's)."""
        self.inferences += 1
        self.late_now = latency_s > self.config.target_latency_s
        self.late += self.late_now
        self.late_run_from_s = min(self.late_run_from_s, timestamp_s - latency_s) if self.late_now else math.inf
        if self.late_now:
            self.last_late_s = max(self.last_late_s, timestamp_s)
            if counted:
                self.late_at_s.append(timestamp_s)
                if len(self.late_at_s) > LATE_KEPT:
                    self.late_at_s.popleft()

    def note_miss(self, now_s: float) -> None:
        """A miss judged now on the inferences at the current point (a level, not a burst)."""
        self.missed_s = now_s
        self.missed_from_s = min((t for t, v in self.latencies if v > self.config.target_latency_s), default=now_s)

    def add_judged(self, timestamp_s: float, latency_s: float, memory_s: float, in_grace: bool = False) -> None:
        """An inference judged at the current point (the first one since a move: a new point);
        the bursts seen count for about ``memory_s``; ``in_grace``: it started in a workload
        change's grace (a backlog it begins is the change's: BurstMeter)."""
        if not self.latencies:
            self.bursts.reset()
            self.stay_samples, self.stay_late, self.stay = 0, 0, self.stay + 1
        self.stay_samples += 1
        # late ones in a row count once (a burst's backlog: BurstMeter's, as in queueing.tail_share_seen)
        self.stay_late += latency_s > self.config.target_latency_s >= (self.latencies[-1][1] if self.latencies else 0.0)
        self.latencies.append((timestamp_s, float(latency_s)))
        self.bursts.add(float(latency_s), timestamp_s, memory_s, in_grace)

    def late_budget(self, now_s: float, window_s: float, stay_s: float = 0.0,
                    counted_from_s: float = -math.inf) -> float:
        """The late inferences this stream may still have while at most TAIL_SHARE of its
        inferences over any ``window_s`` are late (what its target promises): what a move that
        may miss can spend. The streams the governor started with borrow from the window ahead
        (they are the deployment's); one that joined a running mix (``counted_since_s``) only
        as long again as it has been counted, or ``stay_s`` if longer: it may leave as soon as
        it came, and its promise covers the inferences it had. Late ones before
        ``counted_from_s`` are not counted (another workload's). Asking never forgets any: a
        slow stream's budget is asked over a longer window than the late window (verdicts.py)."""
        late = sum(t >= max(now_s - window_s, counted_from_s) for t in self.late_at_s)
        counted_s = max(now_s - self.counted_since_s, 0.0)
        window_s = min(window_s, counted_s + max(counted_s, stay_s))
        return TAIL_SHARE * self.rate_hz() * window_s - late

    def over(self) -> list[bool]:
        """Each sample judged here, in order: over the target or not."""
        return [v > self.config.target_latency_s for _, v in self.latencies]

    def violation(self, limit_s: float, min_samples: int, escape_settle_s: float = 0.0,
                  pooled: bool = False, late_budget: float = math.inf) -> float | None:
        """Measured percentile / limit when the samples judged here show, with evidence, that
        the target is missed (verdicts.misses_target: a burst is not a tail; a burst still going
        whose backlog drains before an escape would show, ``escape_settle_s`` (0: none is), is no
        miss within chance: verdicts.burst_going), else None. The ratio is at least target /
        limit: the choice then looks for a point that much faster. ``pooled``: the streams' misses
        together show it (verdicts.pooled_miss). A backlog going that, drained here, makes more
        late inferences than ``late_budget`` (the stream's left; one is always room, as in
        joint.burst_room) and outlasts an escape is a miss at its first late sample, judged by
        its latency (the queued work shrinks with the service time) and priced as a burst: near
        saturation it drains at ``1 - utilisation`` (nx_rate_changes_p30@20: a 70 ms outlier at
        a 98 %-busy point, held 190 ms, 24 late)."""
        target_s = self.config.target_latency_s
        lat = np.array([v for _, v in self.latencies])
        over = self.over()
        rate_hz = self.rate_hz()
        outlasts_escape = self.bursts.drain_s(rate_hz) > escape_settle_s
        if len(lat) and lat[-1] > target_s and not self.queue.self_paced and outlasts_escape \
                and self.bursts.late_ahead(rate_hz, target_s) > max(late_budget, 1.0):
            self.bursts.count_going()
            return float(lat[-1]) / limit_s
        if not len(lat) or not (pooled or misses_target(over, self.config.percentile, min_samples)):
            return None
        if not outlasts_escape and burst_going(over, self.config.percentile, min_samples, self.bursts.run):
            return None
        return max(float(np.percentile(lat, self.config.percentile)), target_s) / limit_s

    def cut_burst(self, min_samples: int) -> bool:
        """The samples judged here miss only by a run of outliers still going after the point
        met (verdicts.cut_burst): a burst or a level."""
        return cut_burst(self.over(), self.config.percentile, min_samples, self.bursts.run)

    def status(self, window: StreamWindow | None, predicted_latency_s: float = math.nan,
               predicted_latency_std_s: float = math.nan) -> StreamStatus:
        if window is None:
            measured, violations, samples, rate = math.nan, 0.0, len(self.latencies), math.nan
        else:
            measured = self.measured_percentile_s(window)
            violations = float(np.mean(window.latencies_s > self.config.target_latency_s))
            samples, rate = len(window.latencies_s), window.rate_hz
        return StreamStatus(self.name, self.model_id, self.model_note, self.active, self.config.target_latency_ms,
                            self.config.percentile, measured, predicted_latency_s, predicted_latency_std_s,
                            violations, samples, rate,
                            bool(math.isfinite(measured) and measured <= self.config.target_latency_s),
                            self.inferences, self.late)


def clear_windows(streams: Iterable[Stream], power: PowerWindow) -> None:
    """Forget what the windows hold (another point, another mix of work)."""
    for s in streams:
        s.latencies.clear()
    power.clear()


def engine(streams: Iterable[Stream], s: Stream) -> list[Stream]:
    """``s`` and the other phases of its language model (StreamConfig.engine); ``[s]`` for a
    stream that is no phase."""
    return [o for o in streams if s.config.engine and o.config.engine == s.config.engine] or [s]


def returned(streams: Iterable[Stream], s: Stream) -> None:
    """``s`` publishes again: it is active, and so are the phases of its language model seen
    before (they left together, between requests: one workload comes back, not one per phase,
    each clearing the windows of the phase before it, such as the time to first token just
    taken). A phase never seen joins when it first publishes, as any stream does."""
    for o in engine(streams, s):
        if o is s or o.last_seen_s > -math.inf:
            o.active = True


def silent(streams: list[Stream], now_s: float, stream_timeout_s: float) -> list[Stream]:
    """The streams silent beyond their ``silence_limit_s``; a language model's phases leave
    together (decode is silent between answers: StreamConfig.engine)."""
    return [s for s in streams if all(now_s - o.last_seen_s > o.silence_limit_s(stream_timeout_s)
                                      for o in engine(streams, s))]


def uncount_told(s: Stream) -> float | None:
    """When a change ``s``'s caller told (a model switch) began, if its frames showed it before
    the call: the start of the first of ``s``'s latest inferences late in a row (the new model's
    first frames end before its id reaches the governor); those are the change's, as the
    criteria of governor-eval count a phase's first ``change_grace_s`` from its start, and are
    uncounted. None: the latest one was on time (the change is dated from the call)."""
    if not s.late_now:
        return None
    s.late_at_s = deque(t for t in s.late_at_s if t < s.late_run_from_s)
    return s.late_run_from_s


def uncount_since(streams: list[Stream], since_s: float, misses_within_s: float = 0.0) -> float:
    """When a change seen only in the governor's own errors began: the first late inference of
    ``streams`` counted since ``since_s`` (the start of the samples that showed it), or since the
    first late one of a miss judged on them at most ``misses_within_s`` before (a heavier work's
    first sign is often a miss at the point held, escaped to a faster one, before a point measured
    to meet misses and tells the change: agx_interference@9 dated it 10.77 s, its late ones from
    10.0 s on, and the grace it earned ran 0.77 s past the change's). Those from then on are the
    change's, as a change told is (the criteria of governor-eval count neither), and are
    uncounted. -inf where none was late: such a change is paid nothing and earns no grace."""
    since_s = min([since_s] + [s.missed_from_s for s in streams if s.missed_s >= since_s - misses_within_s])
    late_s = [t for s in streams for t in s.late_at_s if t >= since_s]
    if not late_s:
        return -math.inf
    changed_s = min(late_s)
    for s in streams:
        s.late_at_s = deque(t for t in s.late_at_s if t < changed_s)
    return changed_s
