"""The real `ros2 launch` of the shipped launch file, beyond the robot suite of test_ros2_cli:
its default parameters; a namespace, a streams argument, the string `off` and a Fast DDS profile
of the user's own; and every `ros2 launch` and `ros2 run` line README.md and docs/ show, run as
written (each alone on its own ROS domain). A node written for a real Jetson may refuse to start
on this machine, with one line and exit 2, where the docs' table says so (doc_commands.py); every other
node runs until Ctrl-C and finishes cleanly."""

import re
import shutil
import subprocess
from pathlib import Path

import pytest

from edge_roofline.paths import config_file
from edge_roofline.suite.env import FASTDDS_PROFILE_NAME, profile_variable
from test.conftest import REPO
from test.suite.conftest import Ros2, ctrl_c, tools_env
from test.suite.doc_commands import doc_commands, kind, make_user_files, refusals, words
from test.suite.robot import launch_output_ok, robot_params

LAUNCHED = [(doc, cmd) for doc, cmd in doc_commands() if kind(cmd) in ("launch", "run")]
CORE = {"power_monitor", "inference", "governor"}


@pytest.fixture
def ros2(ros2_tools, tmp_path):
    tools = Ros2(tools_env(tmp_path), tmp_path)
    yield tools
    tools.stop_daemon()


def launch(ros2: Ros2, *args: str, log_name: str = "launch.log") -> subprocess.Popen:
    return ros2.start(["launch", "edge_roofline", "edge_roofline.launch.py", *args], ros2.cwd / log_name)


def test_default_parameters_start_the_virtual_orin_suite(ros2):
    proc = launch(ros2)
    log = ros2.cwd / "launch.log"
    try:
        ros2.wait_for_nodes({f"/{n}" for n in CORE}, 180, [proc])
        ros2.wait_for(lambda: ros2.run("param", "get", "/governor", "mode").stdout.strip(), 60, [proc],
                      "the governor answering")  # built, spinning: a stop is no longer an interrupted start
    finally:
        code = ctrl_c(proc)
    text = log.read_text()
    assert code == 0 and not launch_output_ok(text), text[-5000:]
    assert "virtual Jetson AGX Orin 64GB (SIMULATION" in text or "virtual AGX Orin 64GB" in text, text


def test_namespace_streams_off_and_a_users_own_profile(ros2):
    own = ros2.cwd / "my_profile.xml"
    shutil.copy(config_file(FASTDDS_PROFILE_NAME), own)
    ros2.env[profile_variable(ros2.env)] = str(own)
    robot_params(ros2.cwd / "my_robot.yaml", ros2.cwd / "board")
    proc = launch(ros2, "params_file:=my_robot.yaml", "namespace:=robot1", "governor_mode:=off",
                  "governor_streams:=[{name: det, target_latency_ms: 30}]")
    try:
        ros2.wait_for_nodes({f"/robot1/{n}" for n in CORE}, 180, [proc])
        mode = ros2.run("param", "get", "/robot1/governor", "mode")
        streams = ros2.run("param", "get", "/robot1/governor", "streams")
        # The stream's default topic is relative: in the namespace, under the stream's name.
        info = ros2.wait_for(lambda: _subscribers(ros2, "/robot1/det/inference/stats"), 30, [proc],
                             "the governor's subscription to its stream")
        environ = [Path(f"/proc/{pid}/environ").read_bytes() for pid in _children(proc.pid)]
    finally:
        code = ctrl_c(proc)
    text = (ros2.cwd / "launch.log").read_text()
    assert code == 0 and not launch_output_ok(text), text[-5000:]
    assert mode.stdout.strip() == "String value is: off", mode.stdout + mode.stderr  # not the bool false
    assert streams.stdout.strip() == "String value is: [{name: det, target_latency_ms: 30}]", streams.stdout
    assert info >= 1
    assert environ and all(f"{profile_variable(ros2.env)}={own}".encode() in env for env in environ)


@pytest.mark.parametrize("doc,cmd", LAUNCHED, ids=[f"{d}:{c[:70]}" for d, c in LAUNCHED])
def test_documented_launch_or_run_line_runs_as_written(ros2, doc, cmd):
    if "with:=" in cmd and "foxglove_bridge" in cmd and not _port_free(8765):
        pytest.skip("port 8765, which this line's Foxglove server takes, is in use on this machine")
    make_user_files(ros2.cwd / "models", ros2.cwd)
    robot_params(ros2.cwd / "my_robot.yaml", ros2.cwd / "board")  # the README's my_robot.yaml, on a virtual board
    (ros2.cwd / "config").symlink_to(REPO / "config")  # lines that name config/... run from a clone's root
    (ros2.cwd / "src").mkdir()
    (ros2.cwd / "src" / "edge_roofline").symlink_to(REPO)  # ... and src/edge_roofline/... from a colcon workspace's
    argv = words(cmd, ros2.cwd / "models")
    log = ros2.cwd / "out.log"
    refused = refusals(cmd)
    proc = ros2.start(argv[1:], log)
    try:
        expected = {n for n in _nodes_of(argv, ros2.cwd) if n.rsplit("/", 1)[1] not in refused}
        ros2.wait_for_nodes(expected, 180, [proc])
        for node, why in refused.items():  # it says why in one line and exits 2 (launch keeps the rest), or runs
            ros2.wait_for(lambda: f"{node}: cannot start: " in log.read_text() or _listed(ros2, node), 60, [],
                          f"{node} running or refusing ({why})")
    finally:
        code = ctrl_c(proc) if proc.poll() is None else proc.returncode
    text = log.read_text()
    problems = [p for p in launch_output_ok(text)
                if not any(re.search(rf"\[{n}-\d+\]: process has died .*exit code 2", p) for n in refused)]
    assert not problems, f"{problems}\n{text[-5000:]}"
    lines = [line for line in text.splitlines() if "cannot start:" in line]
    assert all(line.split("] ", 1)[-1].split(":", 1)[0] in refused for line in lines), lines
    if kind(cmd) == "run" and lines:
        assert code == 2 and len(lines) == 1, text
    else:
        assert code == 0, text[-5000:]


def _nodes_of(argv: list[str], cwd: Path) -> set[str]:
    """The fully qualified nodes a launch or run line starts."""
    if argv[1] == "run":
        ns = next((a.split(":=", 1)[1] for a in argv if a.startswith("__ns:=")), "")
        return {f"{ns.rstrip('/')}/{argv[3]}"}
    from edge_roofline.paths import config_file as resolve
    from edge_roofline.suite.spec import load_params, suite_plan
    values = dict(a.split(":=", 1) for a in argv[4:] if ":=" in a)
    name = values.get("params_file", "virtual_agx_orin.yaml")
    params = load_params(cwd / name if (cwd / name).is_file() else resolve(name))
    ns = values.get("namespace", "")
    return {f"/{s.namespace}/{s.spec.name}".replace("//", "/") for s in suite_plan(
        params, extras=values.get("with", ""), record=values.get("record", ""), namespace=ns)}


def _listed(ros2: Ros2, node: str) -> bool:
    return any(n.rsplit("/", 1)[-1] == node for n in ros2.run("node", "list", "--no-daemon").stdout.split())


def _subscribers(ros2: Ros2, topic: str) -> int:
    info = ros2.run("topic", "info", topic, "--no-daemon")
    found = re.search(r"Subscription count: (\d+)", info.stdout)
    return int(found[1]) if found else 0


def _children(pid: int) -> list[int]:
    kids = []
    for stat in Path("/proc").glob("[0-9]*/stat"):
        try:
            if int(stat.read_text().rsplit(")", 1)[1].split()[1]) == pid:
                kids.append(int(stat.parent.name))
        except (OSError, ValueError, IndexError):
            continue
    return kids


def _port_free(port: int) -> bool:
    import socket
    with socket.socket() as s:
        try:
            s.bind(("127.0.0.1", port))
        except OSError:
            return False
    return True
