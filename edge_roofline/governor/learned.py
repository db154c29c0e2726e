"""Everything the governor has learned, in one place: how long each kind of move takes to settle
(moves.py), the verdicts on each point under the current workload and mix of streams
(findings.py, verdicts.py), and the calibration of the shared power model and of each stream's
latency predictor from the windows measured at each point."""

from __future__ import annotations

import math
from typing import Callable

from edge_roofline.platforms.base import OperatingPoint
from edge_roofline.roofline.devices import DeviceSpec

from .config import GovernorConfig
from .findings import Findings, MixMemory
from .joint import JointEnergy, contention, stream_loads, uncontended
from .moves import SettleTimes
from .streams import Stream


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

    def calibrate(self, config: GovernorConfig, point: OperatingPoint, unvisited: bool, now_s: float,
                  active: list[Stream], windows, power_w: float, surprised: Callable[[list[Stream], bool], None],
                  rate_changed: Callable[[], None]) -> None:
        """Each measured window feeds its stream's predictor (the contention it saw taken out)
        and, once every active stream has one, the shared power model. ``unvisited``: ``point``
        had not been measured under this workload before the move to it. ``surprised(streams,
        slower)``: their work changed unannounced; ``rate_changed()``: an input rate moved far
        enough to re-rank the points."""
        measured = [s for s in active if windows[s.name] is not None]
        first_here = any(s.name not in self.calibrated_here for s in measured)
        if not measured or (not first_here and now_s - self.last_calibration_s < config.calibration_interval_s):
            return
        self.last_calibration_s = now_s
        loads = stream_loads(point, [(s, windows.get(s.name)) for s in active])
        stretches = dict(zip((s.name for s in active), contention(loads)[0]))
        gpu_s = {load.name: load.gpu_time_s for load in loads}
        observed = []
        for s in measured:
            w = windows[s.name]
            lat, rate_hz = w.latencies_s, w.rate_hz
            mean = uncontended(float(lat.mean()), gpu_s[s.name], stretches[s.name])
            s.jitter_ratio = max(1.0, s.measured_percentile_s(w) / float(lat.mean()))
            expected = s.predictor.predict(point, rate_hz)
            before = expected.latency_s
            if s.name not in self.calibrated_here and unvisited:
                # The first window at a point: how wrong the model was where it had not looked.
                s.model_rel_error = 0.5 * s.model_rel_error + 0.5 * abs(mean / before - 1)
            # The work changed: a window far from the prediction, beyond the model's own
            # uncertainty, where the model has looked (at a point it had not measured the gap is
            # its error; in a stream's first window under a new mix, the contention model's).
            elif s.name in self.calibrated_in_mix and s.predictor.observations >= 3 and abs(mean - before) > max(
                    config.workload_change_rel * before, 3.0 * expected.latency_std_s):
                surprised([s], mean > before)
            last_rate = s.calibrated_rate_hz
            if last_rate is not None and abs(rate_hz / last_rate - 1) > config.rate_change_rel:
                rate_changed()  # the energy ranking moves with the rate
            s.calibrated_rate_hz = rate_hz
            s.predictor.update(point, mean, input_rate_hz=rate_hz, samples=len(lat), latency_var_s2=float(lat.var()))
            observed.append((s.predictor, mean, rate_hz))
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
        self.energy.update(point, power_w, observed)
