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


def test_a_bad_governor_mode_is_refused_before_anything_starts(ros_env):
    """Before, the virtual Jetson and three nodes started, then the governor exited 2."""
    done = run_cli("up", "--governor-mode", "bogus", "--duration", "5", env=ros_env)
    assert done.returncode == 2 and "Traceback" not in done.stderr, done.stderr
    assert done.stderr.strip() == ("edge-roofline up: error: governor_mode: mode must be one of off, advise, "
                                   "active, got 'bogus'"), done.stderr
    assert done.stdout == "", done.stdout  # no "virtual Jetson ... live", no "started 3 nodes"


def test_a_bad_governor_mode_in_the_parameter_file_is_refused_before_anything_starts(ros_env, tmp_path):
    """Before, the virtual Jetson and three nodes started, then the governor exited 2."""
    shipped = (REPO / "config" / "virtual_agx_orin.yaml").read_text()
    params = tmp_path / "params.yaml"
    params.write_text(shipped.replace("mode: active", "mode: bogus").replace("/tmp/edge_roofline", str(tmp_path)))
    done = run_cli("up", "--config", str(params), "--duration", "5", env=ros_env)
    assert done.returncode == 2 and "Traceback" not in done.stderr, done.stderr
    assert done.stderr.strip() == (f"edge-roofline up: error: parameter file {params}: governor: mode must be one of "
                                   "off, advise, active, got 'bogus'"), done.stderr
    assert done.stdout == "", done.stdout


def test_a_second_bridge_on_a_taken_port_is_one_line(ros_env):
    """As a second bridge beside a running demo: one line naming the port parameter, recording
    only (serve:=false) and --no-foxglove; exit 2."""
    with socket.socket() as taken:
        taken.bind(("127.0.0.1", 0))
        taken.listen()
        port = taken.getsockname()[1]
        done = subprocess.run([sys.executable, "-m", "edge_roofline.nodes.entry", "foxglove_bridge", "--ros-args",
                               "-p", f"port:={port}", "-p", "mcap_path:=/tmp/never.mcap"], cwd=REPO, env=ros_env,
                              capture_output=True, text=True, timeout=120)
    assert done.returncode == 2, done.stdout + done.stderr
    lines = done.stderr.strip().splitlines()
    assert len(lines) == 1 and lines[0].startswith(
        f"foxglove_bridge: cannot start: Foxglove port {port} on 127.0.0.1 is in use"), done.stderr
    assert "-p port:=0" in lines[0] and "-p serve:=false" in lines[0] and "--no-foxglove" in lines[0]


def test_up_without_a_bridge_says_how_to_get_one(ros_env, tmp_path):
    """`up` starts no Foxglove server unless asked (a robot may run its own foxglove_bridge on
    8765), and says how to ask."""
    cfg = tmp_path / "cpu.yaml"
    cfg.write_text("power_monitor:\n  ros__parameters:\n    platform: cpu\n")
    done = run_cli("up", "--config", str(cfg), "--duration", "3", env=ros_env)
    assert done.returncode == 0, done.stdout + done.stderr
    assert "Foxglove: no server (add --with foxglove_bridge; ros2 launch: with:=foxglove_bridge)" in done.stdout
    assert "stopped: power_monitor=0" in done.stdout, done.stdout


def test_a_node_that_failed_just_before_the_end_is_reported(tmp_path):
    """--duration ending in the same poll as a node's failure: the failure wins (its line is shown,
    up exits 2); it was exit 0 and a bare 'inference=2' in the stopped line."""
    from edge_roofline.suite.supervisor import Managed, Supervisor

    supervisor = Supervisor({})
    failed = subprocess.Popen([sys.executable, "-c", "raise SystemExit(2)"])
    failed.wait()
    supervisor.children.append(Managed("inference", failed, None))
    assert supervisor.wait(lambda: True) is supervisor.children[0]
