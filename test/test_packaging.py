"""What `pip install .` (setup.py) put into the venv works on its own: the CLI, a node
executable from lib/edge_roofline and the messages, run from an empty directory with
PYTHONPATH cleared, so nothing can come from the source tree. And the wheel's dependency
metadata is the one in requirements/."""

import os
import re
import signal
import subprocess
import sys
import sysconfig
import xml.etree.ElementTree as ET
from importlib import metadata
from pathlib import Path

from edge_roofline.ros import topics
from edge_roofline.cli import main as cli_main
from edge_roofline.msg import PowerTelemetry
from test.nodes.rosutil import log_text, stop_node, watcher

REPO = Path(__file__).resolve().parents[1]
DISTRIBUTION = "edge-roofline-suite"
PREFIX = Path(sys.prefix)
SITE = Path(sysconfig.get_path("purelib"))


def installed_env(ros_env: dict) -> dict:
    env = dict(ros_env)
    env.pop("PYTHONPATH", None)
    return env


def test_messages_and_package_import_from_site_packages(ros_env, tmp_path):
    probe = subprocess.run(
        [sys.executable, "-c",
         "import edge_roofline, edge_roofline.msg as m, edge_roofline.srv as s; "
         "r = m.RooflineReport(layers=[m.LayerRoofline(name='x')]); s.SetPowerMode.Request(mode='MAXN'); "
         "print(r.layers[0].name); print(m.__file__); print(*edge_roofline.__path__, sep=chr(10))"],
        cwd=tmp_path, env=installed_env(ros_env), capture_output=True, text=True, timeout=60)
    assert probe.returncode == 0, probe.stderr
    layer_name, *paths = probe.stdout.split("\n")[:-1]
    assert layer_name == "x"
    # the source package (REPO/edge_roofline) is nowhere on the package's path
    assert paths and all(Path(path).is_relative_to(SITE) for path in paths), paths


def test_installed_package_holds_no_module_the_source_lacks():
    """A module deleted or moved in the source is gone from the install too (a stale copy would
    hide a broken import). Fails after a move until the package is reinstalled (make setup)."""
    installed = SITE / "edge_roofline"
    generated = {installed / "msg", installed / "srv"}
    stale = [str(path.relative_to(SITE)) for path in installed.rglob("*.py")
             if not any(g in path.parents for g in generated)
             and not (REPO / path.relative_to(SITE)).exists()]
    assert not stale, f"installed but not in the source: {stale}; reinstall with make setup"


def test_cli_runs_from_the_venv(ros_env, tmp_path, capsys):
    """A command that reads the installed package data (the device catalogue) prints what the
    source tree's CLI prints."""
    args = ["ceilings", "--device", "agx_orin_64gb", "--operating-point", "MAXN"]
    run = subprocess.run([str(PREFIX / "bin" / "edge-roofline"), *args], cwd=tmp_path, env=installed_env(ros_env),
                         capture_output=True, text=True, timeout=60)
    assert run.returncode == 0, run.stderr
    assert cli_main(args) == 0
    assert run.stdout == capsys.readouterr().out
    assert run.stdout.startswith("AGX Orin 64GB MAXN gpu fp32\n  peak ")


def test_installed_node_executable_publishes(ros_env, tmp_path):
    """lib/edge_roofline/<node> is what `ros2 run` starts; the share/ files are beside it."""
    executable = PREFIX / "lib" / "edge_roofline" / "power_monitor"
    assert os.access(executable, os.X_OK), executable
    assert (PREFIX / "share" / "edge_roofline" / "package.xml").exists()
    assert (PREFIX / "share" / "ament_index" / "resource_index" / "packages" / "edge_roofline").exists()
    telemetry = []
    log = tmp_path / "power_monitor.log"
    with watcher(ros_env) as (node, spin_until), open(log, "w") as out:
        node.create_subscription(PowerTelemetry, topics.POWER_TELEMETRY, telemetry.append, 10)
        proc = subprocess.Popen([str(executable), "--ros-args", "-p", "platform:=cpu"], cwd=tmp_path,
                                env=installed_env(ros_env), stdout=out, stderr=subprocess.STDOUT)
        try:
            assert spin_until(lambda: telemetry, timeout_s=30, procs=[proc]), log_text(log)
        finally:
            assert stop_node(proc) == 0, log_text(log)
    assert telemetry[0].source == "cpu (no power sensor)"


def test_installed_node_executable_holds_ctrl_c_until_its_handlers(ros_env, tmp_path):
    """Under `ros2 launch` on a loaded machine, a Ctrl-C 0.7-1 s after launch reached the nodes
    while `import edge_roofline` (pkgutil, typing) was running, before entry.py's handlers: each
    printed a KeyboardInterrupt traceback and died -2. The executable blocks the signals from its
    first line; the handlers take one sent since, and the node ends quietly with 0. (Here the
    signal is sent while blocked, as it would arrive during that import.)"""
    executable = PREFIX / "lib" / "edge_roofline" / "power_monitor"
    lines = executable.read_text().splitlines()
    blocks = next(i for i, line in enumerate(lines) if "pthread_sigmask(signal.SIG_BLOCK" in line)
    assert blocks < next(i for i, line in enumerate(lines) if "edge_roofline" in line), lines
    log = tmp_path / "power_monitor.log"
    with open(log, "w") as out:
        proc = subprocess.Popen([str(executable), "--ros-args", "-p", "platform:=cpu"], cwd=tmp_path,
                                env=installed_env(ros_env), stdout=out, stderr=subprocess.STDOUT,
                                preexec_fn=lambda: signal.pthread_sigmask(signal.SIG_BLOCK, [signal.SIGINT]))
        proc.send_signal(signal.SIGINT)
        try:
            assert proc.wait(30) == 0, log_text(log)
        finally:
            proc.kill()
    assert "Traceback" not in log_text(log) and "monitoring" not in log_text(log), log_text(log)


def _requirements(name: str) -> list[str]:
    lines = (line.split("#", 1)[0].strip() for line in (REPO / "requirements" / name).read_text().splitlines())
    return [line for line in lines if line and not line.startswith("-")]


def test_wheel_metadata_comes_from_requirements():
    requires = metadata.requires(DISTRIBUTION)
    plain = {r for r in requires if "extra ==" not in r}
    assert plain == set(_requirements("runtime.txt"))
    for distro in ("jazzy", "kilted"):
        extra = {r.split(";")[0].strip() for r in requires if f'extra == "{distro}"' in r}
        assert extra == set(_requirements(f"ros-{distro}.txt")), distro


def test_package_xml_ros_dependencies_match_the_wheel_lists():
    """package.xml (rosdep, colcon) and requirements/ros-<distro>.txt name the same ROS packages."""
    root = ET.parse(REPO / "package.xml").getroot()
    keys = {e.text for e in root if e.tag in ("depend", "exec_depend")}
    # ROS package names have no dashes; rosdep's keys for requirements/runtime.txt do
    # (python3-yaml, mcap-ros2-support). launch_ros has no wheel.
    ros_keys = {k for k in keys if "-" not in k} - {"launch_ros"}
    for distro in ("jazzy", "kilted"):
        wheels = {re.sub(r"\[.*\]", "", r) for r in _requirements(f"ros-{distro}.txt")}
        assert wheels == {f"ros-{distro}-" + k.replace("_", "-") for k in ros_keys}, distro
