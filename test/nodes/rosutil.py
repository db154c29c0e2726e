"""Helpers for tests that run real nodes: start a node module as its own process with
parameters, and an in-process rclpy context on the test's own domain to watch topics."""

import math
import subprocess
import sys
import time
from contextlib import contextmanager
from pathlib import Path

import rclpy
from rclpy.context import Context
from rclpy.executors import SingleThreadedExecutor

from test.nodes.virtual_rig import cap_files

REPO = Path(__file__).resolve().parents[2]


def _param_arg(name, value):
    if isinstance(value, bool):
        value = "true" if value else "false"
    elif isinstance(value, str):  # -p parses YAML: a bare off would arrive as a bool
        value = "'" + value.replace("'", "''") + "'"
    elif isinstance(value, float) and not math.isfinite(value):  # YAML's spelling: a bare nan is a string
        value = ".nan" if math.isnan(value) else ("-.inf" if value < 0 else ".inf")
    elif isinstance(value, (list, tuple)):
        value = "[" + ",".join(str(v) for v in value) + "]"
    return ["-p", f"{name}:={value}"]


def start_node(module: str, env: dict, params: dict | None = None, log_path: Path | None = None,
               namespace: str = "") -> subprocess.Popen:
    args = [sys.executable, "-m", f"edge_roofline.nodes.{module}", "--ros-args"]
    if namespace:
        args += ["-r", f"__ns:={namespace}"]
    for name, value in (params or {}).items():
        args += _param_arg(name, value)
    out = open(log_path, "w") if log_path else subprocess.DEVNULL
    return subprocess.Popen(args, env=env, cwd=REPO, stdout=out, stderr=subprocess.STDOUT)


def stop_node(proc: subprocess.Popen, sig=None, timeout_s: float = 10.0) -> int:
    import signal
    if proc.poll() is None:
        proc.send_signal(sig or signal.SIGINT)
        try:
            return proc.wait(timeout_s)
        except subprocess.TimeoutExpired:
            proc.kill()
    return proc.wait()


@contextmanager
def watcher(env: dict, name: str = "test_watcher"):
    """An rclpy node in this process on the test's domain, and a spin_until helper."""
    context = Context()
    rclpy.init(context=context, domain_id=int(env["ROS_DOMAIN_ID"]))
    node = rclpy.create_node(name, context=context)
    executor = SingleThreadedExecutor(context=context)
    executor.add_node(node)

    def spin_until(predicate, timeout_s: float = 30.0, procs=()) -> bool:
        deadline = time.monotonic() + timeout_s
        while time.monotonic() < deadline:
            executor.spin_once(timeout_sec=0.05)
            if predicate():
                return True
            for proc in procs:
                if proc.poll() is not None:
                    raise AssertionError(f"node process exited early with {proc.returncode}")
        return False

    try:
        yield node, spin_until
    finally:
        executor.shutdown()
        node.destroy_node()
        rclpy.shutdown(context=context)


def log_text(path: Path) -> str:
    return path.read_text() if path.exists() else ""


def kill_9_after_a_move(governor: subprocess.Popen, spin_until, procs: list, board: Path, found: dict,
                        state_path: Path, log: Path) -> None:
    """kill -9 a just started ``governor`` once it moved the board off ``found`` (a crash): the
    crash record stays for the next start to put back."""
    procs.append(governor)
    assert spin_until(lambda: cap_files(board) != found, timeout_s=120, procs=procs), log_text(log)
    governor.kill()
    governor.wait()
    procs.remove(governor)
    assert state_path.exists() and cap_files(board) != found
