"""CPU readers on a fixture tree in the real sysfs/procfs layout, and the CPU-only platform on
this machine."""

import pytest

from edge_roofline.platforms.base import OperatingPoint, OperatingPointError
from edge_roofline.platforms.cpu import CpuPlatform
from edge_roofline.platforms.jetson.cpu import load_pct, read_cores, read_proc_stat
from edge_roofline.platforms.jetson.thermal import read_thermal


def write(root, path, text):
    p = root / path.lstrip("/")
    p.parent.mkdir(parents=True, exist_ok=True)
    p.write_text(text)


@pytest.fixture
def tree(tmp_path):
    for core, online in ((0, None), (1, "1\n"), (2, "0\n")):
        base = f"/sys/devices/system/cpu/cpu{core}"
        if online is not None:
            write(tmp_path, f"{base}/online", online)
        write(tmp_path, f"{base}/cpufreq/scaling_cur_freq", "1728000\n")
        write(tmp_path, f"{base}/cpufreq/scaling_max_freq", "2201600\n")
        write(tmp_path, f"{base}/cpufreq/scaling_available_frequencies", "115200 1728000 2201600 \n")
    write(tmp_path, "/proc/stat", "cpu  1 2 3 4\ncpu0 100 0 100 800 0 0 0 0\ncpu1 50 0 50 900 0 0 0 0\n")
    write(tmp_path, "/sys/devices/virtual/thermal/thermal_zone0/type", "gpu-thermal\n")
    write(tmp_path, "/sys/devices/virtual/thermal/thermal_zone0/temp", "47500\n")
    write(tmp_path, "/sys/devices/virtual/thermal/thermal_zone1/type", "cv0-thermal\n")
    write(tmp_path, "/sys/devices/virtual/thermal/thermal_zone1/temp", "-256000\n")  # power-gated
    return tmp_path


def test_readers_follow_the_sysfs_formats(tree):
    cores = read_cores(tree)
    assert [c.online for c in cores] == [True, True, False]
    assert cores[0].cur_freq_hz == 1728000e3 and cores[2].cur_freq_hz is None
    assert cores[1].available_freqs_hz == (115200e3, 1728000e3, 2201600e3)
    assert read_thermal(tree) == {"gpu-thermal": 47.5}
    before = read_proc_stat(tree)
    write(tree, "/proc/stat", "cpu0 150 0 150 900 0 0 0 0\ncpu1 50 0 50 1000 0 0 0 0\n")
    per_core, mean = load_pct(before, read_proc_stat(tree))
    assert per_core == {0: pytest.approx(50.0), 1: pytest.approx(0.0)} and mean == pytest.approx(25.0)


def test_cpu_platform_reports_no_power_and_refuses_changes(tree):
    platform = CpuPlatform(root=tree)
    sample = platform.sample()
    assert sample.total_power_w is None and "no power sensor" in sample.source
    assert sample.cpu_freq_hz == (1728000e3, 1728000e3)
    with pytest.raises(OperatingPointError, match="no operating points to change"):
        platform.apply(OperatingPoint("MAXN", nvpmodel_id=0))


def test_cpu_platform_on_this_machine_and_on_an_empty_tree(tmp_path):
    assert CpuPlatform().sample().total_power_w is None  # whatever this machine exposes, no crash
    empty = CpuPlatform(root=tmp_path).sample()
    assert empty.cpu_freq_hz == () and empty.temperatures_c == {} and empty.cpu_load_pct is None
