"""JetsonPlatform on a generated AGX Orin tree with the fake nvpmodel."""

from __future__ import annotations

import pytest

from edge_roofline.platforms.base import ApplyError, OperatingPointError, PlatformInitError, RebootRequiredError
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



class RangeCheckingWriter(CapWriter):
    """Writes directly; fails the test if a min file goes above its max after any write, and
    refuses the paths in ``refused`` as a read-only file without a sudo rule would."""

    def __init__(self, refused=()):
        super().__init__(sudo_cmd=("false",))
        self.refused = set(refused)

    def write(self, path, value):
        if path in self.refused:
            raise ApplyError(f"{path} is read-only to this process")
        super().write(path, value)
        low, high = path.with_name(path.name.replace("max", "min")), path.with_name(path.name.replace("min", "max"))
        if low != high and low.exists() and high.exists():
            assert int(low.read_text()) <= int(high.read_text()), f"min above max after writing {value} to {path}"


@pytest.mark.parametrize("refuse_emc", [False, True])
def test_restore_keeps_min_at_most_max_and_tries_every_file(root, refuse_emc):
    cpu0 = root / "sys/devices/system/cpu/cpu0/cpufreq"
    emc = root / "sys/kernel/nvpmodel_emc_cap/emc_iso_cap"
    (cpu0 / "scaling_min_freq").write_text("1497600\n")  # a user's floor, above what is set below
    writer = RangeCheckingWriter(refused=[emc] if refuse_emc else [])
    plat = JetsonPlatform(root=root, nvpmodel_cmd=(str(root / "usr/bin/nvpmodel"),), writer=writer)
    files = (cpu0 / "scaling_min_freq", cpu0 / "scaling_max_freq", emc)
    found = {f: f.read_text().strip() for f in files}
    # As a mode switch would leave it: both ends lowered, the max below the found min; EMC capped.
    (cpu0 / "scaling_min_freq").write_text("115200\n")
    (cpu0 / "scaling_max_freq").write_text("729600\n")
    emc.write_text("2133000000\n")
    if not refuse_emc:
        line = plat.restore()
        assert line.index("cpu0/scaling_max_freq=1728000") < line.index("cpu0/scaling_min_freq=1497600")
        assert "emc_iso_cap=0" in line
        assert {f: f.read_text().strip() for f in files} == found
        return
    with pytest.raises(ApplyError) as err:
        plat.restore()
    assert str(err.value).startswith(f"could not restore as found: {emc} is read-only") and "\n" not in str(err.value)
    assert {f: f.read_text().strip() for f in files[:2]} == {f: found[f] for f in files[:2]}  # the rest restored
