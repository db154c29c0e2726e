"""Measure a model at each operating point: apply the point through the ``Platform``, wait for
the clocks to settle, measure idle power, warm up, then run back to back and record the latency
distribution and the energy per inference (rail power sampled and integrated trapezoidally by
``telemetry.sampler``, divided by the inferences in the window). Optionally a per-layer
profile. Each point is written to the store as it finishes; a point that fails is recorded
with its error and the sweep goes on. The point found at start is put back at the end, on
Ctrl-C and on any error.

Time is injected: on a real device the wall clock with a background sampling thread, on the
virtual Jetson the board's simulated time (``BoardClock``) sampled in step with the
inferences, so a 96-point sweep takes seconds.
"""

from __future__ import annotations

import math
import sys
import time
from dataclasses import asdict, dataclass
from typing import Callable, TextIO

import numpy as np

from edge_roofline.backends.base import InferenceBackend
from edge_roofline.clock import Clock
from edge_roofline.platforms.base import OperatingPoint, Platform
from edge_roofline.telemetry.sampler import PowerSampler, TelemetryWindow

from .store import PointResult, Store, SweepRecord, now_wall_s


class SweepAborted(RuntimeError):
    """No point could be measured, or too many failed in a row: something is wrong with the setup,
    not one point."""


@dataclass(frozen=True)
class SweepSettings:
    runs: int = 200  # measured inferences per point (at least; see min_window_s)
    warmup: int = 20  # inferences run and discarded after the settle wait
    settle_s: float = 1.0  # wait after apply for clocks (and nvpmodel) to settle
    idle_s: float = 1.0  # idle power window per point, after the settle wait
    min_window_s: float = 2.0  # keep running until the energy window is at least this long
    sample_rate_hz: float = 200.0  # power sampling (INA3221 updates every few ms)
    layer_runs: int = 0  # profiled runs per point for per-layer times (0: no profile)
    max_consecutive_failures: int = 5

    def __post_init__(self) -> None:
        # inf passes >= 0 but a point would wait forever; NaN fails every comparison
        checks = (("runs", self.runs >= 1), ("warmup", self.warmup >= 0),
                  ("settle_s", 0 <= self.settle_s < math.inf), ("idle_s", 0 <= self.idle_s < math.inf),
                  ("min_window_s", 0 <= self.min_window_s < math.inf),
                  ("sample_rate_hz", 0 < self.sample_rate_hz < math.inf),
                  ("layer_runs", self.layer_runs >= 0),
                  ("max_consecutive_failures", self.max_consecutive_failures >= 1))
        bad = [name for name, ok in checks if not ok]
        if bad:
            raise ValueError(f"invalid sweep settings: {', '.join(f'{b}={getattr(self, b)!r}' for b in bad)} "
                             "(counts must be >= 0, runs >= 1, times finite and >= 0, the sample rate finite and > 0)")

    def to_dict(self) -> dict:
        return asdict(self)

    def point_time_s(self, latency_s: float) -> float:
        """Device time one point takes at ``latency_s`` per inference (for ETAs and planning)."""
        return (self.settle_s + self.idle_s + self.warmup * latency_s
                + max(self.runs * latency_s, self.min_window_s) + self.layer_runs * latency_s)


class PowerMeter:
    """Energy over a measured window from ``PowerSampler``: ``threaded`` samples on a
    background thread (wall time); otherwise ``poll()`` samples whenever a period has passed
    on the injected clock (simulated time, where no thread could keep pace)."""

    def __init__(self, platform: Platform, clock: Clock, rate_hz: float, threaded: bool) -> None:
        self.sampler = PowerSampler(platform, rate_hz, clock)
        self.clock = clock
        self.threaded = threaded
        self._next_s = 0.0

    def __enter__(self) -> "PowerMeter":
        if self.threaded:
            self.sampler.start()
        return self

    def __exit__(self, *exc) -> None:
        self.sampler.stop()

    def poll(self) -> None:
        now = self.clock.now_s()
        if not self.threaded and now >= self._next_s:
            self.sampler.sample_once()
            self._next_s = max(self._next_s + self.sampler.period_s, now)

    def begin(self) -> None:
        """Start a window now (what came before is dropped)."""
        if not self.threaded:
            self.sampler.sample_once()
            self._next_s = self.clock.now_s() + self.sampler.period_s
        self.sampler.take_window()

    def end(self) -> TelemetryWindow:
        if not self.threaded:
            self.sampler.sample_once()
        return self.sampler.take_window()

    def idle(self, duration_s: float) -> float:
        """Average power (W) while idle for ``duration_s``; NaN without a power sensor."""
        if duration_s <= 0:
            return math.nan
        self.begin()
        end_s = self.clock.now_s() + duration_s
        if self.threaded:
            self.clock.sleep(duration_s)
        else:
            while self.clock.now_s() < end_s:
                self.clock.sleep(min(self.sampler.period_s, end_s - self.clock.now_s()))
                self.poll()
        return self.end().average_power_w


class Progress:
    """One status line on stderr: done/total, failures, the point, and an ETA from the wall time
    of the points measured so far. Rewritten in place on a terminal, one line per point else."""

    def __init__(self, total: int, label: str, stream: TextIO | None = None, width: int = 24) -> None:
        self.total, self.label, self.width = total, label, width
        self.stream = stream if stream is not None else sys.stderr
        self.start = time.monotonic()
        self.done = self.failed = 0
        self.tty = hasattr(self.stream, "isatty") and self.stream.isatty()

    def update(self, point_name: str) -> None:
        filled = int(self.width * self.done / max(self.total, 1))
        elapsed = time.monotonic() - self.start
        eta = elapsed / self.done * (self.total - self.done) if self.done else math.nan
        eta_text = "--" if math.isnan(eta) else _duration(eta)
        line = (f"{self.label} [{'#' * filled}{'.' * (self.width - filled)}] {self.done}/{self.total}"
                f"{f' ({self.failed} failed)' if self.failed else ''} elapsed {_duration(elapsed)} "
                f"ETA {eta_text}  {point_name}")
        self.stream.write(("\r\x1b[K" if self.tty else "") + line + ("" if self.tty else "\n"))
        self.stream.flush()

    def finish(self) -> None:
        if self.tty:
            self.stream.write("\n")
            self.stream.flush()


def _duration(seconds: float) -> str:
    seconds = int(round(seconds))
    return f"{seconds // 3600}h{seconds % 3600 // 60:02d}m" if seconds >= 3600 else \
        f"{seconds // 60}m{seconds % 60:02d}s"


@dataclass(frozen=True)
class SweepSummary:
    measured: int
    failures: tuple[PointResult, ...]  # the points that failed, in sweep order (each with its error)
    skipped: int  # finished before (resume)
    wall_s: float
    original_point: str

    @property
    def failed(self) -> int:
        return len(self.failures)


class Sweep:
    """Sweeps one loaded model over points on one platform. ``cost`` is the model's
    ``ModelCost`` (FLOPs and DRAM bytes are recorded for energy-roofline fits)."""

    def __init__(self, platform: Platform, backend: InferenceBackend, store: Store, cost, *,
                 clock: Clock, settings: SweepSettings, threaded_sampling: bool,
                 precision: str, progress_stream: TextIO | None = None,
                 extra_settings: dict | None = None,
                 after_point: Callable[[PointResult], None] | None = None) -> None:
        self.platform, self.backend, self.store, self.cost = platform, backend, store, cost
        self.clock, self.settings, self.precision = clock, settings, precision
        self.threaded_sampling = threaded_sampling
        self.progress_stream = progress_stream
        self.extra_settings = dict(extra_settings or {})  # recorded with the settings (model source)
        self.after_point = after_point  # called after each stored point (tests inject faults here)

    @property
    def model(self) -> str:
        return self.cost.model

    def run(self, points: list[OperatingPoint], *, resume: bool = False) -> SweepSummary:
        ident = self.platform.identity()
        self.store.bind_device(ident.catalogue_key or ident.model, ident.kind, ident.simulated)
        original = self.platform.current_operating_point()
        self.store.begin_sweep(SweepRecord(self.model, self.precision, self.settings.to_dict() | self.extra_settings,
                                           self.cost.total_flops, self.cost.total_bytes, now_wall_s(),
                                           0.0, original.name), resume=resume)
        finished = self.store.finished_names(self.model, self.precision)
        todo = [p for p in points if p.name not in finished]
        progress = Progress(len(todo), f"sweep {self.model}", self.progress_stream)
        start = time.monotonic()
        failures: list[PointResult] = []
        failed_in_row = 0
        skipped = len(finished & {p.name for p in points})
        feeds = self.backend.dummy_feeds()
        try:
            with PowerMeter(self.platform, self.clock, self.settings.sample_rate_hz,
                            self.threaded_sampling) as meter:
                for point in todo:
                    progress.update(point.name)
                    result = self._measure_safely(point, meter, feeds)
                    self.store.put(result)
                    progress.done += 1
                    progress.failed += not result.ok
                    if not result.ok:
                        failures.append(result)
                    failed_in_row = 0 if result.ok else failed_in_row + 1
                    if self.after_point is not None:
                        self.after_point(result)
                    if failed_in_row >= self.settings.max_consecutive_failures:
                        break
                else:
                    progress.update("done")
            # Nothing measured leaves nothing to report: the sweep failed, with the first point's reason.
            if failures and len(failures) == progress.done and not skipped:
                first = failures[0]
                raise SweepAborted(f"no point could be measured ({len(failures)} tried; the first, {first.name}, "
                                   f"failed: {first.error}); fix the setup and rerun with --resume")
            if failed_in_row >= self.settings.max_consecutive_failures:
                raise SweepAborted(f"{failed_in_row} points failed in a row (last: {failures[-1].name}: "
                                   f"{failures[-1].error}); fix the setup and rerun with --resume")
        finally:
            progress.finish()
            try:
                self.platform.restore()  # the device is never left at a sweep point
            finally:
                self.store.add_sweep_time(self.model, self.precision, time.monotonic() - start)
        return SweepSummary(progress.done - len(failures), tuple(failures), skipped, time.monotonic() - start,
                            original.name)

    def _measure_safely(self, point: OperatingPoint, meter: PowerMeter, feeds) -> PointResult:
        wall_start = time.monotonic()
        try:
            return self._measure(point, meter, feeds, wall_start)
        except Exception as exc:  # noqa: BLE001 - any failure at one point is that point's result
            return PointResult(self.model, self.precision, point, "failed",
                               error=f"{type(exc).__name__}: {exc}",
                               wall_s=time.monotonic() - wall_start, measured_at=now_wall_s())

    def _measure(self, point: OperatingPoint, meter: PowerMeter, feeds, wall_start: float) -> PointResult:
        s, clock, backend = self.settings, self.clock, self.backend
        self.platform.apply(point)
        clock.sleep(s.settle_s)
        idle_power_w = meter.idle(s.idle_s)
        for _ in range(s.warmup):
            backend.run(feeds)
        latencies_s = []
        meter.begin()
        window_start = clock.now_s()
        while len(latencies_s) < s.runs or clock.now_s() - window_start < s.min_window_s:
            latencies_s.append(backend.run(feeds).latency_s)
            meter.poll()
        window = meter.end()
        layer_times_s = None
        if s.layer_runs:
            layer_times_s = dict(backend.profile(feeds, runs=s.layer_runs).layer_times_s)
        lat_ms = 1e3 * np.asarray(latencies_s)
        p50, p95, p99 = np.percentile(lat_ms, [50, 95, 99])
        energy_j = window.window_energy_j / len(latencies_s)
        return PointResult(
            self.model, self.precision, point, "ok", runs=len(latencies_s),
            latency_ms_mean=float(lat_ms.mean()), latency_ms_std=float(lat_ms.std()),
            latency_ms_p50=float(p50), latency_ms_p95=float(p95), latency_ms_p99=float(p99),
            energy_per_inference_j=_finite_or_none(energy_j), power_w=_finite_or_none(window.average_power_w),
            idle_power_w=_finite_or_none(idle_power_w), window_s=window.duration_s,
            power_samples=window.samples, layer_times_s=layer_times_s,
            wall_s=time.monotonic() - wall_start, measured_at=now_wall_s())


def _finite_or_none(value: float) -> float | None:
    return float(value) if value is not None and math.isfinite(value) else None


@dataclass
class Rig:
    """What a sweep drives: a platform, a loaded backend, the clock and how to sample power."""

    platform: Platform
    backend: InferenceBackend
    clock: Clock
    threaded_sampling: bool
    simulated: bool
    device_key: str | None

    def close(self) -> None:
        try:
            self.backend.close()
        finally:
            self.platform.close()


def virtual_rig(device: str, precision: str, *, mode: str | int | None = None, seed: int = 0,
                perturbation: float = 0.0) -> Rig:
    """A virtual Jetson on simulated time (SIMULATION): board, platform, virtual backend with
    outputs left uncomputed (only time and energy matter here). ``mode`` defaults to the
    device's max-clock preset, so the caps grid spans the whole clock range."""
    from edge_roofline.backends.virtual_backend import VirtualBackend
    from edge_roofline.roofline.ceilings import max_clock_preset
    from edge_roofline.roofline.devices import get_device
    from edge_roofline.virtual.board import BoardClock, VirtualBoard
    from edge_roofline.virtual.platform import VirtualPlatform

    spec = get_device(device)
    mode_id = spec.preset(mode).mode_id if mode is not None else max_clock_preset(spec).mode_id
    board = VirtualBoard(spec, mode_id=mode_id, seed=seed, perturbation=perturbation)
    return Rig(VirtualPlatform(board), VirtualBackend(board=board, compute_outputs=False, precision=precision),
               BoardClock(board), threaded_sampling=False, simulated=True, device_key=spec.key)


def device_rig(spec: str, backend_kind: str, precision: str, *, sysfs_root: str = "/",
               calibration_cache: str | None = None) -> Rig:
    """A real device on wall time: ``jetson`` or ``nvml`` through ``runtime.create_platform``
    and the ``tensorrt`` (int8 from ``calibration_cache``) or ``ort`` backend; power sampled on a
    background thread."""
    from edge_roofline.backends import create_backend
    from edge_roofline.platforms import create_platform

    platform = create_platform(spec, sysfs_root=sysfs_root)
    try:
        options = ({} if backend_kind in ("ort", "onnxruntime") else
                   {"precision": precision, "calibration_cache": calibration_cache})
        backend = create_backend(backend_kind, **options)
    except BaseException:
        platform.close()
        raise
    ident = platform.identity()
    return Rig(platform, backend, Clock(), threaded_sampling=True, simulated=ident.simulated,
               device_key=ident.catalogue_key)
