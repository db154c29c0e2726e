"""The launch file, `edge-roofline up` and the shipped parameter files agree: every node they
start is an installed executable, and every parameter a file sets is declared by that node.
(The ROS launch tools are not installable from PyPI, so the launch file is checked by parsing
it, not by running `ros2 launch`.)"""

import ast
import importlib
import re
from pathlib import Path

import pytest

from edge_roofline.commands.up import EXTRAS
from edge_roofline.suite.spec import (ARGUMENTS, NODES, argument_overrides, configured_nodes, load_params,
                                      virtual_devices)

REPO = Path(__file__).resolve().parents[2]
PARAM_FILES = sorted(p for p in (REPO / "config").glob("*.yaml"))
CMAKE_EXECUTABLES = set(re.search(r"foreach\(_node ([^)]*)\)", (REPO / "CMakeLists.txt").read_text()).group(1).split())


def declared_parameters(executable: str) -> set[str]:
    return set(importlib.import_module(f"edge_roofline.nodes.{executable}").PARAMETERS)


def test_launch_file_starts_the_spec_node_list():
    tree = ast.parse((REPO / "launch" / "edge_roofline.launch.py").read_text())
    imported = {alias.name for node in ast.walk(tree) if isinstance(node, ast.ImportFrom)
                and node.module == "edge_roofline.suite.spec" for alias in node.names}
    assert "configured_nodes" in imported, "the launch file must take its node list from edge_roofline.suite.spec"
    assert "argument_overrides" in imported and "ARGUMENTS" in imported, "launch arguments come from the spec too"
    assert any(isinstance(n, ast.Call) and getattr(n.func, "id", "") == "Node" for n in ast.walk(tree))
    default = next(n for n in ast.walk(tree) if isinstance(n, ast.Constant) and str(n.value).endswith(".yaml"))
    assert (REPO / "config" / default.value).is_file(), f"launch default {default.value} is not shipped"


@pytest.mark.parametrize("spec", NODES + tuple(type(NODES[0])(e, e) for e in EXTRAS), ids=lambda s: s.executable)
def test_every_started_node_is_an_installed_executable(spec):
    assert spec.executable in CMAKE_EXECUTABLES
    assert callable(importlib.import_module(f"edge_roofline.nodes.{spec.executable}").main)


@pytest.mark.parametrize("path", PARAM_FILES, ids=lambda p: p.name)
def test_parameter_files_set_only_declared_parameters(path):
    params = load_params(path)
    known = {spec.name: spec.executable for spec in NODES} | {e: e for e in EXTRAS}
    for node, values in params.items():
        assert node in known, f"{path.name}: unknown node {node!r}"
        undeclared = set(values) - declared_parameters(known[node])
        assert not undeclared, f"{path.name}: {node} does not declare {sorted(undeclared)}"
    virtual_devices(params)  # a virtual platform must name its tree


def test_malformed_parameter_file_names_the_problem(tmp_path):
    bad = tmp_path / "bad.yaml"
    bad.write_text("power_monitor: [unclosed\n")
    with pytest.raises(ValueError, match="not valid YAML"):
        load_params(bad)
    bad.write_text("power_monitor:\n  platform: jetson\n")
    with pytest.raises(ValueError, match="needs a 'ros__parameters' mapping"):
        load_params(bad)


def test_launch_arguments_become_typed_overrides():
    assert argument_overrides({"target_latency_ms": "20", "governor_mode": "active"}) == \
        {"governor": {"target_latency_ms": 20.0, "mode": "active"}}
    assert isinstance(argument_overrides({"target_latency_ms": "20"})["governor"]["target_latency_ms"], float)
    assert argument_overrides({"target_latency_ms": "", "governor_mode": None}) == {}
    streams = "[{name: det, target_latency_ms: 30}]"  # the governor parses it: it stays the text given
    assert argument_overrides({"governor_streams": streams}) == {"governor": {"streams": streams}}
    with pytest.raises(ValueError, match="target_latency_ms: expected a float"):
        argument_overrides({"target_latency_ms": "fast"})
    for node, param, _, _ in ARGUMENTS.values():
        executable = next(s.executable for s in NODES if s.name == node)
        assert param in declared_parameters(executable)


def test_only_configured_nodes_start():
    virtual = [s.name for s in configured_nodes(load_params(REPO / "config" / "virtual_agx_orin.yaml"))]
    assert virtual == ["power_monitor", "inference", "governor"]  # governor last: stopped first
    host = [s.name for s in configured_nodes(load_params(REPO / "config" / "demo_host_cpu.yaml"))]
    assert "governor" not in host and "inference" in host


@pytest.mark.parametrize("name", ["virtual_agx_orin.yaml", "demo_virtual_agx_orin.yaml", "agx_orin.yaml",
                                  "agx_thor.yaml", "virtual_agx_thor.yaml",
                                  "orin_nx.yaml", "orin_nano.yaml"])
def test_governor_is_configured_consistently(name):
    params = load_params(REPO / "config" / name)
    gov, inf = params["governor"], params["inference"]
    # No override: the governor follows the model the inference node reports serving.
    assert "model" not in gov and gov["precision"] == inf["precision"], \
        "the governor's roofline must be the model the inference node serves"
    assert gov["platform"] == inf["platform"] and gov["sysfs_root"] == inf["sysfs_root"]
    expected = "active" if gov["platform"].startswith("virtual:") else "advise"
    assert gov["mode"] == expected, f"{name}: governor mode {gov['mode']}, expected {expected}"
