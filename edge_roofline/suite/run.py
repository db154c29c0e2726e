"""How the suite starts (``edge-roofline up`` and ``demo``): the live virtual Jetsons the
parameters name, then the nodes of suite/spec.py's plan under a supervisor, stopped in reverse
order on Ctrl-C. ``ros2 launch`` starts the same plan with the ROS launch tools instead."""

from __future__ import annotations

import os
import socket
import tempfile
import time
from pathlib import Path

from edge_roofline.paths import config_file
from edge_roofline.suite.env import localhost_environment
from edge_roofline.suite.parameters import declared_parameters
from edge_roofline.suite.signals import StopSignals, ignore_stop_signals
from edge_roofline.suite.spec import BRIDGE, load_params, suite_plan, virtual_devices
from edge_roofline.suite.supervisor import Supervisor, env_with_repo
from edge_roofline.virtual.live import LiveVirtualJetson

SHOWN = {"console", BRIDGE}  # their output goes to the terminal: the summary; Foxglove's URL, the recording


class FoxglovePortError(OSError):
    """The port the Foxglove bridge would serve on is taken."""


def _mode_name(jetson) -> str:
    return jetson.device.preset(jetson.board.state.nvpmodel_mode_id).name


def _check_foxglove_port(params: dict[str, dict], overrides: dict) -> None:
    """Refuse before anything starts when the bridge's port is taken (another bridge, a second
    demo): one line naming the ways out, instead of a node that dies after the others started."""
    values = {**declared_parameters()[BRIDGE], **params.get(BRIDGE, {}), **overrides}
    if not values["serve"] or int(values["port"]) == 0:
        return
    host, port = str(values["host"]), int(values["port"])
    if not 0 <= port <= 65535:  # bind() would raise OverflowError, a traceback
        raise FoxglovePortError(f"Foxglove port {port} is not a TCP port: give --foxglove-port N with N in "
                                "1-65535, or 0 for any free one (in a parameter file: foxglove_bridge "
                                "ros__parameters port)")
    with socket.socket(socket.AF_INET6 if ":" in host else socket.AF_INET) as probe:
        try:
            probe.bind((host, port))
        except OSError as exc:
            raise FoxglovePortError(
                f"Foxglove port {port} on {host} is in use ({exc.strerror}; another Foxglove bridge or demo?): "
                "start without the server (--no-foxglove, or leave foxglove_bridge out of --with), or give it "
                "another port (--foxglove-port N, 0 for any free one; in a parameter file: foxglove_bridge "
                "ros__parameters port)") from None


def run_suite(config: str, *, extras=(), record: str = "", duration_s: float = 0.0, log_dir: str | None = None,
              overrides: dict[str, dict] | None = None) -> int:
    """Start a live virtual Jetson when the parameters name one, then the nodes, then wait for
    Ctrl-C (or ``duration_s``) and stop everything in reverse order. Signals from here on only
    ask for that stop (edge_roofline.suite.signals)."""
    stop = StopSignals().install()
    try:
        return _run(config, extras, record, duration_s, log_dir, overrides, stop)
    finally:
        ignore_stop_signals()


def _run(config, extras, record, duration_s, log_dir, overrides, stop: StopSignals) -> int:
    params_path = config_file(config)
    params = load_params(params_path)
    plan = suite_plan(params, extras=extras, record=record, overrides=overrides)
    bridge = next((start for start in plan if start.spec.name == BRIDGE), None)
    if bridge is not None:
        _check_foxglove_port(params, bridge.overrides)
    env = env_with_repo(localhost_environment(dict(os.environ)))
    logs = Path(log_dir or tempfile.mkdtemp(prefix="edge_roofline_logs_"))
    live = []
    supervisor = Supervisor(env, logs)
    code = 0
    try:
        for root, device in virtual_devices(params).items():
            jetson = LiveVirtualJetson(root, device)
            live.append(jetson)
            jetson.start()
            print(f"virtual Jetson {device} (SIMULATION) live at {root} in {_mode_name(jetson)}")
        for start in plan:
            supervisor.start(start.spec.executable, start.spec.name, str(params_path), start.overrides,
                             show_output=start.spec.name in SHOWN, namespace=start.namespace)
        if bridge is None:
            print("Foxglove: no server (add --with foxglove_bridge; ros2 launch: with:=foxglove_bridge)")
        count = len(supervisor.children)
        print(f"started {count} node{'s' * (count != 1)}; logs in {logs}; Ctrl-C to stop")
        end_s = time.monotonic() + duration_s if duration_s > 0 else None
        gone = supervisor.wait(lambda: stop.requested or (end_s is not None and time.monotonic() >= end_s))
        if gone is not None:
            tail = supervisor.tail(gone)  # none from a node whose output went to the terminal (above)
            print(f"node {gone.name} exited with {gone.proc.returncode}" + (f":\n{tail}" if tail else ""))
            code = 2 if gone.proc.returncode == 2 else 1  # 2: it could not start (its line says why)
    finally:
        codes = supervisor.stop_all()
        for jetson in live:
            jetson.stop()
            print(f"virtual Jetson {jetson.device.key} (SIMULATION) left in {_mode_name(jetson)}")
        if codes:
            print("stopped: " + ", ".join(f"{n}={c}" for n, c in codes.items()))
    for child in supervisor.children:  # still starting at the stop, then failed: its line, and the run fails
        if code == 0 and codes.get(child.name) == 2:
            print(f"node {child.name} could not start:\n{supervisor.tail(child)}")
            code = 2
    return code
