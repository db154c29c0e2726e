"""JetsonPlatform on a generated AGX Orin tree with the fake nvpmodel."""

from __future__ import annotations

import pytest

from edge_roofline.platforms.base import OperatingPointError, PlatformInitError, RebootRequiredError
from edge_roofline.platforms.jetson.caps import CapWriter
from edge_roofline.platforms.jetson.platform import JetsonPlatform
from edge_roofline.platforms.jetson.privileged_write import allowed
from test.platforms.tree import write, write_agx_orin_tree, write_fake_nvpmodel


@pytest.fixture
def root(tmp_path):
    write_agx_orin_tree(tmp_path)
    write_fake_nvpmodel(tmp_path)
    write(tmp_path / "usr/bin/nvpmodel_status", "0")  # MAXN
    return tmp_path


def make(root):
    return JetsonPlatform(root=root, nvpmodel_cmd=(str(root / "usr/bin/nvpmodel"),),
                          writer=CapWriter(sudo_cmd=("false",)))


def test_points_and_sample(root):
    plat = make(root)
    assert plat.identity().catalogue_key == "agx_orin_64gb"
    points = plat.operating_points()
    assert [p.name for p in points[:2]] == ["MAXN", "MODE_50W"] and len(points) == 2 + 96
    sample = plat.sample()
    assert sample.total_power_w == pytest.approx(5.0 * (0.478 + 0.159 + 0.704))
    assert sample.nvpmodel_mode == "MAXN" and "cv0-thermal" not in sample.temperatures_c
    assert sample.source == "jetson-sysfs"  # a generated tree never asks the host's jtop


def test_apply_then_restore(root):
    plat = make(root)
    gpu_max = root / "sys/class/devfreq/17000000.gpu/max_freq"
    before = gpu_max.read_text()
    point = next(p for p in plat.operating_points() if p.cpu_online_cores == 6 and p.nvpmodel_id == 0)
    plat.apply(point)
    assert (root / "sys/devices/system/cpu/cpu7/online").read_text() == "0"
    assert int(gpu_max.read_text()) == point.gpu_max_freq_hz
    plat.apply(plat.operating_points()[1])  # MODE_50W, live
    assert plat.sample().nvpmodel_mode == "MODE_50W"
    assert make(root).restore_record(plat.found_record()).startswith("restored MAXN as found: wrote nvpmodel MAXN")
    assert gpu_max.read_text().strip() == before.strip()
    assert (root / "sys/devices/system/cpu/cpu7/online").read_text() == "1"
    assert (root / "usr/bin/nvpmodel_status").read_text() == "0"


def test_invalid_points_rejected(root):
    plat = make(root)
    grid = plat.operating_points()[2]
    with pytest.raises(OperatingPointError, match="not in the available table"):
        plat.apply(grid.with_caps(gpu_max_freq_hz=700e6))
    with pytest.raises(RebootRequiredError):
        plat.apply(grid.with_caps(nvpmodel_id=1))
    with pytest.raises(OperatingPointError, match="cores"):
        plat.apply(grid.with_caps(cpu_online_cores=13))


def test_degraded_power_sample(root):
    plat = make(root)
    for path in (root / "sys/bus/i2c/drivers/ina3221").rglob("in1_input"):
        path.unlink()
    sample = plat.sample()
    assert sample.total_power_w is None and "VDD_GPU_SOC" in sample.source


def test_not_a_jetson(tmp_path):
    with pytest.raises(PlatformInitError):
        JetsonPlatform(root=tmp_path)


def test_privileged_allow_list():
    assert allowed("/sys/devices/system/cpu/cpu3/online", "0")
    assert allowed("/sys/kernel/debug/bpmp/debug/clk/emc/max_rate", "2133000000")
    assert allowed("/sys/kernel/nvpmodel_emc_cap/emc_iso_cap", "0")
    assert not allowed("/etc/shadow", "0")
    assert not allowed("/sys/devices/system/cpu/cpu3/online", "0; reboot")
