"""Every custom message crosses a process boundary intact (real rclpy, two processes)."""

import subprocess
import sys
from pathlib import Path

import pytest

import edge_roofline.msg as er_msg
from test.nodes.msg_peer import ARRAY_LEN, compare, fill

PEER = Path(__file__).with_name("msg_peer.py")
MESSAGES = ["LayerRoofline", "RooflineReport", "PowerRail", "PowerTelemetry", "OperatingPoint",
            "GovernorState", "StreamState", "InferenceStats", "Tensor", "TensorArray", "GenerationRequest",
            "GeneratedToken", "GenerationStats"]


def test_public_imports():
    from edge_roofline.msg import GovernorState, LayerRoofline, PowerTelemetry, RooflineReport  # noqa: F401
    assert LayerRoofline.BOUND_MEMORY == "memory"
    assert GovernorState.MODE_ADVISE == "advise"


def test_filler_detects_a_changed_field():
    want = fill(er_msg.RooflineReport())
    got = fill(er_msg.RooflineReport())
    assert compare(got, want) is None
    assert len(want.layers) == ARRAY_LEN
    got.layers[1].attainable_time_s += 1.0
    assert compare(got, want) == ".layers[1].attainable_time_s " \
        f"{got.layers[1].attainable_time_s!r} != {want.layers[1].attainable_time_s!r}"


@pytest.mark.parametrize("type_name", MESSAGES)
def test_roundtrip_between_processes(type_name, ros_env):
    repo = str(PEER.parents[2])
    sub = subprocess.Popen([sys.executable, str(PEER), "sub", type_name], env=ros_env, cwd=repo,
                           stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True)
    pub = subprocess.Popen([sys.executable, str(PEER), "pub", type_name], env=ros_env, cwd=repo,
                           stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True)
    try:
        out, _ = sub.communicate(timeout=60)
    finally:
        pub.kill()
        pub.wait()
    assert sub.returncode == 0, out
    assert "OK" in out
