"""The package builds with colcon (from PyPI) in a fresh workspace against the ROS prefix at
hand (under `make test`: the Jazzy wheels), and the messages it installs import from the
install space."""

import os
import shutil
import signal
import subprocess
import sys
import time
from pathlib import Path

import pytest

REPO = Path(__file__).resolve().parents[2]
# The whole package as a clone has it: setup.py and pyproject.toml next to package.xml must not
# make colcon take it for a Python package (package.xml's ament_cmake build type wins).
PACKAGE_ITEMS = ["package.xml", "CMakeLists.txt", "setup.py", "pyproject.toml", "requirements", "README.md",
                 "msg", "srv", "edge_roofline", "launch", "config"]


@pytest.fixture(scope="module")
def colcon_install(tmp_path_factory):
    """The package built with colcon in a fresh workspace: (install prefix, build env)."""
    tmp_path = tmp_path_factory.mktemp("colcon")
    colcon = Path(sys.executable).with_name("colcon")
    assert colcon.exists(), "colcon-common-extensions missing from the venv (see requirements.txt)"
    src = tmp_path / "src" / "edge_roofline"
    src.mkdir(parents=True)
    for item in PACKAGE_ITEMS:
        if (REPO / item).is_dir():
            shutil.copytree(REPO / item, src / item, ignore=shutil.ignore_patterns("__pycache__"))
        else:
            shutil.copy(REPO / item, src / item)
    env = dict(os.environ)
    env.setdefault("AMENT_PREFIX_PATH", sys.prefix)
    env.setdefault("CMAKE_PREFIX_PATH", sys.prefix)
    build = subprocess.run(
        [str(colcon), "build", "--base-paths", "src", "--build-base", "build", "--install-base", "install",
         "--cmake-args", f"-DPython3_EXECUTABLE={sys.executable}"],
        cwd=tmp_path, env=env, capture_output=True, text=True, timeout=600)
    assert build.returncode == 0, build.stdout[-4000:] + build.stderr[-4000:]
    return tmp_path / "install" / "edge_roofline", env


def test_colcon_build_in_fresh_workspace(colcon_install):
    prefix, env = colcon_install
    tmp_path = prefix.parent.parent
    site = next(prefix.glob("lib/python3*/site-packages"))
    assert (prefix / "lib" / "edge_roofline" / "power_monitor").exists()
    assert (prefix / "share" / "edge_roofline" / "config" / "fastdds_localhost.xml").exists()
    run_env = dict(env)
    run_env["PYTHONPATH"] = str(site)
    run_env["LD_LIBRARY_PATH"] = os.pathsep.join([str(prefix / "lib"), env.get("LD_LIBRARY_PATH", "")])
    probe = subprocess.run(
        [sys.executable, "-c",
         "import edge_roofline.msg as m; from edge_roofline.msg import LayerRoofline, RooflineReport, "
         "PowerTelemetry, GovernorState; r = RooflineReport(layers=[LayerRoofline(name='x')]); "
         "print(m.__file__); print(r.layers[0].name)"],
        cwd=tmp_path, env=run_env, capture_output=True, text=True, timeout=60)
    assert probe.returncode == 0, probe.stderr
    module_file, layer_name = probe.stdout.split()
    assert module_file.startswith(str(site)), module_file
    assert layer_name == "x"


def test_launch_resolves_the_executables_of_the_colcon_install(colcon_install, ros_env, tmp_path):
    """As sourcing install/setup.bash would: the install space first on the ament path. The
    real `ros2` (shared/ros2-tools) finds the package there, lists every executable the launch
    file starts from <prefix>/lib/edge_roofline, loads the installed launch file, and `ros2 run`
    starts a node from the install space."""
    from edge_roofline.suite.spec import EXTRAS, NODES
    from test.suite.ros2_tools import ensure_installed
    installed, why = ensure_installed()
    if not installed:
        pytest.skip(why)
    prefix, _ = colcon_install
    site = next(prefix.glob("lib/python3*/site-packages"))
    env = dict(ros_env, AMENT_PREFIX_PATH=os.pathsep.join([str(prefix), sys.prefix]), PYTHONPATH=str(site),
               ROS_LOG_DIR=str(tmp_path / "log"), PATH=os.pathsep.join([str(Path(sys.executable).parent),
                                                                       os.environ.get("PATH", "")]))
    env["LD_LIBRARY_PATH"] = os.pathsep.join([str(prefix / "lib"), os.environ.get("LD_LIBRARY_PATH", "")])

    def ros2(*args):
        return subprocess.run(["ros2", *args], env=env, cwd=tmp_path, capture_output=True, text=True, timeout=120)
    assert ros2("pkg", "prefix", "edge_roofline").stdout.strip() == str(prefix)
    listed = set(ros2("pkg", "executables", "edge_roofline").stdout.splitlines())
    assert {f"edge_roofline {spec.executable}" for spec in NODES + EXTRAS} <= listed, listed
    args = ros2("launch", "edge_roofline", "edge_roofline.launch.py", "--show-args")
    assert args.returncode == 0 and str(prefix / "share" / "edge_roofline" / "config") in args.stdout, args.stdout
    with open(tmp_path / "run.log", "w") as out:
        node = subprocess.Popen(["ros2", "run", "edge_roofline", "power_monitor", "--ros-args", "-p", "platform:=cpu"],
                                env=env, cwd=tmp_path, stdout=out, stderr=subprocess.STDOUT, start_new_session=True)
    try:
        deadline = time.monotonic() + 60
        while "monitoring" not in (tmp_path / "run.log").read_text() and time.monotonic() < deadline:
            assert node.poll() is None, (tmp_path / "run.log").read_text()
            time.sleep(0.2)
        started = [cmd for cmd in _group_cmdlines(node.pid) if "lib/edge_roofline/power_monitor" in cmd]
    finally:
        os.killpg(node.pid, signal.SIGINT)  # ros2 run forwards no signal: Ctrl-C reaches the group
        code = node.wait(30)
    log = (tmp_path / "run.log").read_text()
    assert code == 0 and "monitoring" in log and "Traceback" not in log, log
    assert started and all(str(prefix / "lib" / "edge_roofline" / "power_monitor") in cmd for cmd in started), started


def _group_cmdlines(pgid: int) -> list[str]:
    found = []
    for stat in Path("/proc").glob("[0-9]*/stat"):
        try:
            if int(stat.read_text().rsplit(")", 1)[1].split()[2]) == pgid:
                found.append((stat.parent / "cmdline").read_bytes().replace(b"\0", b" ").decode())
        except (OSError, ValueError, IndexError):
            continue
    return found
