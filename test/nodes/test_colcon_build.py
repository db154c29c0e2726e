"""The package builds with colcon (from PyPI) in a fresh workspace against the ROS prefix at
hand (under `make test`: the Jazzy wheels), and the messages it installs import from the
install space."""

import os
import shutil
import subprocess
import sys
from pathlib import Path

REPO = Path(__file__).resolve().parents[2]
# The whole package as a clone has it: setup.py and pyproject.toml next to package.xml must not
# make colcon take it for a Python package (package.xml's ament_cmake build type wins).
PACKAGE_ITEMS = ["package.xml", "CMakeLists.txt", "setup.py", "pyproject.toml", "requirements", "README.md",
                 "msg", "srv", "edge_roofline", "launch", "config"]


def test_colcon_build_in_fresh_workspace(tmp_path):
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

    prefix = tmp_path / "install" / "edge_roofline"
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
