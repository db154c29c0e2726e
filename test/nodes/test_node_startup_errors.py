"""Every node that cannot start says why on ONE line of stderr (the problem and the fix) and
exits 2: no traceback, and no teardown of a half-built node."""

import subprocess
import sys

import pytest

from test.nodes.rosutil import REPO, _param_arg

CASES = [
    # node, parameters, what the line must say
    ("inference", {"model": "/nonexistent/model.onnx"}, "cannot read model /nonexistent/model.onnx"),
    ("inference", {"model": "CORRUPT"}, "is not a valid ONNX model"),
    ("inference", {"model": "zoo:no_such_net"}, "unknown zoo model 'no_such_net'; known: resnet18"),
    ("inference", {"backend": "bogus"}, "unknown backend 'bogus'"),
    ("inference", {"engine": "tpu"}, "unknown engine 'tpu'; use one of ('gpu', 'cpu', 'dla')"),  # at the first report
    ("inference", {"scale": "abc"}, "parameter scale is 'abc' (string), expected double like its default 255.0"),
    ("inference", {"width": 1.5}, "parameter width is '1.5' (double), expected integer"),
    ("inference", {"mean": [0.485, 0.456, 0.406]}, "parameter(s) mean are used only with the input size: set -p "
                                                   "width:=W -p height:=H too"),  # was dropped in silence
    # Timed on a private virtual board no power monitor reads and no governor moves, in silence.
    ("inference", {"backend": "virtual"}, "backend virtual times the model on a live virtual Jetson, and no "
                                          "platform is set: set -p platform:=virtual:agx_orin_64gb -p sysfs_root:=DIR"),
    # Both built at fp16 in silence: the node gave TensorRT no precision (checked before TensorRT is imported).
    ("inference", {"precision": "int8", "backend": "tensorrt"}, "TensorRT builds int8 from a calibration cache (it "
                                                               "replays one, it does not calibrate) and none is "
                                                               "given: set -p calibration_cache:=FILE"),
    # Was "not a readable ONNX model": the cost model read the engine (checked before TensorRT is imported).
    ("inference", {"model": "/models/yolo.engine", "backend": "tensorrt"}, "model /models/yolo.engine is a TensorRT "
                                                                          "engine, with no ONNX graph for the cost "
                                                                          "model and the layer mapping: set -p "
                                                                          "onnx_model:=FILE"),
    ("inference", {"precision": "mixed", "backend": "tensorrt"}, "backend tensorrt builds at fp32, fp16 or int8 (its "
                                                                "builder flags), not mixed"),
    ("governor", {"target_latency_ms": "abc"}, "parameter target_latency_ms is 'abc'"),
    ("governor", {"step_rate_hz": 0.0}, "parameter step_rate_hz must be a rate > 0 Hz, got 0.0"),
    ("governor", {"hysteresis": float("nan")}, "hysteresis must be a finite number >= 0, got nan"),  # started
    ("power_monitor", {"sample_rate_hz": "fast"}, "parameter sample_rate_hz is 'fast'"),
    ("power_monitor", {"publish_rate_hz": -20.0}, "parameter publish_rate_hz must be a rate > 0 Hz, got -20.0"),
    ("power_monitor", {"diagnostics_rate_hz": float("nan")}, "parameter diagnostics_rate_hz must be a rate > 0 Hz"),
    # Each started: a NaN threshold or warn above error never warned; a negative power one always did.
    ("power_monitor", {"temperature_warn_c": float("nan")}, "temperature_warn_c and temperature_error_c must be "
                                                            "finite, warn <= error; got nan and 95.0"),
    ("power_monitor", {"temperature_warn_c": 100.0}, "warn <= error; got 100.0 and 95.0"),
    ("power_monitor", {"power_warn_w": -5.0}, "power_warn_w and power_error_w must be >= 0 (0: off), warn <= error"),
    ("synthetic_camera", {"width": "wide"}, "parameter width is 'wide'"),
    # A MemoryError traceback (terabytes: no machine renders it).
    ("synthetic_camera", {"width": 1000000, "height": 1000000}, "frames of 1000000x1000000 rgb8 do not fit"),
    ("console", {"period_s": "often"}, "parameter period_s is 'often'"),
    # rcl's "timer period must be non-negative" and "cannot convert float NaN to integer" tracebacks,
    # a console printing nonstop, and deque's "maxlen must be non-negative".
    ("console", {"period_s": -1.0}, "parameter period_s must be a duration >= 0 s, got -1.0"),
    ("console", {"period_s": float("nan")}, "parameter period_s must be a duration >= 0 s, got nan"),
    ("console", {"period_s": 0.0}, "console: period_s must be > 0 (got 0.0), window_frames >= 1"),
    ("console", {"window_frames": -1}, "window_frames >= 1 (got -1)"),
    ("latency_probe", {"timeout_s": -1.0}, "parameter timeout_s must be a duration >= 0 s, got -1.0"),
    ("latency_probe", {"output_topic": "a"}, "input_topic and output_topic are both /a: give the node's input"),
    ("foxglove_bridge", {"port": "http"}, "parameter port is 'http'"),
    ("foxglove_bridge", {"port": 70000}, "Foxglove port 70000 is not a TCP port: give 1-65535, or 0"),  # a traceback
    ("generation", {"model": "zoo:tiny_cnn"}, "not a decoder with KV-cache inputs"),
    ("generation", {"backend": "tensorrt"}, "backend must be ort or virtual for generation"),
    ("generation", {"tokenizer": "sentencepiece"}, "tokenizer must be one of bytes, none"),
    ("generation", {"backend": "virtual"}, "backend virtual times the model on a live virtual Jetson, and no "
                                           "platform is set"),
    # Both started: a NaN temperature samples nothing, ONNX Runtime took -1 threads.
    ("generation", {"temperature": float("nan")}, "temperature >= 0 (got nan)"),
    ("generation", {"ort_threads": -1}, "ort_threads must be >= 0 (0: ONNX Runtime's default), got -1"),
    ("generation", {"model": "/nonexistent/decoder.onnx"}, "cannot read model /nonexistent/decoder.onnx"),
    ("latency_probe", {"mode": "tokens"}, "mode must be frames or generation"),
    # rcl's resolve raised a bare RCLError (a traceback, exit 1) for a topic that is no ROS name
    ("latency_probe", {"input_topic": "/cam era"}, "parameter input_topic '/cam era' is not a ROS topic name"),
    ("inference", {"image_topic": "/cam era"}, "parameter image_topic '/cam era' is not a ROS topic name"),
    # A parameter no node declares was ignored by ROS, its default silently in force.
    ("governor", {"target_latncy_ms": 30.0}, "unknown parameter(s) 'target_latncy_ms': did you mean "
                                             "'target_latency_ms'?; fix the parameter file or -p"),
    ("console", {"perod_s": 1.0, "zzz": 1}, "unknown parameter(s) 'perod_s', 'zzz': console has: "
                                            "generation_namespace, period_s, top_layers, window_frames"),
    # A stream's value of the wrong type was a traceback (a name or topic not text) or silently coerced.
    ("governor", {"streams": "[{name: 5, target_latency_ms: 30}]"}, "stream 5.name: expected text, got 5"),
    ("governor", {"streams": "[{name: d, target_latency_ms: 30, stats_topic: 5}]"}, "stats_topic: expected text"),
    ("governor", {"streams": "/nonexistent/streams.yaml"},
     "cannot read streams file /nonexistent/streams.yaml: No such file or directory; give a YAML file"),
]


@pytest.mark.parametrize("node, params, expected", CASES, ids=[f"{n}-{next(iter(p))}" for n, p, _ in CASES])
def test_start_up_error_is_one_line_and_exit_2(node, params, expected, ros_env, tmp_path):
    if node == "latency_probe":
        params = {"input_topic": "/a", "output_topic": "/b", **params}
    if params.get("model") == "CORRUPT":
        corrupt = tmp_path / "corrupt.onnx"
        corrupt.write_bytes(b"this is not protobuf")
        params = {"model": str(corrupt)}
    if node in ("inference", "generation"):  # the catalogue's roofs: nothing measured on this host first
        params = {"device": "agx_orin_64gb", **params}
    args = [sys.executable, "-m", f"edge_roofline.nodes.{node}", "--ros-args"]
    for name, value in params.items():
        args += _param_arg(name, value)
    proc = subprocess.run(args, env=ros_env, cwd=REPO, capture_output=True, text=True, timeout=120)
    lines = proc.stderr.strip().splitlines()
    assert proc.returncode == 2, proc.stderr
    assert len(lines) == 1 and "Traceback" not in proc.stderr, proc.stderr
    assert lines[0].startswith(f"{node}: cannot start: ") and expected in lines[0], lines[0]


def test_unparsable_ros_arguments_end_in_one_line_too(ros_env):
    proc = subprocess.run([sys.executable, "-m", "edge_roofline.nodes.console", "--ros-args", "-p", "period_s"],
                          env=ros_env, cwd=REPO, capture_output=True, text=True, timeout=120)
    assert proc.returncode == 2 and "Traceback" not in proc.stderr, proc.stderr
    # rcl logs its own line first; ours names the rule it could not parse.
    assert proc.stderr.strip().splitlines()[-1].startswith(
        "console: cannot start: failed to initialize rcl: Couldn't parse parameter override rule: '-p period_s'")


def test_a_governor_that_cannot_start_leaves_no_crash_record_and_the_board_as_found(board, ros_env, tmp_path):
    """A setting the node itself refuses (a stream's topic is no ROS name: one line, not rcl's
    traceback) after the governor has found the board: nothing was moved, so nothing is said of
    putting it back, and no crash record stays behind for the next start to "put back" (it would
    say a previous governor did not shut down)."""
    from test.nodes.virtual_rig import cap_files, governor_params
    state = tmp_path / "state.json"
    found = cap_files(board)
    stream = "{name: det, stats_topic: '/det/in fo', model: zoo:tiny_cnn, target_latency_ms: 20}"
    params = governor_params(board, state, model="", streams=f"[{stream}]")
    args = [sys.executable, "-m", "edge_roofline.nodes.governor", "--ros-args"]
    for name, value in params.items():
        args += _param_arg(name, value)
    proc = subprocess.run(args, env=ros_env, cwd=REPO, capture_output=True, text=True, timeout=120)
    lines = proc.stderr.strip().splitlines()
    assert proc.returncode == 2 and len(lines) == 1 and "/det/in fo" in lines[0], proc.stderr
    assert lines[0].startswith("governor: cannot start: stream det: stats_topic '/det/in fo' is not a ROS topic name "
                               "(topic name must not contain characters other than alphanumerics"), lines[0]
    assert "Traceback" not in proc.stderr, proc.stderr
    assert not state.exists(), state.read_text()
    assert cap_files(board) == found


def test_an_unknown_key_in_a_parameter_file_is_refused_and_a_shared_one_is_not(ros_env, tmp_path):
    shared = "/**:\n  ros__parameters:\n    sysfs_root: /tmp/tree\n"  # another node's: a /** list sets each its own
    params = tmp_path / "params.yaml"
    params.write_text(shared + "console:\n  ros__parameters:\n    perod_s: 1.0\n")
    args = [sys.executable, "-m", "edge_roofline.nodes.console", "--ros-args", "--params-file", str(params)]
    proc = subprocess.run(args, env=ros_env, cwd=REPO, capture_output=True, text=True, timeout=120)
    assert proc.returncode == 2 and proc.stderr.strip() == (
        "console: cannot start: unknown parameter(s) 'perod_s': did you mean 'period_s'?; fix the parameter file "
        "or -p"), proc.stderr
    params.write_text(shared + "console:\n  ros__parameters:\n    period_s: 0.2\n")
    node = subprocess.Popen(args, env=ros_env, cwd=REPO, stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True)
    try:
        assert node.stdout.readline().startswith("edge_roofline"), "the console did not start"  # its first summary
    finally:
        node.terminate()
        node.wait(30)


def test_a_parameter_file_rcl_cannot_parse_is_named_by_key(ros_env, tmp_path):
    # The natural way to write streams in a parameter file; rcl said only "Sequence should be of
    # same type. Value type 'integer' do not belong at line_num 5, at .../parse.c:350".
    params = tmp_path / "params.yaml"
    params.write_text("governor:\n  ros__parameters:\n    streams:\n      - {name: det, target_latency_ms: 30}\n")
    proc = subprocess.run([sys.executable, "-m", "edge_roofline.nodes.governor", "--ros-args", "--params-file",
                           str(params)], env=ros_env, cwd=REPO, capture_output=True, text=True, timeout=120)
    assert proc.returncode == 2 and "Traceback" not in proc.stderr, proc.stderr
    assert proc.stderr.strip().splitlines()[-1] == (
        f"governor: cannot start: parameter file {params}: governor: streams is [{{'name': 'det', "
        "'target_latency_ms': 30}] (list), expected string like its default '' (a ROS parameter holds no mappings: "
        "write it as YAML text in quotes, or a file's path)"), proc.stderr



def test_a_mapping_given_with_p_says_to_quote_it(ros_env):
    # docs/governor_node.md's inline example lost its quotes to the shell: rcl said "Unknown YAML event".
    streams = "[{name: det, target_latency_ms: 30}]"
    proc = subprocess.run([sys.executable, "-m", "edge_roofline.nodes.governor", "--ros-args", "-p",
                           f"streams:={streams}"], env=ros_env, cwd=REPO, capture_output=True, text=True, timeout=120)
    assert proc.returncode == 2 and proc.stderr.strip().splitlines()[-1] == (
        f"governor: cannot start: -p streams:={streams} is a mapping, which a ROS parameter cannot hold: give it "
        f"as YAML text in quotes, -p \"streams:='{streams}'\", or a file's path"), proc.stderr
