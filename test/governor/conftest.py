"""Fixtures the governor's crash and fault tests share."""

import pytest

from edge_roofline.virtual.live import LiveVirtualJetson
from test.nodes.virtual_rig import DEVICE

POLICY0_MIN = "sys/devices/system/cpu/cpufreq/policy0/scaling_min_freq"


@pytest.fixture
def tree(tmp_path):
    """A virtual AGX Orin's tree in MAXN, with a user's own minimum clocks (not the mode's)."""
    root = tmp_path / "virtual_agx_orin"
    LiveVirtualJetson(root, DEVICE, mode_id=0)  # renders the tree; the tests need no physics steps
    (root / POLICY0_MIN).write_text("729600\n")
    return root


@pytest.fixture(autouse=True)
def board_lock_dir(tmp_path, monkeypatch):
    """A board at sysfs root / (the NVML and CPU platforms) locks in /run/lock; tests running
    side by side on one machine would refuse each other there, so each test has its own."""
    monkeypatch.setenv("EDGE_ROOFLINE_LOCK_DIR", str(tmp_path / "run_lock"))
