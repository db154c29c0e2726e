"""`edge-roofline up` and `demo` refuse what cannot work before starting anything: one line,
exit 2, no node and no virtual Jetson left behind."""

import socket
import subprocess
import sys

from test.conftest import REPO


def run_cli(*args: str, env: dict) -> subprocess.CompletedProcess:
    return subprocess.run([sys.executable, "-m", "edge_roofline.cli", *args], cwd=REPO, env=env,
                          capture_output=True, text=True, timeout=120)


def test_a_taken_foxglove_port_names_the_ways_out(ros_env):
    with socket.socket() as taken:
        taken.bind(("127.0.0.1", 0))
        taken.listen()
        port = taken.getsockname()[1]
        done = run_cli("demo", "--duration", "30", "--foxglove-port", str(port), env=ros_env)
    assert done.returncode == 2, done.stdout + done.stderr
    line = done.stderr.strip()
    assert "\n" not in line and "Traceback" not in done.stderr, done.stderr
    assert line.startswith(f"edge-roofline demo: error: Foxglove port {port} on 127.0.0.1 is in use"), line
    assert "--no-foxglove" in line and "--foxglove-port" in line and "port" in line, line
    assert "started" not in done.stdout and "virtual Jetson" not in done.stdout, done.stdout


def test_an_unknown_extra_is_one_line(ros_env):
    done = run_cli("up", "--with", "camera", "--duration", "1", env=ros_env)
    assert done.returncode == 2 and "Traceback" not in done.stderr, done.stderr
    assert done.stderr.strip() == ("edge-roofline up: error: unknown extra node(s) ['camera']; "
                                   "choose from synthetic_camera, console, foxglove_bridge"), done.stderr
