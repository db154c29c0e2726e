"""Jetson sysfs readers on a generated AGX Orin 64GB tree, checked against jetson-stats."""

from __future__ import annotations

import pytest
from jtop.core.power import find_all_i2c_power_monitor, read_power_status

from edge_roofline.platforms.base import PlatformInitError
from edge_roofline.platforms.jetson import cpu, emc, gpu, power, thermal
from edge_roofline.platforms.jetson.identify import identify
from edge_roofline.roofline.devices import get_device
from test.platforms.tree import AGX_ORIN_RAIL_READINGS, EMC_RATE_HZ, GPU_CUR_HZ, write, write_agx_orin_tree

ORIN = get_device("agx_orin_64gb")


@pytest.fixture
def root(tmp_path):
    return write_agx_orin_tree(tmp_path)


def test_rails_agree_with_jetson_stats(root):
    rails, problems = power.RailReader(power.find_rails(root)).read()
    assert problems == ()
    theirs = find_all_i2c_power_monitor(str(root / "sys/bus/i2c/drivers/ina3221"))
    assert {r.name for r in rails} == set(theirs) == {"VDD_GPU_SOC", "VDD_CPU_CV", "VIN_SYS_5V0",
                                                      "VDDQ_VDD2_1V8AO"}
    for rail in rails:
        status = read_power_status(theirs[rail.name])
        assert rail.power_w == pytest.approx(status["volt"] * status["curr"] / 1e6)


def test_total_uses_catalogue_rails_only(root):
    rails, _ = power.RailReader(power.find_rails(root)).read()
    total, reason = power.total_power_w(rails, ORIN.total_power_rails)
    expected = sum(mv * ma / 1e6 for _, _, _, label, mv, ma in AGX_ORIN_RAIL_READINGS
                   if label in ORIN.total_power_rails)
    assert reason is None and total == pytest.approx(expected)
    assert "VDDQ_VDD2_1V8AO" not in ORIN.total_power_rails


def test_missing_total_rail_degrades_with_reason(root):
    for path in (root / "sys/bus/i2c/drivers/ina3221/1-0040").rglob("in3_input"):
        path.unlink()
    rails, problems = power.RailReader(power.find_rails(root)).read()
    total, reason = power.total_power_w(rails, ORIN.total_power_rails)
    assert total is None and "VIN_SYS_5V0" in reason and problems


def test_gpu_discovered_by_of_node(root):
    paths = gpu.find_gpu(root)
    assert paths.name == "17000000.gpu"
    status = gpu.read_gpu(paths)
    assert status.cur_freq_hz == GPU_CUR_HZ and status.load_pct == 25.0
    assert status.available_freqs_hz == ORIN.gpu_freqs_hz


def test_no_gpu_devfreq(tmp_path):
    assert gpu.find_gpu(tmp_path) is None


def test_emc_and_thermal(root):
    status = emc.read_emc(root)
    assert status.rate_hz == EMC_RATE_HZ and status.iso_cap_hz is None
    assert status.util_pct == pytest.approx(25.0, abs=0.1)
    temps = thermal.read_thermal(root)
    assert "cv0-thermal" not in temps and temps["cpu-thermal"] == pytest.approx(41.437)


def test_cpu_cores_and_load(root):
    cores = cpu.read_cores(root)
    assert len(cores) == ORIN.cpu_cores and all(c.online for c in cores)
    assert cores[0].cur_freq_hz == 1_728_000_000
    write(root / "sys/devices/system/cpu/cpu11/online", "0\n")
    assert not cpu.read_core(root, 11).online
    before = cpu.read_proc_stat(root)
    after = {c: (busy + 50, total + 100) for c, (busy, total) in before.items()}
    per_core, mean = cpu.load_pct(before, after)
    assert mean == pytest.approx(50.0) and len(per_core) == ORIN.cpu_cores


def test_identify_agx_orin(root):
    assert identify(root).catalogue_key == "agx_orin_64gb"


def test_not_a_jetson(tmp_path):
    with pytest.raises(PlatformInitError, match="NVML or CPU"):
        identify(tmp_path)
    write(tmp_path / "proc/device-tree/compatible", "raspberrypi,4-model-b\x00brcm,bcm2711\x00")
    with pytest.raises(PlatformInitError, match="not a Jetson"):
        identify(tmp_path)
