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
    ("inference", {"scale": "abc"}, "parameter scale is 'abc' (string), expected double like its default 255.0"),
    ("inference", {"width": 1.5}, "parameter width is '1.5' (double), expected integer"),
    ("governor", {"target_latency_ms": "abc"}, "parameter target_latency_ms is 'abc'"),
    ("governor", {"step_rate_hz": 0.0}, "parameter step_rate_hz must be a rate > 0 Hz, got 0.0"),
    ("power_monitor", {"sample_rate_hz": "fast"}, "parameter sample_rate_hz is 'fast'"),
    ("power_monitor", {"publish_rate_hz": -20.0}, "parameter publish_rate_hz must be a rate > 0 Hz, got -20.0"),
    ("power_monitor", {"diagnostics_rate_hz": float("nan")}, "parameter diagnostics_rate_hz must be a rate > 0 Hz"),
    ("synthetic_camera", {"width": "wide"}, "parameter width is 'wide'"),
    ("console", {"period_s": "often"}, "parameter period_s is 'often'"),
    ("foxglove_bridge", {"port": "http"}, "parameter port is 'http'"),
    ("generation", {"model": "zoo:tiny_cnn"}, "not a decoder with KV-cache inputs"),
    ("generation", {"backend": "tensorrt"}, "backend must be ort or virtual for generation"),
    ("generation", {"tokenizer": "sentencepiece"}, "tokenizer must be one of bytes, none"),
    ("generation", {"model": "/nonexistent/decoder.onnx"}, "cannot read model /nonexistent/decoder.onnx"),
    ("latency_probe", {"mode": "tokens"}, "mode must be frames or generation"),
    # rcl's resolve raised a bare RCLError (a traceback, exit 1) for a topic that is no ROS name
    ("latency_probe", {"input_topic": "/cam era"}, "parameter input_topic '/cam era' is not a ROS topic name"),
    ("inference", {"image_topic": "/cam era"}, "parameter image_topic '/cam era' is not a ROS topic name"),
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
