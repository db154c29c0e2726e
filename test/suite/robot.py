"""A robot-style parameter file for the real-launch tests: the shipped `config/agx_orin.yaml`
changed as the README tells a user to (model, backend, image topic), with the Jetson replaced by
a virtual AGX Orin (SIMULATION) at a tmp root, and a small test camera and Foxglove port for
`with:=`; and the launch and Ctrl-C that the tests and benchmarks/bench_ctrl_c.py share."""

from __future__ import annotations

import re
import subprocess
import time
from dataclasses import dataclass
from pathlib import Path

import yaml

from edge_roofline.paths import config_file
from edge_roofline.virtual.live import LiveVirtualJetson
from test.nodes.virtual_rig import cap_files
from test.suite.conftest import Ros2, ctrl_c, tools_env, tracebacks

DEVICE = "agx_orin_64gb"


def robot_params(path: Path, root: Path, foxglove_port: int = 0) -> Path:
    params = yaml.safe_load(config_file("agx_orin.yaml").read_text())
    for node in params.values():
        p = node["ros__parameters"]
        if p.get("platform") == "jetson":
            p.update(platform=f"virtual:{DEVICE}", sysfs_root=str(root))
    params["inference"]["ros__parameters"].update(model="zoo:tiny_cnn", backend="virtual",
                                                  image_topic="/camera/image_raw", profile_every_s=2.0)
    params["governor"]["ros__parameters"].update(target_latency_ms=20.0, dwell_s=1.0)
    params["synthetic_camera"] = {"ros__parameters": {"topic": "/camera/image_raw", "width": 64, "height": 64,
                                                      "rate_hz": 15.0}}
    params["foxglove_bridge"] = {"ros__parameters": {"port": foxglove_port}}
    path.write_text(yaml.safe_dump(params))
    return path


def fresh_caps(tmp: Path) -> dict:
    """The cap files of a virtual AGX Orin as it boots (what the launch's board is found in)."""
    return cap_files(LiveVirtualJetson(tmp / "fresh_board", DEVICE).root)


@dataclass
class Stop:
    """One Ctrl-C of a real `ros2 launch` after the governor moved the board."""
    moved_after_s: float
    stop_s: float
    exit_code: int
    caps_as_found: bool
    noise: list  # traceback marks in any process's output
    unclean: list  # launch's lines for processes that did not finish cleanly
    log: str

    @property
    def ok(self) -> bool:
        return self.exit_code == 0 and self.caps_as_found and not self.noise and not self.unclean


def stop_after_move(tmp: Path, timeout_s: float = 180.0) -> Stop:
    tmp.mkdir(parents=True, exist_ok=True)
    root = tmp / "board"
    found = fresh_caps(tmp)
    robot_params(tmp / "my_robot.yaml", root)
    ros2 = Ros2(tools_env(tmp), tmp)
    log = tmp / "launch.log"
    started = time.monotonic()
    proc = ros2.start(["launch", "edge_roofline", "edge_roofline.launch.py", "params_file:=my_robot.yaml",
                       "governor_mode:=active", "with:=synthetic_camera"], log)
    try:
        ros2.wait_for(lambda: root.exists() and _caps(root) not in (None, found), timeout_s, [proc],
                      "move of the board by the governor", poll_s=0.2)
    except AssertionError as exc:
        ctrl_c(proc)
        raise AssertionError(f"{exc}\n{log.read_text()[-5000:]}") from None
    moved_after_s = time.monotonic() - started
    stopping = time.monotonic()
    code = ctrl_c(proc)
    text = log.read_text()
    unclean = [line for line in text.splitlines() if re.search(r"process has died|exit code -?\d", line)]
    return Stop(moved_after_s, time.monotonic() - stopping, code, cap_files(root) == found, tracebacks(text),
                unclean, text)


def _caps(root: Path) -> dict | None:
    try:
        return cap_files(root)
    except (AssertionError, OSError):  # the tree is still being rendered
        return None


def launch_output_ok(text: str) -> list[str]:
    """Problems in a launch's output: tracebacks, processes that did not finish cleanly."""
    return tracebacks(text) + [line for line in text.splitlines() if "process has died" in line]


__all__ = ["robot_params", "fresh_caps", "stop_after_move", "Stop", "launch_output_ok", "subprocess"]
