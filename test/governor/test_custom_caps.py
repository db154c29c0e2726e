"""A board found at caps set by hand, not at a preset (issue 28, "also found"): MODE_30W with
the big cluster (policy4) capped at 1497600 kHz and the GPU at 510 MHz, on a virtual AGX Orin's
tree (SIMULATION) through the real Jetson backend. The point found is still a point of the
device: the model gets its roofline prior there, and a fallback puts back exactly what was
found, every file, not the nearest preset or grid point."""

import pytest

from edge_roofline.clock import SimClock
from edge_roofline.governor.predictor import Predictor
from edge_roofline.governor.runtime import GovernorRuntime
from edge_roofline.virtual.live import LiveVirtualJetson
from test.governor.test_crash_record import runtime_params
from test.governor.test_faults_virtual import drive_tree, moved_governor, read_only
from test.nodes.virtual_rig import DEVICE, cap_files

POLICY4_MAX = "sys/devices/system/cpu/cpufreq/policy4/scaling_max_freq"


@pytest.fixture
def custom(tmp_path):
    """A virtual AGX Orin in MODE_30W whose user capped one CPU cluster and the GPU by hand."""
    root = tmp_path / "virtual_agx_orin"
    LiveVirtualJetson(root, DEVICE, mode_id=2)
    (root / POLICY4_MAX).write_text("1497600\n")
    gpu_max = next(root.glob("sys/devices/platform/*/*.gpu/devfreq/*/max_freq"))
    gpu_max.write_text("510000000\n")
    return root


def test_custom_caps_keep_the_roofline_prior(custom):
    logs = []
    runtime = GovernorRuntime(runtime_params(custom, mode="advise"), SimClock(0.0), log=logs.append)
    try:
        gov = runtime.governor
        assert gov.found.name == "MODE_30W (custom caps)" and gov.found.gpu_max_freq_hz == 510e6
        assert isinstance(gov.predictor, Predictor), logs  # the roofline prior, not learning by measuring
        assert not any("no roofline" in line for line in logs), logs
    finally:
        runtime.close()
    # A model the stream reports (the follower's path, where the issue saw UnknownModeError) gets one too.
    runtime = GovernorRuntime(runtime_params(custom, mode="advise", model=""), SimClock(0.0), log=logs.append)
    try:
        runtime.observe_stats("default", "zoo:tiny_cnn", 0.001, 0.0)
        runtime.models["default"].wait()
        lines = runtime.follow_models()
        assert lines == ["following zoo:tiny_cnn: re-planning with its roofline"], lines
        assert isinstance(runtime.governor.predictor, Predictor) and runtime.governor.model_note == ""
    finally:
        runtime.close()
    assert cap_files(custom)[POLICY4_MAX] == "1497600"


def power_monitor_stopped(tree, platform):
    return lambda _: None


def rails_removed(tree, platform):
    for dev in (tree / "sys/bus/i2c/drivers/ina3221").iterdir():
        for path in dev.resolve().glob("hwmon/hwmon*/*_input"):
            path.unlink()

    def measured(_):
        sample = platform.sample()  # the full sample checks that the rail files are still there
        return sample.total_power_w, sample.source
    return measured


@pytest.mark.parametrize("fault", [power_monitor_stopped, rails_removed])
def test_fallback_puts_back_exactly_the_point_found(custom, fault):
    found, logs = cap_files(custom), []
    runtime, t = moved_governor(custom, logs)
    gov = runtime.governor
    assert gov.safe_point == gov.found and cap_files(custom) != found
    decisions = drive_tree(gov, t, 2.0, power_of=fault(custom, runtime.platform))
    assert decisions[-1].fallback_active and decisions[-1].state == "fallback", [d.reason for d in decisions]
    assert "safe point applied" in next(d.reason for d in decisions if d.fallback_active)
    assert cap_files(custom) == found  # policy4 at 1497600, the GPU at 510 MHz, every other file as found
    assert runtime.close() is True and cap_files(custom) == found


def test_fallback_with_a_cap_file_immutable_puts_back_every_other_file_as_found(custom):
    found, logs = cap_files(custom), []
    runtime, t = moved_governor(custom, logs)
    moved = cap_files(custom)
    stuck = next(k for k in moved if moved[k] != found[k] and k != POLICY4_MAX and "online" not in k)
    read_only(custom / stuck)
    try:
        decisions = drive_tree(runtime.governor, t, 2.0, power_of=lambda _: None)
        assert decisions[-1].fallback_active and "safe point failed" in decisions[-1].reason
        now = cap_files(custom)
        assert {k for k in found if now[k] != found[k]} == {stuck}, now
        assert now[POLICY4_MAX] == "1497600"
    finally:
        read_only(custom / stuck, on=False)
    assert runtime.close() is True and cap_files(custom) == found
