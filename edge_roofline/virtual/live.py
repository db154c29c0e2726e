"""A live virtual Jetson: a ``VirtualBoard`` stepped on wall time that renders its sysfs tree,
follows the caps and nvpmodel mode clients write there, and draws power for the work that
virtual backends in other processes report. SIMULATION.

The physics steps every ``tick_s`` (20 ms); the INA3221s convert on their own clock, every
``PhysicsParams.ina_window_s`` (the tree's ``update_interval``): each conversion writes the rail
files with the window mean of the physics as far as it has run, with that conversion's noise,
and the files (and ``board.state.rails``) show it until the next conversion.

Files it adds under ``ROOT/run/edge_roofline_virtual/`` (not part of a real board's tree):

- ``physics.json``: device, seed and physics coefficients, so every client times inferences
  with the same physics as the board;
- ``silicon.json``: the clocks in force now (after settling and throttling) and the background
  loads, rewritten every step;
- ``activity/<pid>.json``: written by each client, cumulative GPU-busy seconds, compute seconds,
  DRAM bytes and host seconds; the board turns their growth per step into utilisation;
- ``load.json``: background GPU load and busy CPU cores, set with ``set_background_load``.

``LiveBoardClient`` is what the virtual backend uses in another process: it times each
inference with the board's physics at the board's current clocks, sleeps that long (the work
takes real time, as on a device) and reports the activity.
"""

from __future__ import annotations

import fcntl
import json
import logging
import math
import os
import random
import threading
import time
import weakref
from dataclasses import dataclass, replace
from pathlib import Path

from edge_roofline.roofline.costs import ModelCost
from edge_roofline.roofline.devices import get_device
from edge_roofline.virtual.actuation import Actuation, Disturbances
from edge_roofline.virtual.board import InferenceResult, VirtualBoard
from edge_roofline.virtual.physics import Activity, Clocks, inference_timing, jittered
from edge_roofline.virtual.params import PhysicsParams
from edge_roofline.virtual.hwmon import write_rails
from edge_roofline.virtual.sysfs_read import Controls, read_controls
from edge_roofline.virtual.sysfs_tree import rail_value_files, render_tree, update_tree

log = logging.getLogger(__name__)
RUN_DIR = "run/edge_roofline_virtual"
_STALE_CLIENT_S = 5.0  # an activity file this old belongs to a client that went away


def _write_json(path: Path, data: dict) -> None:
    path.parent.mkdir(parents=True, exist_ok=True)
    tmp = path.with_name(f".{path.name}.{os.getpid()}.tmp")
    tmp.write_text(json.dumps(data))
    os.replace(tmp, path)


def _read_json(path: Path) -> dict | None:
    try:
        return json.loads(path.read_text())
    except (OSError, ValueError):
        return None


def set_background_load(root: str | Path, gpu_load: float = 0.0, cpu_cores: float = 0.0) -> None:
    """Another process's share of the GPU (0..1) and CPU cores it keeps busy, on a live board."""
    if not 0.0 <= gpu_load < 1.0 or cpu_cores < 0:
        raise ValueError(f"background GPU load must be in [0, 1) and CPU cores >= 0; got {gpu_load}, {cpu_cores}")
    _write_json(Path(root) / RUN_DIR / "load.json", {"background_gpu_load": gpu_load,
                                                      "background_cpu_cores": cpu_cores})


@dataclass
class _ClientCounters:
    gpu_busy_s: float = 0.0
    compute_s: float = 0.0
    dram_bytes: float = 0.0
    host_s: float = 0.0


def wait_for_live_board(root: str | Path, timeout_s: float, poll_s: float = 0.05) -> bool:
    """Whether a live virtual Jetson's tree at ``root`` is complete, waiting up to ``timeout_s``.
    Nodes of one launch start together, and on a loaded machine the board's process may render
    its tree seconds after a node looks for it."""
    marker = Path(root) / RUN_DIR / "physics.json"
    deadline = time.monotonic() + timeout_s
    while not marker.exists():
        if time.monotonic() >= deadline:
            return False
        time.sleep(poll_s)
    return True


def live_board_device(root: str | Path) -> str:
    """The device key of the live virtual Jetson whose tree is at ``root`` (its physics.json)."""
    return json.loads((Path(root) / RUN_DIR / "physics.json").read_text())["device"]


class TreeRootError(OSError):
    """The directory given for a virtual Jetson's tree cannot hold it."""


def _live_lock(root: Path) -> int:
    """The descriptor holding the lock of the one live virtual Jetson at ``root``, its holder's pid
    written in it; a second one (another --root of the same directory) would render its tree over
    the running board's."""
    path = root / RUN_DIR / "live.lock"
    path.parent.mkdir(parents=True, exist_ok=True)
    fd = os.open(path, os.O_RDWR | os.O_CREAT, 0o644)
    try:
        fcntl.flock(fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
    except BlockingIOError:
        holder = os.read(fd, 200).decode(errors="replace").strip() or "another process"
        os.close(fd)
        raise TreeRootError(f"a virtual Jetson already runs at {root} ({holder}): stop it, or give another "
                            f"directory (edge-roofline virtual-jetson --root DIR)") from None
    os.ftruncate(fd, 0)
    os.write(fd, f"pid {os.getpid()}".encode())
    return fd


class LiveVirtualJetson:
    """``start()`` renders the tree and steps the board every ``tick_s`` in a thread until
    ``stop()``; ``step()`` is one step, for tests that drive it themselves."""

    def __init__(self, root: str | Path, device: str = "agx_orin_64gb", *, mode_id: int | None = None,
                 seed: int = 0, perturbation: float = 0.0, tick_s: float = 0.02,
                 actuation: Actuation | None = None) -> None:
        self.root = Path(root)
        actuation = actuation or Actuation()
        # The rail files hold each conversion until the next, which is the free-running
        # converter's lag already: the board computes conversions ending when presented.
        presented = replace(actuation, sensor_lag_conversions=max(actuation.sensor_lag_conversions - 1, 0))
        self.board = VirtualBoard(device, mode_id=mode_id, seed=seed, perturbation=perturbation,
                                  actuation=presented)
        self.actuation = actuation
        self.device = self.board.device
        self.tick_s = tick_s
        self._seen: dict[str, _ClientCounters] = {}
        self._thread: threading.Thread | None = None
        self._stop = threading.Event()
        self._lock = threading.Lock()  # one writer of the tree at a time
        self._last_wall_s: float | None = None
        self._last_silicon: dict | None = None  # last silicon.json written
        self.steps = 0
        self.conversions = 0
        self.conversion_s = self.board.params.ina_window_s
        self._next_conversion_s = -math.inf  # on the clock step() is given
        self._presented: dict[str, tuple[float, float]] = {}
        self._rail_files = rail_value_files(self.device)
        self._release_tree: weakref.finalize | None = None
        try:
            self.root.mkdir(parents=True, exist_ok=True)
            self._hold_tree()  # refused before rendering over a running board; held until stop()
            render_tree(self.root, self.device, self.board.refresh_state(), self.conversion_s,
                        self.board.params.shunt_ohm)
            set_background_load(self.root)
            self._write_silicon()
            # Written last: its presence tells other processes the tree is complete (wait_for_live_board).
            _write_json(self.root / RUN_DIR / "physics.json",
                        {"device": self.device.key, "seed": seed, "perturbation": perturbation,
                         "params": self.board.params.to_dict(), "actuation": actuation.to_dict(),
                         "label": "SIMULATION"})
        except TreeRootError:
            raise
        except OSError as exc:  # errno's text alone ("Not a directory: ...") names neither the tree nor the fix
            self.stop()
            raise TreeRootError(f"cannot write a virtual Jetson's tree under {self.root} ({exc.strerror}: "
                                f"{exc.filename}); give a writable directory (edge-roofline virtual-jetson --root DIR, "
                                f"or a node's -p sysfs_root:=DIR)") from None

    # ---- one step ------------------------------------------------------------------------
    def _follow_controls(self) -> None:
        tree = read_controls(self.root, self.device)
        if tree != Controls.of(self.board.state):
            tree.apply_to(self.board.state)
            self.board.controls_changed()

    def _client_activity(self, dt_s: float, now_wall_s: float) -> Activity:
        delta = _ClientCounters()
        last_work = None
        for path in (self.root / RUN_DIR / "activity").glob("*.json"):
            data = _read_json(path)
            if data is None:
                continue
            if now_wall_s - data.get("wall_s", 0.0) > _STALE_CLIENT_S:
                self._seen.pop(path.name, None)
                continue
            now = _ClientCounters(data["gpu_busy_s"], data["compute_s"], data["dram_bytes"], data["host_s"])
            seen = self._seen.get(path.name, now)  # a new client counts from here
            self._seen[path.name] = now
            for name in ("gpu_busy_s", "compute_s", "dram_bytes", "host_s"):
                setattr(delta, name, getattr(delta, name) + max(getattr(now, name) - getattr(seen, name), 0.0))
            last_work = max(last_work or 0.0, data.get("wall_s", 0.0))
        if last_work is not None and now_wall_s - last_work < self.board.params.devfreq_hold_s:
            self.board.note_gpu_work()
        b = self.board
        return Activity(
            gpu_util=min(delta.gpu_busy_s / dt_s + b.background_gpu_load, 1.0),
            gpu_compute_fraction=(delta.compute_s / delta.gpu_busy_s) if delta.gpu_busy_s > 0 else 0.5,
            gpu_clocked=b.gpu_clocked(),
            dram_bps=delta.dram_bytes / dt_s + b.background_dram_bps(),
            cpu_busy_cores=delta.host_s / dt_s + b.background_cpu_cores)

    def _write_silicon(self) -> None:
        """The clocks clients time their inferences at; written only when they change (most
        20 ms steps change nothing here)."""
        c = self.board.silicon_clocks()
        silicon = {"cpu_freq_hz": c.cpu_freq_hz, "cpu_online_cores": c.cpu_online_cores,
                   "gpu_freq_hz": c.gpu_freq_hz, "tpc_pg_mask": c.tpc_pg_mask, "emc_freq_hz": c.emc_freq_hz,
                   "emc_changes": self.board.actuator.emc_changes,  # clients stall on the next inference
                   "background_gpu_load": self.board.background_gpu_load,
                   "background_cpu_cores": self.board.background_cpu_cores}
        if silicon != self._last_silicon:
            _write_json(self.root / RUN_DIR / "silicon.json", silicon)
            self._last_silicon = silicon

    def step(self, now_wall_s: float | None = None) -> None:
        with self._lock:
            self._step(time.monotonic() if now_wall_s is None else now_wall_s)

    def _step(self, now: float) -> None:
        dt = self.tick_s if self._last_wall_s is None else min(max(now - self._last_wall_s, 1e-4), 1.0)
        self._last_wall_s = now
        self._follow_controls()
        load = _read_json(self.root / RUN_DIR / "load.json") or {}
        self.board.background_gpu_load = float(load.get("background_gpu_load", 0.0))
        self.board.background_cpu_cores = float(load.get("background_cpu_cores", 0.0))
        self.board.advance(dt, self._client_activity(dt, time.time()))
        state = self.board.refresh_state()
        if now >= self._next_conversion_s:
            self._present(state.rails, now)
        else:
            state.rails = self._presented  # the sensor shows its last conversion until the next
        update_tree(self.root, self.device, state, rails=False)
        self._write_silicon()
        self.steps += 1

    def convert(self, now_wall_s: float | None = None) -> None:
        """One INA3221 conversion between physics steps."""
        with self._lock:
            self._present(self.board.ina_readings(), time.monotonic() if now_wall_s is None else now_wall_s)

    def _present(self, rails: dict[str, tuple[float, float]], now: float) -> None:
        """The rail files in place (a reader holding them open sees the new values)."""
        following = self._next_conversion_s + self.conversion_s
        self._next_conversion_s = following if following > now - self.conversion_s else now + self.conversion_s
        self.board.state.rails = self._presented = rails
        write_rails(self.root, self._rail_files, rails)
        self.conversions += 1

    # ---- thread --------------------------------------------------------------------------
    def _loop(self) -> None:
        next_step_s = time.monotonic()
        while not self._stop.is_set():
            now = time.monotonic()
            try:
                if now >= next_step_s:  # a step converts too when a conversion is due
                    next_step_s = max(next_step_s + self.tick_s, now)  # behind (loaded machine): no burst
                    self.step(now)
                elif now >= self._next_conversion_s:
                    self.convert(now)
            except Exception:  # keep the board alive; a client may have left a half-written file
                log.exception("virtual Jetson step failed")
            self._stop.wait(max(min(next_step_s, self._next_conversion_s) - time.monotonic(), 0.0))

    def _hold_tree(self) -> None:
        """Take the tree's lock until stop(). A board made only to render its tree and dropped
        unstopped (tests, a tree to read) lets go when it is collected, not at process exit."""
        self._release_tree = weakref.finalize(self, os.close, _live_lock(self.root))

    def start(self) -> "LiveVirtualJetson":
        if self._release_tree is None:  # started again after stop()
            self._hold_tree()
        self._stop.clear()
        self._thread = threading.Thread(target=self._loop, name="virtual-jetson", daemon=True)
        self._thread.start()
        return self

    def stop(self) -> None:
        self._stop.set()
        if self._thread is not None:
            self._thread.join(timeout=2.0)
            self._thread = None
        if self._release_tree is not None:
            self._release_tree()  # drops the lock
            self._release_tree = None


class LiveBoardClient:
    """Runs inferences "on" a live virtual Jetson from another process (the virtual backend's
    board when its platform is a live tree)."""

    def __init__(self, root: str | Path, sleep=time.sleep) -> None:
        self.root = Path(root)
        physics = _read_json(self.root / RUN_DIR / "physics.json")
        if physics is None:
            raise FileNotFoundError(f"{self.root} is not a live virtual Jetson (no {RUN_DIR}/physics.json); "
                                    f"start one with `edge-roofline virtual-jetson --root {self.root}`")
        self.device = get_device(physics["device"])
        self.params = PhysicsParams.from_dict(physics["params"])
        self.sleep = sleep
        self.rng = random.Random(os.getpid())
        knobs = physics.get("actuation")
        self.disturbances = Disturbances(Actuation.from_dict(knobs) if knobs else Actuation(),
                                         random.Random(os.getpid() + 1))
        self._emc_changes_seen: int | None = None
        self.counters = _ClientCounters()
        self._activity_path = self.root / RUN_DIR / "activity" / f"{os.getpid()}.json"

    def run_inference(self, cost: ModelCost, precision: str = "fp16", batch: int | None = None) -> InferenceResult:
        silicon = _read_json(self.root / RUN_DIR / "silicon.json") or {}
        if not silicon:
            raise FileNotFoundError(f"{self.root}: the virtual Jetson is not running (no silicon.json)")
        clocks = Clocks(silicon["cpu_freq_hz"], int(silicon["cpu_online_cores"]), silicon["gpu_freq_hz"],
                        int(silicon["tpc_pg_mask"]), silicon["emc_freq_hz"])
        emc_changes = silicon.get("emc_changes", 0)
        if self._emc_changes_seen is not None and emc_changes != self._emc_changes_seen:
            self.disturbances.emc_changed()
        self._emc_changes_seen = emc_changes
        timing = jittered(inference_timing(cost, self.device, self.params, clocks, precision,
                                           silicon.get("background_gpu_load", 0.0),
                                           silicon.get("background_cpu_cores", 0.0)),
                          self.params, self.rng)
        timing = self.disturbances.apply(timing)
        start = time.monotonic()
        self.sleep(timing.latency_s)
        c = self.counters
        c.gpu_busy_s += timing.gpu_busy_s
        c.compute_s += timing.gpu_busy_s * timing.compute_fraction
        c.dram_bytes += timing.dram_bytes
        c.host_s += timing.host_s
        _write_json(self._activity_path, {"wall_s": time.time(), **c.__dict__})
        # Energy is what the power monitor integrates from the rails; the client cannot see it.
        return InferenceResult(timing.latency_s, float("nan"), timing.per_layer_time_s(), timing, start)

    def close(self) -> None:
        try:
            self._activity_path.unlink()
        except OSError:
            pass
