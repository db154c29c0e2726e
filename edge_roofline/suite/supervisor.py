"""Start the suite's nodes as processes (what ``ros2 launch`` does, for machines without the
ROS launch tools), watch them, and stop them cleanly: SIGINT first, in reverse start order,
so the governor restores the device before anything else goes away."""

from __future__ import annotations

import os
import signal
import subprocess
import sys
import time
from dataclasses import dataclass
from pathlib import Path


@dataclass
class Managed:
    name: str
    proc: subprocess.Popen
    log_path: Path | None


def node_command(executable: str, node_name: str, params_file: str | None, overrides: dict,
                 namespace: str = "") -> list[str]:
    cmd = [sys.executable, "-m", "edge_roofline.nodes.entry", executable, "--ros-args", "-r", f"__node:={node_name}"]
    if namespace:
        cmd += ["-r", f"__ns:=/{namespace.strip('/')}"]
    if params_file:
        cmd += ["--params-file", str(params_file)]
    for key, value in overrides.items():
        if isinstance(value, bool):
            value = "true" if value else "false"
        elif isinstance(value, str):  # -p parses YAML: a bare off would arrive as a bool
            value = "'" + value.replace("'", "''") + "'"
        cmd += ["-p", f"{key}:={value}"]
    return cmd


class Supervisor:
    def __init__(self, env: dict[str, str], log_dir: Path | None = None) -> None:
        self.env = env
        self.log_dir = log_dir
        self.children: list[Managed] = []

    def start(self, executable: str, node_name: str, params_file: str | None = None,
              overrides: dict | None = None, show_output: bool = False, namespace: str = "") -> Managed:
        log_path = None
        if show_output:
            out = None
        elif self.log_dir is not None:
            self.log_dir.mkdir(parents=True, exist_ok=True)
            log_path = self.log_dir / f"{node_name}.log"
            out = open(log_path, "w")
        else:
            out = subprocess.DEVNULL
        proc = subprocess.Popen(node_command(executable, node_name, params_file, overrides or {}, namespace),
                                env=self.env, stdout=out, stderr=subprocess.STDOUT if out is not None else None,
                                start_new_session=True)  # our own Ctrl-C handling decides when children stop
        if log_path is not None:
            out.close()  # the child holds its own descriptor
        child = Managed(node_name, proc, log_path)
        self.children.append(child)
        return child

    def exited(self) -> list[Managed]:
        return [c for c in self.children if c.proc.poll() is not None]

    def wait(self, should_stop, poll_s: float = 0.2) -> Managed | None:
        """Block until ``should_stop()`` or a child exits; returns the exited child, if any. A child
        that exited in the last poll before the stop is returned too, so its failure is reported."""
        while True:
            gone = self.exited()
            if gone:
                return gone[0]
            if should_stop():
                return None
            time.sleep(poll_s)

    def stop_all(self, timeout_s: float = 10.0) -> dict[str, int]:
        codes = {}
        for child in reversed(self.children):
            if child.proc.poll() is None:
                child.proc.send_signal(signal.SIGINT)
                try:
                    child.proc.wait(timeout_s)
                except subprocess.TimeoutExpired:
                    child.proc.terminate()
                    try:
                        child.proc.wait(2.0)
                    except subprocess.TimeoutExpired:
                        child.proc.kill()
                        child.proc.wait()
            codes[child.name] = child.proc.returncode
        return codes

    def tail(self, child: Managed, lines: int = 20) -> str:
        if child.log_path is None or not child.log_path.exists():
            return ""
        return "\n".join(child.log_path.read_text(errors="replace").splitlines()[-lines:])


def env_with_repo(env: dict[str, str]) -> dict[str, str]:
    """Child processes import this checkout's package first (the installed one otherwise)."""
    repo = str(Path(__file__).resolve().parent.parent)
    env = dict(env)
    env["PYTHONPATH"] = os.pathsep.join(p for p in (repo, env.get("PYTHONPATH", "")) if p)
    env.setdefault("PYTHONUNBUFFERED", "1")
    return env
