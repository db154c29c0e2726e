"""Fixtures of the tests that run what users run: the real `ros2 launch` and `ros2` CLI (wheels
from shared/ros2-tools, test/suite/ros2_tools.py) and Foxglove's own client libraries from npm
(Node.js). Each skips, saying why, where its tools are absent; the shared/ folder present but
failing to install is an error, not a skip."""

import hashlib
import json
import os
import shutil
import signal
import subprocess
import sys
import time
from pathlib import Path

import pytest

from test.conftest import REPO, _domain_ids
from edge_roofline.suite.env import PROFILE_VARIABLES, localhost_environment
from test.suite.ros2_tools import ensure_installed

NODE_CLIENT_SRC = Path(__file__).resolve().parent / "node_client"
NODE_CLIENT_DIR = REPO / "build" / "node_client"
VENV_BIN = Path(sys.executable).parent
TRACEBACK_MARKS = ("Traceback (most recent call last)", "KeyboardInterrupt", "RCLError",
                   "Failed to publish log message to rosout")


@pytest.fixture(scope="session")
def ros2_tools():
    installed, where = ensure_installed()
    if not installed:
        pytest.skip(where)
    return where


def tools_env(tmp: Path, domain_id: int | None = None) -> dict:
    """A user's shell with the venv activated: its bin first on PATH (ros2, edge-roofline),
    loopback-only DDS on a domain of its own, no Fast DDS profile, logs under ``tmp``, this
    checkout's package."""
    env = localhost_environment(dict(os.environ), domain_id=domain_id or 1 + next(_domain_ids) % 100)
    env["PATH"] = os.pathsep.join([str(VENV_BIN), env.get("PATH", "")])
    env["ROS_LOG_DIR"] = str(tmp / "ros_log")
    env["PYTHONPATH"] = os.pathsep.join([str(REPO), env.get("PYTHONPATH", "")]).rstrip(os.pathsep)
    env["PYTHONUNBUFFERED"] = "1"
    env.pop("ROS_LOCALHOST_ONLY", None)
    for variable in PROFILE_VARIABLES:  # a user's shell sets no Fast DDS profile: the nodes and launch do
        env.pop(variable, None)
    return env


class Ros2:
    """`ros2 ...` commands run as a user types them, in ``cwd`` with ``env``."""

    def __init__(self, env: dict, cwd: Path) -> None:
        self.env, self.cwd = env, cwd

    def run(self, *args: str, timeout_s: float = 60.0) -> subprocess.CompletedProcess:
        return subprocess.run(["ros2", *args], env=self.env, cwd=self.cwd, capture_output=True, text=True,
                              timeout=timeout_s)

    def start(self, args: list[str], log: Path) -> subprocess.Popen:
        """A long-running command in a process group of its own, as a terminal's job: Ctrl-C
        is SIGINT to the whole group (``stop``). SIGINT is not ignored in it, whatever this
        process inherited."""
        with open(log, "w") as out:
            return subprocess.Popen(["ros2", *args], env=self.env, cwd=self.cwd, stdout=out, stderr=subprocess.STDOUT,
                                    start_new_session=True, preexec_fn=_default_sigint)

    def wait_for(self, predicate, timeout_s: float, procs=(), what: str = "", poll_s: float = 0.5,
                 fail: bool = True):
        """The predicate's first true value within ``timeout_s``; past it, an AssertionError, or
        the last false value where ``fail`` is False. Any of ``procs`` exiting meanwhile fails."""
        deadline = time.monotonic() + timeout_s
        while time.monotonic() < deadline:
            value = predicate()
            if value:
                return value
            for proc in procs:
                assert proc.poll() is None, f"exited with {proc.returncode} while waiting for {what}"
            time.sleep(poll_s)
        if fail:
            raise AssertionError(f"no {what} within {timeout_s} s")
        return value

    def wait_for_nodes(self, names: set[str], timeout_s: float, procs=()) -> set[str]:
        """Every node in ``names`` (fully qualified) is in the ROS graph; returns the graph's."""
        from test.nodes.rosutil import watcher
        with watcher(self.env, "test_graph_watcher") as (node, spin_until):
            graph = set()

            def all_there() -> bool:
                graph.clear()
                graph.update(f"{ns.rstrip('/')}/{name}" for name, ns in node.get_node_names_and_namespaces())
                return names <= graph
            assert spin_until(all_there, timeout_s, procs), f"nodes {sorted(names - graph)} not up in {timeout_s} s"
        return graph

    def wait_for_message(self, topic: str, msg_type, timeout_s: float, procs=()):
        """The first message on ``topic``, received by an rclpy node of this process."""
        from test.nodes.rosutil import watcher
        got = []
        with watcher(self.env, "test_topic_watcher") as (node, spin_until):
            node.create_subscription(msg_type, topic, got.append, 10)
            assert spin_until(lambda: got, timeout_s, procs), f"no message on {topic} in {timeout_s} s"
        return got[0]

    def stop_daemon(self) -> None:
        self.run("daemon", "stop", timeout_s=30)


def _default_sigint():
    signal.signal(signal.SIGINT, signal.SIG_DFL)


def ctrl_c(proc: subprocess.Popen, timeout_s: float = 60.0) -> int:
    """SIGINT to the process group, as a terminal's Ctrl-C; the group's exit code. Anything of
    the group still running afterwards is killed and fails the caller."""
    os.killpg(proc.pid, signal.SIGINT)
    try:
        code = proc.wait(timeout_s)
    except subprocess.TimeoutExpired:
        os.killpg(proc.pid, signal.SIGKILL)
        proc.wait()
        raise AssertionError(f"still running {timeout_s} s after Ctrl-C")
    left = _group_members(proc.pid)
    if left:
        os.killpg(proc.pid, signal.SIGKILL)
        raise AssertionError(f"processes of the group outlived Ctrl-C: {left}")
    return code


def _group_members(pgid: int) -> list[str]:
    time.sleep(0.5)
    found = []
    for stat in Path("/proc").glob("[0-9]*/stat"):
        try:
            fields = stat.read_text().rsplit(")", 1)[1].split()
        except OSError:
            continue
        if int(fields[2]) == pgid and fields[0] != "Z":
            found.append(stat.parent.name)
    return found


def tracebacks(text: str) -> list[str]:
    return [mark for mark in TRACEBACK_MARKS if mark in text]


@pytest.fixture(scope="session")
def node_client():
    """Run a script of test/suite/node_client with Node.js, its npm packages (Foxglove's
    ws-protocol, rosmsg, rosmsg2-serialization; @mcap/core) installed under build/node_client
    once per package.json. Returns run(script, *args) -> the JSON line it printed."""
    node, npm = shutil.which("node"), shutil.which("npm")
    if not node or not npm:
        pytest.skip("Node.js and npm are needed to run Foxglove's own client library (apt-get install nodejs npm)")
    NODE_CLIENT_DIR.mkdir(parents=True, exist_ok=True)
    manifest = (NODE_CLIENT_SRC / "package.json").read_bytes()
    stamp = NODE_CLIENT_DIR / ".installed"
    for source in NODE_CLIENT_SRC.iterdir():
        shutil.copy(source, NODE_CLIENT_DIR / source.name)
    version = hashlib.sha256(manifest).hexdigest()
    if not (stamp.exists() and stamp.read_text() == version):
        done = subprocess.run([npm, "install", "--no-audit", "--no-fund", "--no-package-lock"], cwd=NODE_CLIENT_DIR,
                              capture_output=True, text=True, timeout=600)
        assert done.returncode == 0, f"npm install failed:\n{done.stdout[-2000:]}{done.stderr[-2000:]}"
        stamp.write_text(version)

    def run(script: str, *args: str, timeout_s: float = 180.0) -> dict:
        done = subprocess.run([node, str(NODE_CLIENT_DIR / script), *args], capture_output=True, text=True,
                              timeout=timeout_s)
        assert done.returncode == 0, f"node {script} failed:\n{done.stdout[-3000:]}{done.stderr[-3000:]}"
        return json.loads(done.stdout.strip().splitlines()[-1])
    return run
