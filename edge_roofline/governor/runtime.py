"""The governor as a long-running process runs it (the ``governor`` node): flat parameters into
a ``GovernorConfig``, the board's lock, the platform opened only after a crash record has been
put back, the model's roofline at the point found (a preset or custom caps), and one restore
path shared by shutdown, disable, signals and errors. ROS-free, so it is tested without rclpy.
"""

from __future__ import annotations

import math
from pathlib import Path

from edge_roofline.clock import Clock
from edge_roofline.governor.board_lock import BoardLock, board_lock_path, previous_record_warning
from edge_roofline.governor.config import ConfigError, GovernorConfig, StreamConfig
from edge_roofline.governor.node_parameters import node_config
from edge_roofline.governor.core import Governor
from edge_roofline.governor.decision import Decision, report
from edge_roofline.governor.model_follow import ModelFollower
from edge_roofline.governor.points import clocks_ceilings, effective_clocks
from edge_roofline.governor.safety import StateStore, recover
from edge_roofline.models.source import load_model_source
from edge_roofline.platforms.base import OperatingPoint, Platform, PlatformError, PlatformInitError
from edge_roofline.platforms.cpu import CpuPlatform
from edge_roofline.roofline.costs import analyze_model
from edge_roofline.roofline.decoder import DecoderCostModel
from edge_roofline.roofline.devices import get_device
from edge_roofline.roofline.model import RooflineAnalysis, analyze_roofline
from edge_roofline.platforms import create_platform

STATE_FILE = "edge_roofline/governor_state.json"
# (new tokens, context) a phase stream's prior is costed at: it gives the phase's place on the
# roofline (prefill compute-bound, decode memory-bound); the predictor calibrates the scale from
# the stream's measurements, whatever the real prompts and answers.
PHASE_STEP = {"prefill": (128, 0), "decode": (1, 256)}


def default_state_path(sysfs_root: str) -> Path:
    """A board's crash record lives with the board: under a virtual Jetson's tree, or the
    user's ROS directory on a real one."""
    if sysfs_root not in ("", "/"):
        return Path(sysfs_root) / "var" / "lib" / STATE_FILE
    return Path.home() / ".ros" / STATE_FILE


def governor_config(p: dict) -> GovernorConfig:
    """The node's parameters as a GovernorConfig (node_parameters.node_config), its crash record
    where the board keeps it unless ``state_path`` names one. With a ``streams`` parameter each
    stream has its own target, percentile and model; the flat ``target_latency_ms``/``percentile``
    then apply to no stream."""
    return node_config({**p, "state_path": p["state_path"] or str(default_state_path(p["sysfs_root"]))})


def open_platform(spec: str, *, sysfs_root: str, nvpmodel_cmd: str,
                  store: StateStore) -> tuple[Platform, str | None]:
    """The platform, after a record left by a crashed run has been put back. Opened again after
    a recovery, so what it records as "found" (every cap file) is the recovered state and not
    the crashed run's. Returns the "restored ..." line (None: no crash record)."""
    platform = create_platform(spec, sysfs_root=sysfs_root, nvpmodel_cmd=nvpmodel_cmd)
    recovered = recover(platform, store)
    if recovered is not None:
        platform = create_platform(spec, sysfs_root=sysfs_root, nvpmodel_cmd=nvpmodel_cmd)
    return platform, recovered


def model_analysis(model: str, device_key: str, point: OperatingPoint, precision: str, engine: str,
                   phase: str = "") -> RooflineAnalysis:
    """The roofline of ``model`` (an ONNX path or zoo:NAME, as the inference node takes it) at
    the spec ceilings of ``point``: the predictor's prior. Any point of the device will do, a
    preset or the caps someone set by hand (the predictor moves it to every other point).
    ``phase``: a decoder's step of that phase (PHASE_STEP)."""
    device = get_device(device_key)
    source = load_model_source(model)
    cost = (DecoderCostModel(source, precision=precision).cost(*PHASE_STEP[phase]) if phase
            else analyze_model(source, precision=precision))
    return analyze_roofline(cost, clocks_ceilings(device, precision, effective_clocks(device, point), engine=engine))


class GovernorRuntime:
    """A Governor on a platform, with enable/disable and one way back to what was found."""

    def __init__(self, p: dict, clock: Clock, log=print, info=None, owner: str = "governor") -> None:
        """``log``: warnings; ``info``: the "restored ..." lines (default: ``log``); ``owner``: who
        holds the board, as a second governor's refusal names it."""
        config = governor_config(p)
        self.enabled_mode = config.mode if config.mode != "off" else "advise"
        self.log, self.info = log, info or log
        self.store = StateStore(config.state_path)
        # Before the crash record is read: a running governor's record is not a crash's.
        self.lock = BoardLock(board_lock_path(p["platform"], p["sysfs_root"]))
        previous = self.lock.acquire(owner, config.state_path)
        self.unavailable = ""  # why there is nothing to govern here ("": there is)
        try:
            self.platform, recovered = self._open(p, config.mode)
        except BaseException:
            self.lock.release()
            raise
        if (other_record := previous_record_warning(previous, config.state_path)) is not None:
            log(other_record)
        if recovered is not None:
            log(f"a previous governor did not shut down: {recovered}")
        try:
            identity = self.platform.identity()
            device = p["device"] or identity.catalogue_key
            found = self.platform.current_operating_point()

            def analyzer(phase: str):
                def analyze(model: str) -> RooflineAnalysis | None:
                    return model_analysis(model, device, found, p["precision"], p["engine"], phase) if device else None
                return analyze

            if not device and not self.unavailable:
                log(f"{identity.model} is not in the device catalogue: no roofline prior, each operating "
                    f"point is learned by measuring it")
            # A stream's model (the flat parameter for the only stream) overrides what the stream
            # reports; empty: follow the stream.
            self.streams: tuple[StreamConfig, ...] = config.stream_configs
            overrides = {s.name: s.model or p["model"] for s in self.streams}
            self.phases = {s.name: s.phase for s in self.streams}
            self.end_to_end = {s.name: s.judges_end_to_end for s in self.streams}
            self.models = {s.name: ModelFollower(analyzer(s.phase), override=overrides[s.name]) for s in self.streams}
            self.governor = Governor(self.platform, config,
                                     {s.name: analyzer(s.phase)(overrides[s.name]) if overrides[s.name] else None
                                      for s in self.streams},
                                     clock, self.store)
            if p["safe_point"]:
                self.governor.safe_point = self._reachable(p["safe_point"])
            self._nothing_to_govern(identity, config.mode)
        except BaseException:  # a bad setting found late, or a Ctrl-C while starting
            self.abandon()
            raise
        if self.unavailable:
            self.lock.release()  # nothing here to fight over
            log(f"governing nothing: {self.unavailable}; mode {config.mode} publishes that on governor/state "
                f"(state 'unavailable')")
        self.simulated = identity.simulated
        self._closed = False
        self._glitches_told = 0

    def _open(self, p: dict, mode: str) -> tuple[Platform, str | None]:
        """The platform and the crash record's "restored ..." line (open_platform). Off a Jetson,
        where the named platform cannot start, modes off and advise run on the CPU platform,
        governing nothing and saying so; mode active cannot, and says what to set."""
        try:
            return open_platform(p["platform"], sysfs_root=p["sysfs_root"], nvpmodel_cmd=p["nvpmodel_cmd"],
                                 store=self.store)
        except PlatformInitError as exc:
            if mode == "active":
                raise PlatformInitError(
                    f"{exc}; mode active needs a platform whose operating point it can change: -p platform:=nvml "
                    f"(an NVIDIA GPU) or -p platform:=virtual:DEVICE with -p sysfs_root:=DIR (a virtual Jetson), "
                    f"or -p mode:=advise to run without one") from None
            self.unavailable = f"platform {p['platform']!r} unavailable ({exc})"
            self.store = StateStore(None)  # no crash record: nothing will be changed
            return CpuPlatform(), None  # this machine's CPU, whatever sysfs_root the other one named

    def _nothing_to_govern(self, identity, mode: str) -> None:
        """A platform with one operating point (the CPU platform) leaves nothing to choose."""
        if len(self.governor.candidates) > 1:
            return
        one = f"the {identity.kind} platform ({identity.model}) has one operating point and nothing to change"
        if mode == "active" and not self.unavailable:
            raise ConfigError(f"mode active: {one}; use -p mode:=advise here, or a platform with operating points "
                              f"(-p platform:=jetson on a Jetson, nvml on an NVIDIA GPU)")
        self.unavailable = "; ".join(filter(None, (self.unavailable, one)))

    def step(self, now_s: float) -> Decision:
        """The governor's step; with nothing to govern (``unavailable``), a decision saying so."""
        gov = self.governor
        if not self.unavailable or gov.mode == "off":
            return gov.step(now_s)
        return report(gov.current, False, f"nothing to govern: {self.unavailable}", "unavailable", None,
                      gov.streams.values(), {}, math.nan)

    def glitch_lines(self) -> list[str]:
        """One line when implausible readings came that were too few to act on (a glitch), since
        the last call; [] otherwise."""
        safety = self.governor.safety
        new, self._glitches_told = safety.glitches - self._glitches_told, safety.glitches
        if new <= 0 or self.unavailable:
            return []
        rule = self.governor.config.safety
        return [f"ignored {new} implausible reading(s), the last: {safety.last_glitch} (a fault is "
                f"{rule.implausible_samples} within {rule.implausible_window_s:g} s)"]

    def observe_stats(self, stream: str, model_id: str, latency_s: float | None, now_s: float,
                      phase: str = "", end_to_end_s: float = math.nan) -> bool:
        """One InferenceStats of ``stream``: the model it serves, and its latency (None: a frame that
        never ran). True: over its target at a point not known to miss (step now: Governor.observe_inference).
        A phase stream takes only its phase's steps (``phase``). A stream judged end to end
        (StreamConfig.latency; a prefill's time to first token) is fed ``end_to_end_s``."""
        wanted = self.phases[stream]
        if wanted and phase != wanted:
            return False  # the other phase's step (or a frame): another stream's, or nobody's
        self.models[stream].observe(model_id)
        if self.end_to_end[stream] and latency_s is not None:
            latency_s = end_to_end_s
        return latency_s is not None and self.governor.observe_inference(latency_s, now_s, stream=stream,
                                                                         model_id=model_id)

    def follow_models(self) -> list[str]:
        """Apply the models streams switched to, once analysed; returns the lines to log."""
        lines = []
        for stream, follower in self.models.items():
            change = follower.poll()
            if change is None:
                continue
            self.governor.set_model(change.analysis, change.model_id, change.note, stream=stream)
            named = f"{stream}: " if len(self.models) > 1 else ""
            lines.append(named + (change.note or f"following {change.model_id}: re-planning with its roofline"))
        return lines

    def set_target(self, latency_ms: float, percentile: float, stream: str = "") -> tuple[bool, str]:
        """A new target for ``stream`` ("" = the only stream); percentile 0 keeps the stream's.
        (success, message): an unknown or missing stream name is refused naming the streams."""
        config = self.governor.config
        try:
            name = config.stream_name(stream)
            percentile = percentile or config.stream(name).percentile
            self.governor.set_target(latency_ms, percentile, stream=name)
        except ConfigError as exc:
            return False, f"target refused: {exc}"
        named = f"{name}: " if len(config.stream_configs) > 1 else ""
        return True, f"{named}target p{percentile:g} <= {latency_ms:g} ms"

    def _reachable(self, name: str) -> OperatingPoint:
        points = {pt.name: pt for pt in self.platform.operating_points()}
        if name not in points:
            raise ConfigError(f"safe_point {name!r} is not reachable without a reboot here; "
                              f"choose one of {', '.join(points)} (empty: the point found at start)")
        return points[name]

    def set_enabled(self, enabled: bool) -> tuple[bool, str]:
        """Disabling puts back what was found (as a shutdown would) and stops the governor;
        enabling records the found state again as the crash record and resumes. (success, message)"""
        gov = self.governor
        if not enabled:
            if gov.mode != "off":
                self.enabled_mode = gov.mode
            gov.set_mode("off")
            try:
                return True, f"governor off; {gov.shutdown()}"
            except PlatformError as exc:
                return False, f"governor off; {exc}; crash record {self.store.path} kept"
        if gov.mode == "off":
            gov.record_found()
            gov.set_mode(self.enabled_mode)
        return True, f"governor {gov.mode}"

    def abandon(self) -> None:
        """A start given up (a setting refused once the board was found, a Ctrl-C): nothing was
        moved, so nothing is put back and nothing said; the crash record goes with it (the next
        start would "put back" a board nobody touched), the readers close, the lock is freed."""
        self._closed = True
        for follower in getattr(self, "models", {}).values():
            follower.close()
        if hasattr(self, "governor"):
            self.store.clear()
        try:
            self.platform.close()
        except PlatformError:
            pass  # the start's own error is the one to report
        finally:
            self.lock.release()

    def close(self) -> bool:
        """Every cap file and the mode as found, one line saying so (or naming what could not be
        put back: the crash record then stays for the next start), then the readers closed.
        Returns whether everything was put back."""
        if self._closed:
            return True
        self._closed = True
        for follower in self.models.values():
            follower.close()
        restored = True
        try:
            self.info(self.governor.shutdown())
        except PlatformError as exc:
            restored = False
            self.log(f"{exc}; crash record {self.store.path} kept: the next start puts it back")
        try:
            self.platform.close()
        except PlatformError:
            pass  # the files shutdown() could not put back, reported above
        finally:
            self.lock.release()
        return restored
