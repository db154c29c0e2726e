"""The real Jetson backend driving the nvpmodel emulation on a rendered AGX Orin 64GB tree."""

from __future__ import annotations

import io
import shutil
import os
import time

import pytest

from edge_roofline.platforms.base import (ApplyError, OperatingPoint, OperatingPointError, PlatformInitError,
                                          RebootRequiredError)
from edge_roofline.platforms.jetson.caps import CapWriter
from edge_roofline.platforms.jetson.nvpmodel import Nvpmodel
from edge_roofline.platforms.jetson.platform import JetsonPlatform
from edge_roofline.roofline.devices import get_device
from edge_roofline.virtual import nvpmodel_emu
from edge_roofline.virtual.state import BoardState
from edge_roofline.virtual.sysfs_read import read_state
from edge_roofline.virtual.sysfs_tree import NVPMODEL_LAUNCHER, render_tree

ORIN = get_device("agx_orin_64gb")
MAXN, MODE_15W, MODE_50W = 0, 1, 3


@pytest.fixture
def root(tmp_path):
    render_tree(tmp_path, ORIN, BoardState.initial(ORIN, MAXN))
    return tmp_path


def nvpmodel_cmd(root):
    return (str(root / NVPMODEL_LAUNCHER),)


def platform(root):
    # sudo_cmd=("false",): a refused direct write must fail loudly, never escalate in a test.
    return JetsonPlatform(root=root, nvpmodel_cmd=nvpmodel_cmd(root), writer=CapWriter(sudo_cmd=("false",)))


def test_query_and_parse_through_the_cli(root):
    cli = Nvpmodel(nvpmodel_cmd(root))
    assert (cli.query().mode_id, cli.query().name) == (MAXN, "MAXN")
    default, models = cli.list_modes()
    assert default == ORIN.default_mode_id
    assert models == {p.mode_id: p.name for p in ORIN.presets}


def test_a_monitor_follows_a_mode_another_process_set(root):
    """The power monitor's platform and the governor's are separate processes: a monitor's
    samples must name the mode in force, not the one it found at start."""
    monitor, governor = platform(root), platform(root)
    assert monitor.sample().nvpmodel_mode == "MAXN"
    governor.apply(next(p for p in governor.operating_points() if p.name == "MODE_50W"))
    assert monitor.sample().nvpmodel_mode == "MODE_50W"
    assert monitor.current_operating_point().name == "MODE_50W"


def test_custom_caps_found_at_start_are_the_found_point(root):
    """A robot whose integrator capped the GPU by hand: the point found (what a governor
    records in its crash file and puts back) carries those caps, not the preset's."""
    gpu_max = root / "sys/class/devfreq/17000000.gpu/max_freq"
    gpu_max.write_text("612000000\n")
    found = platform(root).current_operating_point()
    assert found.name == "MAXN (custom caps)" and found.gpu_max_freq_hz == 612e6
    other = platform(root)
    other.apply(next(p for p in other.operating_points() if p.name == "MAXN"))
    assert gpu_max.read_text().strip() == "1300500000"
    other.apply(found)  # as Governor.recover does from the crash record
    assert gpu_max.read_text().strip() == "612000000"
    gpu_max.write_text("1300500000\n")
    assert platform(root).current_operating_point() == OperatingPoint("MAXN", nvpmodel_id=0)


def test_live_switch_maxn_mode50w_and_back(root):
    plat = platform(root)
    points = {p.name: p for p in plat.operating_points()}
    assert "MODE_15W" not in points and "MODE_30W" not in points  # other TPC masks: reboot
    plat.apply(points["MODE_50W"])
    board = read_state(root, ORIN)
    assert board.nvpmodel_mode_id == MODE_50W and all(board.cpu_online)
    assert set(board.cpu_max_freq_hz) == {1497.6e6} and board.gpu_max_freq_hz == 816e6
    assert plat.sample().nvpmodel_mode == "MODE_50W"
    plat.apply(points["MAXN"])
    board = read_state(root, ORIN)
    assert board.nvpmodel_mode_id == MAXN and board.gpu_max_freq_hz == ORIN.gpu_max_freq_hz
    assert set(board.cpu_max_freq_hz) == {ORIN.cpu_max_freq_hz}


def test_reboot_switch_refused_before_nvpmodel_runs(root):
    plat = platform(root)
    nvpmodel_emu.set_hook(root, "hang_s", "30")  # were nvpmodel called, this would hang
    started = time.monotonic()
    with pytest.raises(RebootRequiredError, match="TPC_PG_MASK"):
        plat.apply(plat.operating_points()[0].with_caps(name="MODE_15W", nvpmodel_id=MODE_15W))
    assert time.monotonic() - started < 1.0
    assert read_state(root, ORIN).nvpmodel_mode_id == MAXN


def test_emulated_reboot_prompt_fails_on_eof(root):
    # Called directly (bypassing the mask check), nvpmodel prompts and fails on stdin EOF.
    with pytest.raises(RebootRequiredError, match="reboot"):
        Nvpmodel(nvpmodel_cmd(root))._run("-m", str(MODE_15W))
    board = read_state(root, ORIN)
    assert board.nvpmodel_mode_id == MAXN and board.tpc_pg_mask == 0
    # Answering YES (what a person would do) applies the mode; the emulation never reboots.
    out = io.StringIO()
    assert nvpmodel_emu.main(["--root", str(root), "-m", str(MODE_15W)], stdin=io.StringIO("YES\n"), out=out) == 0
    board = read_state(root, ORIN)
    assert board.nvpmodel_mode_id == MODE_15W and board.tpc_pg_mask == 248
    assert board.cpu_online == [True] * 4 + [False] * 8 and board.emc_max_hz == 2133e6


def test_hung_nvpmodel_times_out(root):
    plat = platform(root)
    plat.nvpmodel.timeout_s = 0.5
    nvpmodel_emu.set_hook(root, "hang_s", "30")
    started = time.monotonic()
    with pytest.raises(ApplyError, match="did not answer"):
        plat.apply(next(p for p in plat.operating_points() if p.name == "MODE_50W"))
    assert time.monotonic() - started < 5.0
    nvpmodel_emu.set_hook(root, "hang_s", None)
    assert read_state(root, ORIN).nvpmodel_mode_id == MAXN


def test_timeout_kills_nvpmodel_behind_a_wrapper(root, tmp_path):
    """As under sudo: a wrapper process runs nvpmodel as its child. The timeout must end the
    child too, not only the wrapper, or a hung nvpmodel could apply a mode later."""
    from edge_roofline.platforms.jetson.nvpmodel import Nvpmodel

    pid_file = tmp_path / "child.pid"
    wrapper = tmp_path / "sudo_like"
    wrapper.write_text(f"#!/bin/sh\n'{root / NVPMODEL_LAUNCHER}' \"$@\" &\necho $! > '{pid_file}'\nwait\n")
    wrapper.chmod(0o755)
    nvpmodel_emu.set_hook(root, "hang_s", "30")
    with pytest.raises(ApplyError, match="did not answer"):
        Nvpmodel((str(wrapper),), timeout_s=1.0).query()
    child = int(pid_file.read_text())
    deadline = time.monotonic() + 5
    while time.monotonic() < deadline and os.path.exists(f"/proc/{child}") and \
            "zombie" not in open(f"/proc/{child}/status").read():
        time.sleep(0.05)
    assert not os.path.exists(f"/proc/{child}") or "zombie" in open(f"/proc/{child}/status").read()


def test_nvpm_error_is_an_apply_error(root):
    plat = platform(root)
    nvpmodel_emu.set_hook(root, "fail", "Error writing 816000000 to /sys/class/devfreq/17000000.gpu/max_freq: 13")
    with pytest.raises(ApplyError, match="NVPM ERROR"):
        plat.apply(next(p for p in plat.operating_points() if p.name == "MODE_50W"))


def test_query_verbose_lists_real_and_conf_values(root):
    params = Nvpmodel(nvpmodel_cmd(root)).query_verbose()
    assert params[("EMC", "MAX_FREQ")] == (0, 0)  # MAXN: no EMC cap
    gpu_max = params[("GPU", "MAX_FREQ")]
    assert gpu_max == (int(ORIN.gpu_max_freq_hz), 2147483647)  # -1 in the conf shows INT_MAX


def test_caps_grid_apply_and_restore_at_exit(root):
    found = read_state(root, ORIN)
    with platform(root) as plat:
        grid = [p for p in plat.operating_points() if p.cpu_max_freq_hz is not None]
        assert len(grid) == 96
        point = next(p for p in grid if p.cpu_online_cores == 6 and p.gpu_max_freq_hz < 700e6
                     and p.emc_max_freq_hz < 3e9)
        plat.apply(point)
        board = read_state(root, ORIN)
        assert board.cpu_online == [True] * 6 + [False] * 6
        assert board.gpu_max_freq_hz == point.gpu_max_freq_hz and board.emc_max_hz == point.emc_max_freq_hz
        assert board.cpu_max_freq_hz[0] == point.cpu_max_freq_hz
        iso_cap = root / "sys/kernel/nvpmodel_emc_cap/emc_iso_cap"  # nvpmodel's EMC cap, not debugfs
        assert iso_cap.read_text().strip() == str(int(point.emc_max_freq_hz))
        plat.apply(next(p for p in plat.operating_points() if p.name == "MODE_50W"))
    back = read_state(root, ORIN)
    assert iso_cap.read_text().strip() == "0"  # MAXN had no EMC cap
    for field in ("nvpmodel_mode_id", "cpu_online", "cpu_max_freq_hz", "gpu_max_freq_hz", "emc_max_hz"):
        assert getattr(back, field) == getattr(found, field), field


def test_caps_outside_the_table_or_envelope_rejected(root):
    plat = platform(root)
    grid = next(p for p in plat.operating_points() if p.gpu_max_freq_hz is not None)
    with pytest.raises(OperatingPointError, match="not in the available table"):
        plat.apply(grid.with_caps(gpu_max_freq_hz=700e6))
    with pytest.raises(OperatingPointError, match="not in the available table"):
        plat.apply(grid.with_caps(emc_max_freq_hz=1e9))
    fifty = next(p for p in plat.operating_points() if p.name == "MODE_50W")
    with pytest.raises(OperatingPointError, match="above"):
        plat.apply(fifty.with_caps(gpu_max_freq_hz=1300.5e6))  # MODE_50W caps the GPU at 816 MHz
    assert read_state(root, ORIN).gpu_max_freq_hz == ORIN.gpu_max_freq_hz  # nothing written


@pytest.mark.parametrize("missing", [
    "sys/bus/i2c/drivers/ina3221", "sys/bus/i2c/drivers/ina3221/1-0040",
    "sys/class/devfreq", "sys/kernel/debug", "sys/devices/virtual/thermal", "proc/stat",
    "sys/kernel/actmon_avg_activity",
])
def test_missing_files_degrade_the_sample(root, missing):
    plat = platform(root)
    path = root / missing
    path.unlink() if path.is_symlink() or path.is_file() else shutil.rmtree(path)
    sample = plat.sample()
    if "ina3221" in missing:
        assert sample.total_power_w is None and "missing" in sample.source
    else:
        assert sample.total_power_w is not None
    if missing == "sys/kernel/debug":
        assert sample.emc_freq_hz is None


def test_unreadable_rail_file_degrades(root):
    plat = platform(root)
    rail = next((root / "sys/bus/i2c/drivers/ina3221/1-0040/hwmon").glob("hwmon*/in3_input"))
    rail.unlink()
    rail.mkdir()  # a directory where a value should be: unreadable, must not crash
    sample = plat.sample()
    assert sample.total_power_w is None and "VIN_SYS_5V0" in sample.source


def test_not_a_jetson_tree(root):
    (root / "sys/firmware/devicetree/base/compatible").write_bytes(b"raspberrypi,4-model-b\x00brcm,bcm2711\x00")
    with pytest.raises(PlatformInitError, match="not a Jetson"):
        platform(root)


def test_missing_nvpmodel_binary(root):
    (root / NVPMODEL_LAUNCHER).unlink()
    with pytest.raises(ApplyError, match="is nvpmodel installed"):
        platform(root)
