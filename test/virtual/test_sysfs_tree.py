"""The virtual Jetson's files: a rendered tree read by jetson-stats' own readers and by ours,
the read-back of client-written caps, and emulated tegrastats lines parsed by jtop."""

from __future__ import annotations

from dataclasses import replace
from datetime import datetime

import pytest
from jtop.core import tegra_parse
from jtop.core.cpu import read_system_cpu
from jtop.core.gpu import find_igpu, igpu_read_freq, igpu_read_status
from jtop.core.memory import read_emc as jtop_read_emc
from jtop.core.power import find_all_i2c_power_monitor, read_power_status
from jtop.core.temperature import get_virtual_thermal_temperature, read_temperature

from edge_roofline.platforms.jetson import cpu, emc, gpu, power, thermal
from edge_roofline.platforms.jetson.identify import identify
from edge_roofline.platforms.jetson.nvpmodel import presets_from_conf, read_conf
from edge_roofline.roofline.devices import CATALOGUE, get_device
from edge_roofline.virtual.params import PhysicsParams
from edge_roofline.virtual.state import BoardState
from edge_roofline.virtual.sysfs_read import read_state
from edge_roofline.virtual.sysfs_tree import render_tree, update_tree
from edge_roofline.virtual.tegrastats_emu import format_line

ORIN = get_device("agx_orin_64gb")


def busy_orin_state() -> BoardState:
    """MODE_50W under load, with distinct values everywhere so mix-ups show."""
    state = BoardState.initial(ORIN, 3)
    state.cpu_online[11] = False
    state.cpu_cur_freq_hz = [1497.6e6] * 4 + [1420.8e6] * 4 + [1344e6] * 4
    state.cpu_busy = [0.9, 0.5, 0.25, 0.1] + [0.3] * 8
    state.gpu_cur_freq_hz, state.gpu_load = 816e6, 0.734
    state.emc_rate_hz, state.emc_util = 3199e6, 0.42
    state.rails = {"VDD_GPU_SOC": (4.992, 2.404), "VDD_CPU_CV": (4.984, 0.802),
                   "VIN_SYS_5V0": (4.976, 1.104), "VDDQ_VDD2_1V8AO": (4.992, 0.301)}
    state.temperatures_c.update({"cpu-thermal": 51.437, "gpu-thermal": 49.5, "cv0-thermal": -256.0})
    state.tick(3.0)
    return state


@pytest.fixture
def tree(tmp_path):
    state = busy_orin_state()
    render_tree(tmp_path, ORIN, state)
    return tmp_path, state


def test_rails_agree_with_jetson_stats(tree):
    root, state = tree
    channels = power.find_rails(root)
    ours, problems = power.RailReader(channels).read()
    assert problems == ()
    # The driver's shuntK_resistor (uOhm) bounds what a channel can read (163.8 mV full scale).
    assert channels and all(c.current_max_ma == pytest.approx(163.8 / PhysicsParams.shunt_ohm) for c in channels)
    # jtop's service scans /sys/bus/i2c/devices; the driver folder must give the same rails.
    for scan in ("sys/bus/i2c/devices", "sys/bus/i2c/drivers/ina3221"):
        theirs = find_all_i2c_power_monitor(str(root / scan))
        assert set(theirs) == {r.name for r in ours} == set(state.rails)  # NC skipped by both
        for rail in ours:
            status = read_power_status(theirs[rail.name])
            volts, amps = state.rails[rail.name]
            assert status["volt"] == round(volts * 1000) and status["curr"] == round(amps * 1000)
            assert rail.power_w == pytest.approx(status["volt"] * status["curr"] / 1e6)
    total, reason = power.total_power_w(ours, ORIN.total_power_rails)
    assert reason is None
    assert total == pytest.approx(sum(v * a for name, (v, a) in state.rails.items()
                                      if name != "VDDQ_VDD2_1V8AO"), rel=1e-3)


def test_gpu_agrees_with_jetson_stats(tree):
    root, state = tree
    theirs = find_igpu(str(root / "sys/class/devfreq"))
    assert list(theirs) == ["gpu"]
    ours = gpu.find_gpu(root)
    assert str(ours.device_dir) == theirs["gpu"]["path"] and str(ours.devfreq_dir) == theirs["gpu"]["frq_path"]
    freq, status = igpu_read_freq(theirs["gpu"]["frq_path"]), igpu_read_status(theirs["gpu"]["path"])
    mine = gpu.read_gpu(ours)
    assert freq["cur"] * 1e3 == mine.cur_freq_hz == state.gpu_cur_freq_hz
    assert freq["max"] * 1e3 == mine.max_freq_hz == 816e6  # MODE_50W's cap
    assert status["load"] == mine.load_pct == pytest.approx(73.4)
    assert mine.tpc_pg_mask == 0 and mine.available_freqs_hz == ORIN.gpu_freqs_hz


def test_cpu_agrees_with_jetson_stats(tree):
    root, state = tree
    ours = cpu.read_cores(root)
    assert [c.online for c in ours] == state.cpu_online
    for core in ours:
        theirs = read_system_cpu(str(cpu.core_dir(root, core.core)), {})
        assert theirs["online"] == core.online
        if core.online:
            assert theirs["freq"]["cur"] * 1e3 == core.cur_freq_hz == state.cpu_cur_freq_hz[core.core]
            assert theirs["freq"]["max"] * 1e3 == core.max_freq_hz == 1497.6e6
            assert theirs["governor"] == core.governor == "schedutil"
    # A policy is shared by its cluster, as on the board: one write caps all four cores.
    (cpu.core_dir(root, 1) / "cpufreq/scaling_max_freq").write_text("1113600")
    assert {cpu.read_core(root, c).max_freq_hz for c in range(4)} == {1113.6e6}
    assert cpu.read_core(root, 4).max_freq_hz == 1497.6e6


def test_cpu_load_from_proc_stat(tree):
    root, state = tree
    before = cpu.read_proc_stat(root)
    assert 11 not in before  # offline cores are not in /proc/stat
    state.tick(2.0)
    update_tree(root, ORIN, state)
    per_core, _ = cpu.load_pct(before, cpu.read_proc_stat(root))
    for core, busy in enumerate(state.cpu_busy[:11]):
        assert per_core[core] == pytest.approx(busy * 100, abs=1.0)


def test_emc_and_thermal_agree_with_jetson_stats(tree):
    root, state = tree
    theirs = jtop_read_emc(str(root / "sys/kernel"))
    ours = emc.read_emc(root)
    assert theirs["cur"] * 1e3 == ours.rate_hz == state.emc_rate_hz
    assert theirs["val"] == int(ours.util_pct) == 42
    zones = get_virtual_thermal_temperature(str(root / "sys/devices/virtual/thermal"))
    jtop_temps = {name: read_temperature(paths)["temp"] for name, paths in zones.items()}
    ours_t = thermal.read_thermal(root)
    assert "cv0-thermal" not in ours_t and jtop_temps["cv0"] == -256.0  # gated: we skip it
    for zone_type, celsius in ours_t.items():
        assert jtop_temps[zone_type.split("-")[0]] == pytest.approx(celsius) == pytest.approx(
            state.temperatures_c[zone_type])


@pytest.mark.parametrize("key", sorted(CATALOGUE))
def test_every_catalogue_device_renders_and_identifies(tmp_path, key):
    device = get_device(key)
    render_tree(tmp_path, device, BoardState.initial(device))
    assert identify(tmp_path).catalogue_key == key
    conf = read_conf(tmp_path / "etc/nvpmodel.conf")
    assert conf.default_id == device.default_mode_id
    # The conf, read the way the Jetson backend reads a board's, gives back every preset exactly.
    assert presets_from_conf(conf, device.cpu_cores) == device.presets
    for preset in device.presets:
        model = conf.models[preset.mode_id]
        assert sum(v for (p, _), v in model.settings.items() if p == "CPU_ONLINE") == preset.cpu_online_cores
    assert gpu.find_gpu(tmp_path).name == device.gpu_devfreq_name
    assert {r.label for r in power.find_rails(tmp_path)} == {r.label for r in device.power_monitors} - {"NC"}


def test_read_state_round_trip_and_client_caps(tree):
    root, state = tree
    back = read_state(root, ORIN)
    # /proc/stat keeps whole jiffies and only a lifetime busy share, not the last interval's.
    assert back.cpu_busy_time_s == pytest.approx(state.cpu_busy_time_s, abs=0.01)
    assert back.cpu_busy[0] == pytest.approx(state.cpu_busy[0], abs=0.01)
    assert replace(back, cpu_busy=state.cpu_busy, cpu_busy_time_s=state.cpu_busy_time_s,
                   cpu_idle_time_s=state.cpu_idle_time_s) == state
    # A client caps the GPU and EMC and offlines a core; update_tree must not undo that.
    (root / "sys/class/devfreq/17000000.gpu/max_freq").write_text("612000000")
    (root / "sys/kernel/nvpmodel_emc_cap/emc_iso_cap").write_text("2133000000")
    (root / "sys/devices/system/cpu/cpu10/online").write_text("0")
    state.gpu_cur_freq_hz = 714e6
    update_tree(root, ORIN, state)
    back = read_state(root, ORIN)
    assert back.gpu_max_freq_hz == 612e6 and back.emc_max_hz == 2133e6 and not back.cpu_online[10]
    assert back.gpu_cur_freq_hz == 714e6  # measurements do follow the state
    # The real backend caps EMC through debugfs max_rate; the physics sees that too.
    (root / "sys/kernel/debug/bpmp/debug/clk/emc/max_rate").write_text("665600000")
    assert read_state(root, ORIN).emc_max_hz == 665.6e6


def test_tegrastats_line_parsed_by_jtop():
    state = busy_orin_state()
    line = format_line(ORIN, state, datetime(2023, 1, 3, 16, 7, 54),
                       averages_mw={"VDD_GPU_SOC": 11000})
    assert line.startswith("01-03-2023 16:07:54 RAM ")
    text = tegra_parse.DATE(line)
    cpus = tegra_parse.CPUS(text)
    assert len(cpus) == ORIN.cpu_cores and cpus[12] == {}  # cpu11 offline prints "off"
    assert cpus[1] == {"val": 90, "frq": 1497000}
    vals = tegra_parse.VALS(text)
    assert vals["EMC"] == {"val": 42, "frq": 3199000} and vals["GR3D"] == {"val": 73, "frq": 816000}
    temps = tegra_parse.TEMPS(text)
    assert temps["cpu"] == pytest.approx(51.437) and temps["cv0"] == -256.0
    watts = tegra_parse.WATTS(text)
    volts, amps = state.rails["VDD_GPU_SOC"]
    assert watts["VDD_GPU_SOC"] == {"cur": round(volts * amps * 1000), "avg": 11000}
    assert watts["NC"] == {"cur": 0, "avg": 0}
    assert tegra_parse.RAM(text)["tot"] == ORIN.ram_mb


def test_tegrastats_jetpack6_gpc_form():
    state = busy_orin_state()
    text = tegra_parse.DATE(format_line(ORIN, state, datetime(2024, 5, 1), gpu_per_gpc=True))
    assert "GR3D_FREQ 73%@[816,816]" in text
    assert tegra_parse.VALS(text)["GR3D"] == {"frq": 816000, "val": 73}
