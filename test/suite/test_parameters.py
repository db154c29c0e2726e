"""A parameter file is checked against the nodes' declared PARAMETERS before anything starts
(`edge-roofline up` and the launch file both read it with bringup.load_params): unknown nodes,
unknown keys, wrong types and bad YAML are one line naming the file, the key and the allowed
ones."""

import importlib

import pytest

from edge_roofline.suite.spec import load_params
from edge_roofline.suite.parameters import ParameterFileError, declared_parameters


def _file(tmp_path, text):
    path = tmp_path / "params.yaml"
    path.write_text(text)
    return path


def test_the_tables_read_without_importing_are_the_nodes_own():
    declared = declared_parameters()
    assert set(declared) == {"console", "foxglove_bridge", "generation", "governor", "inference", "latency_probe",
                             "power_monitor", "synthetic_camera"}
    for node, table in declared.items():
        parameters = importlib.import_module(f"edge_roofline.nodes.{node}").PARAMETERS
        assert list(table) == list(parameters), node
        for name, default in table.items():  # a literal default is read as it is; others are left to the node
            assert default in (..., []) or default == parameters[name][0], (node, name)


@pytest.mark.parametrize("text, expected", [
    ("inferense:\n  ros__parameters:\n    model: zoo:tiny_cnn\n",
     "unknown node 'inferense' (did you mean 'inference'?); allowed: console, foxglove_bridge, generation, "
     "governor, inference, latency_probe, power_monitor, synthetic_camera"),
    ("governor:\n  ros__parameters:\n    target_latency: 20.0\n",
     "governor: unknown key 'target_latency' (did you mean 'target_latency_ms'?); allowed: "),
    ("inference:\n  ros__parameters:\n    scale: abc\n",
     "inference: scale is 'abc' (string), expected double like its default 255.0"),
    ("console:\n  ros__parameters:\n    period_s: 2\n",
     "console: period_s is 2 (integer), expected double like its default 1.0 (write 2.0"),
    ("inference:\n  ros__parameters:\n    mean: [1, 2, 3]\n",
     "inference: mean is [1, 2, 3] (list), expected a list of double"),
    ("foxglove_bridge:\n  ros__parameters:\n    topics: image\n",
     "foxglove_bridge: topics is 'image' (string), expected a list"),
    ("power_monitor:\n  ros__parameters:\n    publish_outputs: true\n", "power_monitor: unknown key 'publish_outputs'"),
    # A section nested as ROS reads it (safety.stale_telemetry_s), checked by its full name.
    ("governor:\n  ros__parameters:\n    safety: {stale_telemetry: 0.5}\n",
     "governor: unknown key 'safety.stale_telemetry' (did you mean 'safety.stale_telemetry_s'?)"),
    ("governor:\n  ros__parameters:\n    safety: {stale_telemetry_s: 1}\n",
     "governor: safety.stale_telemetry_s is 1 (integer), expected double like its default 1.0"),
    # What the governor itself would refuse at start (GovernorConfig), after the suite had started around it.
    ("governor:\n  ros__parameters:\n    mode: bogus\n",
     "governor: mode must be one of off, advise, active, got 'bogus'"),
    ("/robot/governor:\n  ros__parameters:\n    streams: '[{name: det, target_latency_ms: 30, latency: e2e}]'\n",
     "robot/governor: stream det: latency must be execution or end_to_end"),
    ("/**:\n  ros__parameters:\n    percentile: 120.0\ngovernor:\n  ros__parameters:\n    margin: 0.2\n",
     "governor: percentile must be in (0, 100], got 120.0"),
    # Refused by the governor before it opens the board (node_config): before, only once the suite had started.
    ("governor:\n  ros__parameters:\n    model: zoo:tiny_cnn\n    streams: '[{name: det, target_latency_ms: 30}]'\n",
     "governor: model 'zoo:tiny_cnn' names no stream: with streams, give the stream its own model key"),
    ("governor:\n  ros__parameters:\n    prior_table: t.json\n"
     "    streams: '[{name: a, target_latency_ms: 30}, {name: b, target_latency_ms: 50}]'\n",
     "governor: prior_table describes one model: use it with one stream (no streams list)"),
    # What the inference node refuses at start (inference_config), before the suite starts anything around it.
    ("inference:\n  ros__parameters:\n    backend: tensorrt\n    precision: int8\n",
     "inference: invalid inference parameters: TensorRT builds int8 from a calibration cache"),
    ("inference:\n  ros__parameters:\n    backend: tensorrt\n    model: /models/yolo.engine\n",
     "inference: invalid inference parameters: model /models/yolo.engine is a TensorRT engine, with no ONNX graph"),
    ("/**:\n  ros__parameters:\n    platform: virtual:agx_orin_64gb\n"
     "inference:\n  ros__parameters:\n    backend: virtual\n    precision: mixed\n",
     "inference: invalid inference parameters: backend virtual times the whole model at one precision, not mixed"),
])
def test_unknown_nodes_keys_and_wrong_types_are_refused(tmp_path, text, expected):
    path = _file(tmp_path, text)
    with pytest.raises(ParameterFileError) as info:
        load_params(path)
    assert str(info.value).startswith(f"parameter file {path}: ") and expected in str(info.value)


def test_a_nested_section_is_read_as_ros_reads_it(tmp_path):
    path = _file(tmp_path, "governor:\n  ros__parameters:\n    safety: {stale_telemetry_s: 0.5}\n"
                           "    points:\n      cpu_steps: 2\n")
    assert load_params(path) == {"governor": {"safety.stale_telemetry_s": 0.5, "points.cpu_steps": 2}}


def test_every_problem_is_named_at_once(tmp_path):
    path = _file(tmp_path, "inference:\n  ros__parameters:\n    modle: x\n    width: wide\n")
    with pytest.raises(ParameterFileError, match=r"unknown key 'modle' .*; inference: width is 'wide'"):
        load_params(path)


def test_what_ros_allows_is_allowed(tmp_path):
    path = _file(tmp_path, "/robot/inference:\n  ros__parameters:\n    model: zoo:tiny_cnn\n    use_sim_time: true\n"
                           "/**:\n  ros__parameters:\n    sysfs_root: /tmp/x\n    rate_hz: 15.0\n"
                           "governor:\n  ros__parameters:\n    margin: 0.2\n")
    assert load_params(path)["robot/inference"]["model"] == "zoo:tiny_cnn"
    with pytest.raises(ParameterFileError, match="unknown key 'rat_hz'"):
        load_params(_file(tmp_path, "/**:\n  ros__parameters:\n    rat_hz: 15.0\n"))


def test_bad_yaml_is_one_line_with_the_place(tmp_path):
    path = _file(tmp_path, "inference:\n  ros__parameters:\n    model: [zoo:tiny_cnn\n")
    with pytest.raises(ValueError) as info:
        load_params(path)
    assert str(info.value) == (f"parameter file {path} is not valid YAML at line 4, column 1: "
                               "expected ',' or ']', but got '<stream end>'")
