"""One network the governor holds a target for: its measured latencies, its own latency
predictor (the model it serves, calibrated online) and whether it is publishing at all.

A stream that has been silent for ``stream_timeout_s`` leaves the constraint set (a node that
was stopped, a model that is not being run) and comes back with its next inference.
"""

from __future__ import annotations

import math
from collections import deque
from dataclasses import dataclass

import numpy as np

from .config import StreamConfig
from .pointwise import PointwisePredictor
from .predictor import Predictor


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


@dataclass(frozen=True)
class StreamWindow:
    latencies_s: np.ndarray
    rate_hz: float


class Stream:
    def __init__(self, config: StreamConfig) -> None:
        self.config = config
        self.predictor: Predictor | PointwisePredictor | None = None
        self.model_id = ""  # the model the predictor describes ("" before the first one is known)
        self.model_note = ""  # why there is no roofline for it (learned by measuring), if so
        self.latencies: deque[tuple[float, float]] = deque()  # (t, latency) at the current point
        # Latencies inside the settle time after a switch that ran wholly after it: too early to
        # calibrate with, but a miss among them is a miss of the new point.
        self.early: list[float] = []
        self.last_seen_s = -math.inf
        self.active = False
        self.jitter_ratio = 1.0
        # How far off the predictor was at the points it had not measured yet (a running mean
        # of |measured / predicted - 1| at each point's first window).
        self.model_rel_error = 0.0
        self.calibrated_rate_hz: float | None = None

    @property
    def name(self) -> str:
        return self.config.name

    def window(self, now_s: float, window_s: float, min_samples: int) -> StreamWindow | None:
        """The samples of the last ``window_s``; a stream too slow to give ``min_samples`` in
        that time (a 1 Hz language model) keeps its last ``min_samples``, all taken at the
        current point (a switch clears them)."""
        horizon = now_s - window_s
        while len(self.latencies) > min_samples and self.latencies[0][0] < horizon:
            self.latencies.popleft()
        if len(self.latencies) < min_samples:
            return None
        lat = np.array([v for _, v in self.latencies])
        span_s = max(self.latencies[-1][0] - self.latencies[0][0], 1e-6)
        return StreamWindow(lat, (len(lat) - 1) / span_s)

    def measured_percentile_s(self, window: StreamWindow) -> float:
        return float(np.percentile(window.latencies_s, self.config.percentile))

    def violation(self, window: StreamWindow | None, limit_s: float, min_samples: int) -> float | None:
        """Measured percentile / limit when the target is missed, else None. Before the window
        is full, a miss is certain once more samples (those inside the settle time that ran
        wholly at this point included) are over the target than the percentile allows in a full
        window: no later sample can bring the percentile back under it."""
        target_s = self.config.target_latency_s
        if window is not None:
            lat = window.latencies_s
        else:
            lat = np.array(self.early + [v for _, v in self.latencies])
            allowed = (1.0 - self.config.percentile / 100.0) * min_samples
            if not len(lat) or np.count_nonzero(lat > target_s) <= allowed:
                return None
        meas = float(np.percentile(lat, self.config.percentile))
        return meas / limit_s if meas > target_s else None

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
                            bool(math.isfinite(measured) and measured <= self.config.target_latency_s))
