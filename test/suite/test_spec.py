"""The launch file, `edge-roofline up` and the shipped parameter files agree: every node they
start is an installed executable, and every parameter a file sets is declared by that node.
(test/suite runs the launch file with the real `ros2 launch`; these need no ROS tools.)"""

import ast
import importlib
import re
from pathlib import Path

import pytest

from edge_roofline.suite.spec import (ARGUMENTS, BRIDGE, EXTRAS, NODES, argument_overrides, configured_nodes,
                                      extra_nodes, load_params, suite_plan, virtual_devices)

REPO = Path(__file__).resolve().parents[2]
PARAM_FILES = sorted(p for p in (REPO / "config").glob("*.yaml"))
CMAKE_EXECUTABLES = set(re.search(r"foreach\(_node ([^)]*)\)", (REPO / "CMakeLists.txt").read_text()).group(1).split())


def declared_parameters(executable: str) -> set[str]:
    return set(importlib.import_module(f"edge_roofline.nodes.{executable}").PARAMETERS)


def test_launch_file_starts_the_spec_node_list():
    tree = ast.parse((REPO / "launch" / "edge_roofline.launch.py").read_text())
    imported = {alias.name for node in ast.walk(tree) if isinstance(node, ast.ImportFrom)
                and node.module == "edge_roofline.suite.spec" for alias in node.names}
    assert "suite_plan" in imported, "the launch file must take its node list from edge_roofline.suite.spec"
    assert "argument_overrides" in imported and "ARGUMENTS" in imported, "launch arguments come from the spec too"
    assert any(isinstance(n, ast.Call) and getattr(n.func, "id", "") == "Node" for n in ast.walk(tree))
    default = next(n for n in ast.walk(tree) if isinstance(n, ast.Constant) and str(n.value).endswith(".yaml"))
    assert (REPO / "config" / default.value).is_file(), f"launch default {default.value} is not shipped"


@pytest.mark.parametrize("spec", NODES + EXTRAS, ids=lambda s: s.executable)
def test_every_started_node_is_an_installed_executable(spec):
    assert spec.executable in CMAKE_EXECUTABLES
    assert callable(importlib.import_module(f"edge_roofline.nodes.{spec.executable}").main)


@pytest.mark.parametrize("path", PARAM_FILES, ids=lambda p: p.name)
def test_parameter_files_set_only_declared_parameters(path):
    params = load_params(path)
    known = {spec.name: spec.executable for spec in NODES + EXTRAS}
    for node, values in params.items():
        assert node in known, f"{path.name}: unknown node {node!r}"
        undeclared = set(values) - declared_parameters(known[node])
        assert not undeclared, f"{path.name}: {node} does not declare {sorted(undeclared)}"
    virtual_devices(params)  # a virtual platform must name its tree


def test_one_tree_for_two_virtual_devices_is_refused():
    # The last one's board was started, and the other node read it as its own device.
    params = {"power_monitor": {"platform": "virtual:agx_orin_64gb", "sysfs_root": "/tmp/t"},
              "inference": {"platform": "virtual:orin_nx_16gb", "sysfs_root": "/tmp/t"}}
    with pytest.raises(ValueError, match="sysfs_root /tmp/t is given to virtual:agx_orin_64gb and to "
                                         "virtual:orin_nx_16gb: one virtual Jetson per root"):
        virtual_devices(params)
    params["inference"]["platform"] = "virtual:agx_orin_64gb"
    assert virtual_devices(params) == {"/tmp/t": "agx_orin_64gb"}


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
    # The governor's own check, where the governor would refuse the value only once the suite ran.
    with pytest.raises(ValueError, match="^governor_mode: mode must be one of off, advise, active, got 'bogus'$"):
        argument_overrides({"governor_mode": "bogus"})
    with pytest.raises(ValueError, match=r"^target_latency_ms: target_latency_ms must be > 0, got -5.0$"):
        argument_overrides({"target_latency_ms": "-5"})
    with pytest.raises(ValueError, match="^governor_streams: stream det: phase must be prefill or decode"):
        argument_overrides({"governor_streams": "[{name: det, target_latency_ms: 30, phase: prefil}]"})
    for node, param, _, _ in ARGUMENTS.values():
        executable = next(s.executable for s in NODES + EXTRAS if s.name == node)
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


def test_the_plan_adds_extras_and_a_recording(tmp_path):
    params = load_params(REPO / "config" / "agx_orin.yaml")  # a robot's file: no camera, console or bridge
    names = [start.spec.name for start in suite_plan(params)]
    assert names == ["power_monitor", "inference", "governor"]
    plan = suite_plan(params, extras="synthetic_camera,foxglove_bridge", overrides={BRIDGE: {"port": 0}})
    assert [s.spec.name for s in plan] == names + ["synthetic_camera", BRIDGE]
    assert plan[-1].overrides == {"port": 0}
    # Recording beside a server: the same bridge does both (a second one would find the port taken).
    plan = suite_plan(params, extras=["foxglove_bridge"], record=tmp_path / "run.mcap")
    assert [s.spec.name for s in plan].count(BRIDGE) == 1
    assert plan[-1].overrides == {"mcap_path": str(tmp_path / "run.mcap")}
    # Recording alone: a bridge that serves nothing; a relative path is the caller's directory's.
    plan = suite_plan(params, record="run.mcap")
    assert plan[-1].spec.name == BRIDGE and plan[-1].overrides == {"serve": False,
                                                                   "mcap_path": str(Path.cwd() / "run.mcap")}
    with pytest.raises(ValueError, match=r"unknown extra node\(s\) \['camera'\]; choose from synthetic_camera"):
        extra_nodes("camera,console")
    assert extra_nodes("") == () and [s.name for s in extra_nodes("console, console")] == ["console"]


def test_a_language_model_starts_in_a_namespace_of_its_own():
    """Its inference/stats must not mix with the inference node's; it still reads the suite's power."""
    from edge_roofline.suite.supervisor import node_command
    params = load_params(REPO / "config" / "virtual_agx_orin_llm.yaml")
    plan = suite_plan(params, namespace="/robot1")
    assert [s.spec.name for s in plan] == ["power_monitor", "generation"]
    power, generation = plan
    assert power.namespace == "robot1" and generation.namespace == "robot1/llm"
    # ROS applies a plain `generation:` section only outside a namespace: the plan carries it.
    assert generation.overrides["model"] == "zoo:tiny_decoder" and generation.overrides["backend"] == "virtual"
    assert generation.overrides["power_topic"] == "/robot1/power/telemetry"
    assert suite_plan(params)[1].overrides["power_topic"] == "/power/telemetry"
    own = suite_plan({**params, "generation": {**params["generation"], "power_topic": "/elsewhere"}})[1]
    assert own.overrides["power_topic"] == "/elsewhere"
    cmd = node_command("generation", "generation", "f.yaml", {}, generation.namespace)
    assert cmd[cmd.index("__ns:=/robot1/llm") - 1] == "-r"

    # Recording or serving Foxglove beside it: the bridge forwards its topics too, in the suite's namespace.
    plan = suite_plan(params, extras="foxglove_bridge", namespace="robot1")
    assert plan[-1].namespace == "robot1" and "llm/generation/tokens" in plan[-1].overrides["topics"]
    recorder = suite_plan(params, record="run.mcap", namespace="robot1")[-1]
    assert recorder.namespace == "robot1" and "llm/inference/stats" in recorder.overrides["topics"]
    assert "topics" not in suite_plan(load_params(REPO / "config" / "agx_orin.yaml"), record="run.mcap")[-1].overrides
