"""A virtual Jetson on simulated time: controls (nvpmodel mode, caps, online cores) in, inference
timing, rail power, temperatures and INA3221 readings out. SIMULATION.

``VirtualBoard`` owns a ``BoardState`` (what a sysfs tree shows) and the physics of
``physics.py``. Time only moves when the board is told to run an inference or to advance, so a
scenario runs faster than real time and is reproducible from its seed. The live board
(``live.py``) steps the same object on wall time and renders its tree.
"""

from __future__ import annotations

import math
import random
from collections import deque
from dataclasses import dataclass, replace

from edge_roofline.clock import Clock, SimClock
from edge_roofline.platforms.base import OperatingPoint
from edge_roofline.platforms.jetson.platform import resolved_caps
from edge_roofline.roofline.costs import ModelCost
from edge_roofline.roofline.devices import DeviceSpec, get_device
from edge_roofline.virtual.actuation import Actuation, Actuator, Disturbances, sensor_window_end_s
from edge_roofline.virtual.physics import (Activity, Clocks, Ina3221, InferenceTiming, ThermalModel, inference_timing,
                                           jittered, module_power_w, rail_power_w)
from edge_roofline.virtual.params import PhysicsParams, device_params
from edge_roofline.virtual.state import BoardState

# A background GPU process computes as much as it waits on memory.
_BACKGROUND_COMPUTE_FRACTION = 0.5
_BACKGROUND_DRAM_BPS_PER_UTIL = 20e9


class BoardClock(Clock):
    """A board's simulated time as a ``Clock`` for code that sleeps (a sweep's settle and idle
    waits): sleeping idles the board. (A bare ``SimClock`` would move time on without the
    board, which only moves when told to.)"""

    def __init__(self, board: "VirtualBoard") -> None:
        self.board = board

    def now_s(self) -> float:
        return self.board.now_s

    def sleep(self, duration_s: float) -> None:
        if duration_s > 0:
            self.board.advance(duration_s)


@dataclass(frozen=True)
class InferenceResult:
    """One simulated inference (SIMULATION)."""

    latency_s: float
    energy_j: float  # true module energy over the inference, idle share included
    per_layer_time_s: dict[str, float]
    timing: InferenceTiming
    start_s: float


class VirtualBoard:
    """One virtual Jetson. ``device``: a catalogue key; ``perturbation``: scale every physics
    coefficient randomly by up to this fraction (seeded), a device that differs from the
    catalogue the governor's predictor was built from; ``actuation``: how moving between
    operating points behaves, and the disturbances (default: realistic, see actuation.py)."""

    def __init__(self, device: str | DeviceSpec = "agx_orin_64gb", *, mode_id: int | None = None,
                 seed: int = 0, perturbation: float = 0.0, params: PhysicsParams | None = None,
                 clock: Clock | None = None, ambient_c: float | None = None,
                 actuation: Actuation | None = None) -> None:
        self.device = device if isinstance(device, DeviceSpec) else get_device(device)
        params = params or device_params(self.device)
        if perturbation:
            params = params.perturbed(perturbation, seed)
        if ambient_c is not None:
            params = replace(params, ambient_c=ambient_c)
        self.params = params
        self.clock = clock if clock is not None else SimClock()
        self.rng = random.Random(seed)
        self.state = BoardState.initial(self.device, mode_id)
        self.thermal = ThermalModel(params)
        self.ina = Ina3221(params, random.Random(seed + 1_000_003))  # sensor noise apart from run jitter
        self.background_gpu_load = 0.0
        self.background_cpu_cores = 0.0
        self.energy_j = 0.0  # true module energy since construction (ground truth, not a sensor)
        self.inferences = 0
        self.actuation = actuation or Actuation()
        # Own generators, so the run-to-run jitter draws the same numbers whatever the actuation.
        self.actuator = Actuator(self.actuation, self._caps_now(), random.Random(seed + 2_000_003),
                                 self.device.active_tpcs)
        self.disturbances = Disturbances(self.actuation, random.Random(seed + 3_000_017))
        self._mode_id_seen = self.state.nvpmodel_mode_id
        self.last_gpu_work_s = -math.inf
        self._history: deque[tuple[float, float, dict[str, float]]] = deque()  # (start, end, rails W)
        self._last_activity = Activity()
        self._now_s = self.clock.now_s()
        self._timings: dict[int, tuple[ModelCost, dict]] = {}  # per model: timings per clocks and loads

    # ---- controls (what nvpmodel and the cap files set) ----------------------------------
    @property
    def now_s(self) -> float:
        return self._now_s

    def _caps_now(self) -> Clocks:
        s, d = self.state, self.device
        online = [c for c, up in enumerate(s.cpu_online) if up] or [0]
        return Clocks(cpu_freq_hz=d.snap_cpu_freq(min(s.cpu_max_freq_hz[c] for c in online)),
                      cpu_online_cores=len(online),
                      gpu_freq_hz=d.snap_gpu_freq(max(s.gpu_max_freq_hz, s.gpu_min_freq_hz)),
                      tpc_pg_mask=s.tpc_pg_mask,
                      emc_freq_hz=d.snap_emc_freq(max(s.emc_max_hz, s.emc_min_hz)))

    def controls_changed(self) -> None:
        """Call after writing caps (or the nvpmodel mode) into ``state``: each domain that moved
        runs at the slower of its old and new clock until it settles; a new preset takes longer."""
        preset_change = self.state.nvpmodel_mode_id != self._mode_id_seen
        self._mode_id_seen = self.state.nvpmodel_mode_id
        if "emc" in self.actuator.request(self._caps_now(), self._now_s, preset_change):
            self.disturbances.emc_changed()

    def set_caps(self, *, cpu_online_cores: int | None = None, cpu_max_freq_hz: float | None = None,
                 gpu_max_freq_hz: float | None = None, emc_max_freq_hz: float | None = None) -> None:
        s = self.state
        if cpu_online_cores is not None:
            s.cpu_online = [c < cpu_online_cores for c in range(self.device.cpu_cores)]
        if cpu_max_freq_hz is not None:
            s.cpu_max_freq_hz = [cpu_max_freq_hz] * self.device.cpu_cores
        if gpu_max_freq_hz is not None:
            s.gpu_max_freq_hz = gpu_max_freq_hz
        if emc_max_freq_hz is not None:
            s.emc_max_hz = emc_max_freq_hz
        self.controls_changed()

    def set_mode(self, mode_id: int, point: OperatingPoint | None = None) -> None:
        """What ``nvpmodel -m`` does once accepted (the preset's mask), with the cores and caps
        of ``point`` inside it (None: the preset's own)."""
        preset = self.device.preset(mode_id)
        self.state.nvpmodel_mode_id = preset.mode_id
        self.state.tpc_pg_mask = preset.tpc_pg_mask
        caps = resolved_caps(self.device, preset, point or OperatingPoint(preset.name, preset.mode_id))
        self.set_caps(cpu_online_cores=caps.cpu_online_cores, cpu_max_freq_hz=caps.cpu_max_freq_hz,
                      gpu_max_freq_hz=caps.gpu_max_freq_hz, emc_max_freq_hz=caps.emc_max_freq_hz)

    def silicon_clocks(self) -> Clocks:
        """Clocks in force now, GPU throttled when the junction is over the trip point."""
        c = self.actuator.in_force
        if self.thermal.temperature_c > self.params.throttle_c:
            throttled = self.device.snap_gpu_freq(c.gpu_freq_hz * self.params.throttle_factor)
            c = Clocks(c.cpu_freq_hz, c.cpu_online_cores, throttled, c.tpc_pg_mask, c.emc_freq_hz)
        return c

    # ---- time ----------------------------------------------------------------------------
    def note_gpu_work(self) -> None:
        """Work ran on the GPU just now (devfreq keeps the clock up for a while)."""
        self.last_gpu_work_s = self._now_s

    def gpu_clocked(self) -> bool:
        """The GPU clock is up: background work, or devfreq still holding after our own."""
        return self.background_gpu_load > 0 or self._now_s - self.last_gpu_work_s < self.params.devfreq_hold_s

    def background_dram_bps(self) -> float:
        return self.background_gpu_load * _BACKGROUND_DRAM_BPS_PER_UTIL

    def _idle_activity(self) -> Activity:
        bg = self.background_gpu_load
        return Activity(gpu_util=bg, gpu_compute_fraction=_BACKGROUND_COMPUTE_FRACTION,
                        gpu_clocked=self.gpu_clocked(),
                        dram_bps=self.background_dram_bps(), cpu_busy_cores=self.background_cpu_cores)

    def advance(self, duration_s: float, activity: Activity | None = None) -> float:
        """Move time forward by ``duration_s`` at ``activity`` (idle if None); returns the true
        module energy (J) spent. Steps at settle events so a cap change lands on time."""
        if duration_s < 0 or not math.isfinite(duration_s):
            raise ValueError(f"cannot advance a board by {duration_s} s")
        end_s = self._now_s + duration_s
        energy = 0.0
        while True:
            due = self.actuator.next_settle_s()
            if due is not None and due > end_s:
                due = None
            seg_end = end_s if due is None else max(due, self._now_s)
            energy += self._segment(seg_end - self._now_s, activity)
            if due is None:
                break
            self.actuator.settle(self._now_s)
        if isinstance(self.clock, SimClock) and self.clock.now_s() < self._now_s:
            self.clock.advance(self._now_s - self.clock.now_s())
        return energy

    def advance_to(self, t_s: float) -> float:
        """Idle until ``t_s`` (no-op if it is already past)."""
        return self.advance(max(t_s - self._now_s, 0.0))

    def _segment(self, dt_s: float, activity: Activity | None) -> float:
        if dt_s <= 0:
            return 0.0
        act = activity or self._idle_activity()
        rails = rail_power_w(self.device, self.params, self.silicon_clocks(), act, self.thermal.temperature_c)
        power_w = module_power_w(self.device, rails)
        self.thermal.step(power_w, dt_s)
        start = self._now_s
        self._now_s += dt_s
        self.state.tick(dt_s)
        self._history.append((start, self._now_s, rails))
        # Keep what the sensor's (lagging) conversion window can still cover.
        horizon = self._now_s - self.params.ina_window_s * (self.actuation.sensor_lag_conversions + 1)
        while len(self._history) > 1 and self._history[0][1] < horizon:
            self._history.popleft()
        self._last_activity = act
        self.energy_j += power_w * dt_s
        return power_w * dt_s

    # ---- work ----------------------------------------------------------------------------
    def timing(self, cost: ModelCost, precision: str, clocks: Clocks | None = None) -> InferenceTiming:
        """How long one inference takes at ``clocks`` (default: those in force now); no time passes."""
        return inference_timing(cost, self.device, self.params, clocks or self.silicon_clocks(), precision,
                                self.background_gpu_load, self.background_cpu_cores)

    def prepare_inference(self, cost: ModelCost, precision: str = "fp16") -> tuple[InferenceTiming, Activity]:
        """This run's timing (jitter included) and the board's activity while it runs, at the
        clocks in force now, without running it: for callers that advance time themselves (to
        read the sensors mid-inference); call ``finish_inference()`` once the time has passed."""
        if precision not in self.device.gpu_flops_per_sm_per_clock:
            raise ValueError(f"the virtual {self.device.name} has no {precision!r} precision; "
                             "use fp32, fp16 or int8")
        clocks = self.silicon_clocks()
        # per model (several streams alternate models), then per clocks and loads
        cache = self._timings.setdefault(id(cost), (cost, {}))[1]
        key = (precision, clocks, self.background_gpu_load, self.background_cpu_cores)
        timing = cache.get(key)
        if timing is None:
            timing = cache[key] = self.timing(cost, precision, clocks)
        timing = self.disturbances.apply(jittered(timing, self.params, self.rng))
        lat = timing.latency_s
        activity = Activity(
            gpu_util=min(1.0, timing.gpu_busy_s / lat + self.background_gpu_load),
            gpu_compute_fraction=timing.compute_fraction, gpu_clocked=True,
            dram_bps=timing.dram_bytes / lat + self.background_dram_bps(),
            cpu_busy_cores=min(timing.host_s / lat, 1.0) + self.background_cpu_cores)
        return timing, activity

    def finish_inference(self) -> None:
        self.note_gpu_work()
        self.inferences += 1

    def run_inference(self, cost: ModelCost, precision: str = "fp16", batch: int | None = None) -> InferenceResult:
        """Run one inference (a batch of ``cost.batch``) now; time advances by its latency."""
        timing, activity = self.prepare_inference(cost, precision)
        start = self._now_s
        energy = self.advance(timing.latency_s, activity)
        self.finish_inference()
        return InferenceResult(timing.latency_s, energy, timing.per_layer_time_s(), timing, start)

    # ---- what the sensors show -----------------------------------------------------------
    def true_power_w(self) -> float:
        return module_power_w(self.device, self._history[-1][2]) if self._history else math.nan

    def _window_mean_rails(self) -> dict[str, float]:
        """Mean power per rail over the INA3221 conversion a read now returns (the one ending
        now, or the last the free-running converter finished: ``sensor_lag_conversions``)."""
        window_s = self.params.ina_window_s
        end_s = sensor_window_end_s(self._now_s, window_s, self.actuation.sensor_lag_conversions)
        start = end_s - window_s
        sums: dict[str, float] = {}
        covered = 0.0
        for a, b, rails in self._history:
            overlap = min(b, end_s) - max(a, start)
            if overlap <= 0:
                continue
            covered += overlap
            for name, w in rails.items():
                sums[name] = sums.get(name, 0.0) + w * overlap
        if covered <= 0:  # nothing has run yet: what the board draws idle now
            return rail_power_w(self.device, self.params, self.silicon_clocks(), self._idle_activity(),
                                self.thermal.temperature_c)
        return {name: total / covered for name, total in sums.items()}

    def ina_readings(self) -> dict[str, tuple[float, float]]:
        """One INA3221 conversion of every rail, ending now: (volts, amps), fresh noise."""
        return {rail: self.ina.reading(rail, w) for rail, w in self._window_mean_rails().items()}

    def refresh_state(self) -> BoardState:
        """Bring ``state``'s measurements up to now (sensor readings, clocks, loads, temperatures)."""
        s, c, act = self.state, self.silicon_clocks(), self._last_activity
        s.rails = self.ina_readings()
        s.gpu_cur_freq_hz = c.gpu_freq_hz if self.gpu_clocked() else s.gpu_min_freq_hz
        s.gpu_load = act.gpu_util
        s.emc_rate_hz = c.emc_freq_hz
        peak_bps = self.device.dram_bandwidth_bps(c.emc_freq_hz)
        s.emc_util = min(act.dram_bps / peak_bps, 1.0) if peak_bps else 0.0
        busy_per_core = act.cpu_busy_cores / max(c.cpu_online_cores, 1)
        s.cpu_cur_freq_hz = [c.cpu_freq_hz if up else s.cpu_min_freq_hz[i] for i, up in enumerate(s.cpu_online)]
        s.cpu_busy = [min(busy_per_core, 1.0) if up else 0.0 for up in s.cpu_online]
        s.temperatures_c = self.thermal.zones(act.gpu_util, min(busy_per_core, 1.0))
        return s
