"""`edge-roofline up` with a parameter file that configures none of the suite's nodes (an empty
file, every section misspelt) is a mistake, not a suite of nothing: one line and exit 2, nothing
started (issue 23: it started 0 nodes and exited 0)."""

import subprocess
import sys

import pytest

from edge_roofline.suite.spec import configured_nodes
from test.test_layers import REPO


def test_a_file_configuring_no_node_is_refused():
    with pytest.raises(ValueError,
                       match="configures none of the suite's nodes .*power_monitor, inference, generation, governor"):
        configured_nodes({"consloe": {"period_s": 1.0}})
    assert [s.name for s in configured_nodes({"inference": {}})] == ["inference"]
    with pytest.raises(ValueError, match="configures none"):  # a wildcard section alone names no node to start
        configured_nodes({"**": {"use_sim_time": False}})


@pytest.mark.parametrize("text", ["", "# nothing here\n", "power_monitr:\n  ros__parameters:\n    platform: cpu\n"])
def test_up_with_such_a_file_says_so_and_exits_2(tmp_path, text):
    config = tmp_path / "params.yaml"
    config.write_text(text)
    done = subprocess.run([sys.executable, "-m", "edge_roofline.cli", "up", "--config", str(config), "--duration", "1"],
                          cwd=REPO, capture_output=True, text=True, timeout=120)
    assert done.returncode == 2, done.stdout + done.stderr
    errors = [line for line in done.stderr.splitlines() if line.strip()]
    assert len(errors) == 1 and "edge-roofline up: error:" in errors[0], done.stderr
    assert "started" not in done.stdout and "Traceback" not in done.stderr
