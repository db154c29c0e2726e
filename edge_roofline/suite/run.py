"""How the suite starts (``edge-roofline up`` and ``demo``): the live virtual Jetsons the
parameters name, then the nodes of suite/spec.py under a supervisor, stopped in reverse order
on Ctrl-C. ``ros2 launch`` starts the same spec with the ROS launch tools instead."""

from __future__ import annotations

import os
import tempfile
import time
from pathlib import Path

from edge_roofline.paths import config_file
from edge_roofline.suite.env import localhost_environment
from edge_roofline.suite.spec import configured_nodes, load_params, virtual_devices
from edge_roofline.suite.supervisor import Supervisor, env_with_repo, install_stop_flag
from edge_roofline.virtual.live import LiveVirtualJetson


def _mode_name(jetson) -> str:
    return jetson.device.preset(jetson.board.state.nvpmodel_mode_id).name


def run_suite(config: str, *, extras=(), duration_s: float = 0.0, log_dir: str | None = None,
              overrides: dict[str, dict] | None = None) -> int:
    """Start a live virtual Jetson when the parameters name one, then the nodes, then wait for
    Ctrl-C (or ``duration_s``) and stop everything in reverse order."""
    params_path = config_file(config)
    params = load_params(params_path)
    env = env_with_repo(localhost_environment(dict(os.environ)))
    logs = Path(log_dir or tempfile.mkdtemp(prefix="edge_roofline_logs_"))
    live = []
    for root, device in virtual_devices(params).items():
        jetson = LiveVirtualJetson(root, device)
        jetson.start()
        live.append(jetson)
        print(f"virtual Jetson {device} (SIMULATION) live at {root} in {_mode_name(jetson)}")
    stop = install_stop_flag()
    supervisor = Supervisor(env, logs)
    code = 0
    try:
        for spec in configured_nodes(params):
            supervisor.start(spec.executable, spec.name, str(params_path), (overrides or {}).get(spec.name))
        for extra in extras:
            supervisor.start(extra, extra, str(params_path), show_output=(extra == "console"))
        print(f"started {len(supervisor.children)} nodes; logs in {logs}; Ctrl-C to stop")
        end_s = time.monotonic() + duration_s if duration_s > 0 else None
        gone = supervisor.wait(lambda: stop[0] or (end_s is not None and time.monotonic() >= end_s))
        if gone is not None:
            print(f"node {gone.name} exited with {gone.proc.returncode}:\n{supervisor.tail(gone)}")
            code = 1
    finally:
        codes = supervisor.stop_all()
        for jetson in live:
            jetson.stop()
            print(f"virtual Jetson {jetson.device.key} (SIMULATION) left in {_mode_name(jetson)}")
        print("stopped: " + ", ".join(f"{n}={c}" for n, c in codes.items()))
    return code
