"""Power sampling and energy integration over any platform.

A background thread samples the platform at the power sensor's own rate (the INA3221 converts
every ``update_interval`` ms; reading faster returns the same value), capped at ``rate_hz``
(200 Hz by default; also the rate where the sensor's is unknown), and integrates total power
with the trapezoidal rule (jtop's 0.5 s exponential average is not an energy integral).
Consumers take *windows*: everything
measured since the previous window, so a 20 Hz publisher gets exact per-window energy.

A window the publisher takes holds a reading whenever the sampler is delivering them. A ROS timer
that ran late fires again at once to catch up, and a process short of CPU (another process
starting on a loaded machine) finds its sampler thread held up too; at the sensor's 13 ms such a
window held no reading and came out ``avg=nan rate=0.0``, which sent the governor to its
fallback (issue 23: twice in 50 s). So a window without a reading stays open (the publisher
skips that tick; the next window covers its time, so no energy is lost) until the sampler has
been quiet for longer than a working one can be, ``quiet_limit_s``; only then does it come out
empty, and the stream's diagnostics say why. The publisher never reads the sensor itself: a hung
bus must stall the sampler thread only.
"""

from __future__ import annotations

import math
import threading
import time
from dataclasses import dataclass, replace

from edge_roofline.clock import Clock
from edge_roofline.platforms.base import Platform, PlatformError, TelemetrySample


@dataclass(frozen=True)
class TelemetryWindow:
    latest: TelemetrySample | None
    start_s: float
    end_s: float
    samples: int
    window_energy_j: float  # NaN when no power was measured in the window
    total_energy_j: float
    sample_rate_hz: float
    errors: int
    last_error: str
    power_covered_s: float = 0.0  # the time the energy integral covers (gaps in power excluded)

    @property
    def duration_s(self) -> float:
        return self.end_s - self.start_s

    @property
    def average_power_w(self) -> float:
        """Over the time power was measured: a rail lost for part of the window must not read
        as a power drop, nor a window without power as 0 W."""
        return self.window_energy_j / self.power_covered_s if self.power_covered_s > 0 else math.nan


class EnergyIntegrator:
    """Trapezoidal integral of power over time; a gap in power readings (None or NaN)
    breaks the trapezoid instead of bridging it with a guess."""

    def __init__(self) -> None:
        self.total_energy_j = 0.0
        self._last: tuple[float, float] | None = None

    def add(self, timestamp_s: float, power_w: float | None) -> tuple[float, float]:
        """Add a reading; returns the energy added (J) and the time it covers (s)."""
        if power_w is None or not math.isfinite(power_w):
            self._last = None
            return 0.0, 0.0
        added, covered_s = 0.0, 0.0
        if self._last is not None and timestamp_s > self._last[0]:
            covered_s = timestamp_s - self._last[0]
            added = 0.5 * (power_w + self._last[1]) * covered_s
            self.total_energy_j += added
        self._last = (timestamp_s, power_w)
        return added, covered_s


class PowerSampler:
    def __init__(self, platform: Platform, rate_hz: float = 200.0, clock: Clock | None = None,
                 full_rate_hz: float = 10.0) -> None:
        """Power is read (``Platform.sample_power``: rails only) at the sensor's update rate, at
        most ``rate_hz``; a full sample (clocks, loads, temperatures: many more files) at
        ``full_rate_hz``. ``rate_hz`` / ``rate_reason`` say what is in force."""
        if not rate_hz > 0 or not full_rate_hz > 0:
            raise ValueError(f"sampling rates must be > 0 Hz, got {rate_hz} and {full_rate_hz}")
        self.platform = platform
        interval_s = platform.power_update_interval_s()
        if interval_s is None:
            self.rate_reason = f"{rate_hz:.0f} Hz cap (the power sensor's update interval is unknown)"
        elif 1.0 / interval_s < rate_hz:
            rate_hz = 1.0 / interval_s
            self.rate_reason = f"the power sensor's update interval of {interval_s * 1e3:.0f} ms"
        else:
            self.rate_reason = f"{rate_hz:.0f} Hz cap (the sensor updates every {interval_s * 1e3:.1f} ms)"
        self.rate_hz = rate_hz
        self.period_s = 1.0 / rate_hz
        # The longest a working sampler goes without a reading: three sensor periods, and a
        # quarter second for a process short of CPU (the governor's telemetry timeout is 1 s).
        self.quiet_limit_s = max(3 * self.period_s, 0.25)
        self.full_period_s = 1.0 / min(full_rate_hz, rate_hz)
        self._last_full: TelemetrySample | None = None
        self._last_full_s = -math.inf  # on this sampler's clock
        self.clock = clock or Clock()
        self._integrator = EnergyIntegrator()
        self._lock = threading.Lock()
        self._stop = threading.Event()
        self._thread: threading.Thread | None = None
        self._reset_window(self.clock.now_s())
        self._latest_power: TelemetrySample | None = None
        self._has_power = False

    def _reset_window(self, now_s: float) -> None:
        self._window_start_s = now_s
        self._window_samples = 0
        self._window_energy_j = 0.0
        self._window_covered_s = 0.0
        self._window_errors = 0
        self._window_last_error = ""

    def sample_once(self) -> None:
        """Take one reading and integrate it; errors are counted, never raised (a missing
        sysfs file must not kill the monitor)."""
        now_s = self.clock.now_s()
        full = now_s - self._last_full_s >= self.full_period_s  # -inf until the first full sample
        try:
            sample = self.platform.sample() if full else self.platform.sample_power()
        except (PlatformError, OSError, ValueError) as exc:
            with self._lock:
                self._window_errors += 1
                self._window_last_error = f"{type(exc).__name__}: {exc}"
            return
        with self._lock:
            added, covered_s = self._integrator.add(sample.timestamp_s, sample.total_power_w)
            self._has_power = self._has_power or sample.total_power_w is not None
            self._window_energy_j += added
            self._window_covered_s += covered_s
            self._window_samples += 1
            if full:
                self._last_full, self._last_full_s = sample, now_s
            self._latest_power = sample

    def _latest(self) -> TelemetrySample | None:
        """The latest power with the clocks and temperatures of the last full sample (merged
        when a window is taken, not at every fast reading); rails the fast path did not read
        (a platform may read only the total-power rails there) come from the full sample."""
        power, full = self._latest_power, self._last_full
        if power is None or power is full:
            return power
        rails = {r.name: r for r in full.rails if r.name not in power.missing_rails}
        rails.update((r.name, r) for r in power.rails)
        return replace(full, timestamp_s=power.timestamp_s, rails=tuple(rails.values()),
                       total_power_w=power.total_power_w, source=power.source, missing_rails=power.missing_rails)

    def take_window(self, defer_empty: bool = False) -> TelemetryWindow | None:
        """Everything measured since the last window. With ``defer_empty``, a window that holds
        no reading yet (no sample, no error) stays open while younger than ``quiet_limit_s``:
        None, and the next call's window covers its time."""
        now_s = self.clock.now_s()
        with self._lock:
            duration_s = now_s - self._window_start_s
            if defer_empty and not (self._window_samples or self._window_errors) and duration_s < self.quiet_limit_s:
                return None
            window = TelemetryWindow(
                latest=self._latest(), start_s=self._window_start_s, end_s=now_s,
                samples=self._window_samples,
                window_energy_j=self._window_energy_j if self._window_covered_s > 0 else math.nan,
                total_energy_j=self._integrator.total_energy_j if self._has_power else math.nan,
                sample_rate_hz=self._window_samples / duration_s if duration_s > 0 else 0.0,
                errors=self._window_errors, last_error=self._window_last_error,
                power_covered_s=self._window_covered_s)
            self._reset_window(now_s)
        return window

    # ---- background thread ----------------------------------------------------------
    def start(self) -> None:
        if self._thread is not None:
            return
        self._stop.clear()
        self._reset_window(self.clock.now_s())
        self._thread = threading.Thread(target=self._run, name="power-sampler", daemon=True)
        self._thread.start()

    def stop(self) -> None:
        self._stop.set()
        if self._thread is not None:
            self._thread.join(timeout=2.0)
            self._thread = None

    def _run(self) -> None:
        next_s = self.clock.now_s()
        while not self._stop.is_set():
            self.sample_once()
            next_s += self.period_s
            delay_s = next_s - self.clock.now_s()
            if delay_s < -self.period_s:  # fell behind (loaded machine): skip, don't burst
                next_s = self.clock.now_s()
            elif delay_s > 0:
                time.sleep(delay_s)  # a plain sleep costs a tenth of Event.wait's wake-up at 200 Hz
