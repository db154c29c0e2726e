"""The virtual Jetson AGX Thor's tree read by the suite's readers and by jetson-stats' own
(7.2.x, which has Thor support): rails with the INA238 total, the GPU through gpu-gpc-0, the
EMC through bwmgr; its tegrastats line parsed by jetson-stats; its nvpmodel emulation and the
Jetson backend refusing a mode that changes the GPU power-gating mask. SIMULATION."""

from __future__ import annotations

from datetime import datetime

import pytest
from jtop.core import hw_detect, tegra_parse, thor_gpu, thor_power
from jtop.core import gpu as jtop_gpu
from jtop.core.memory import read_emc as jtop_read_emc
from jtop.core.power import find_all_i2c_power_monitor, read_power_status, total_power

from edge_roofline.platforms.base import RebootRequiredError
from edge_roofline.platforms.jetson import emc, gpu, power
from edge_roofline.platforms.jetson.caps import CapWriter
from edge_roofline.platforms.jetson.identify import identify
from edge_roofline.platforms.jetson.nvpmodel import Nvpmodel
from edge_roofline.platforms.jetson.platform import JetsonPlatform
from edge_roofline.roofline.devices import get_device
from edge_roofline.virtual.board import VirtualBoard
from edge_roofline.virtual.physics import Activity
from edge_roofline.virtual.sysfs_read import read_state
from edge_roofline.virtual.sysfs_tree import NVPMODEL_LAUNCHER, render_tree
from edge_roofline.virtual.tegrastats_emu import format_line

THOR = get_device("agx_thor_t5000")


def busy_thor_state():
    """The physics' own state of a busy Thor (MAXN, GPU and CPUs loaded), so the tree shows
    what the virtual board computes."""
    board = VirtualBoard(THOR, mode_id=0, seed=3)
    board.advance(0.5, Activity(gpu_util=0.8, gpu_compute_fraction=0.7, gpu_clocked=True, dram_bps=80e9,
                                cpu_busy_cores=6.0))
    board.note_gpu_work()  # devfreq holds the clock up after the work
    return board.refresh_state()


@pytest.fixture
def tree(tmp_path):
    state = busy_thor_state()
    render_tree(tmp_path, THOR, state)
    return tmp_path, state


def test_identified_as_thor_on_jetpack_7(tree):
    root, _ = tree
    found = identify(root)
    assert found.catalogue_key == "agx_thor_t5000" and found.notes == ()
    assert found.software == "JetPack 7.1 (L4T R38.4.0), nvidia.ko (PCI, gpu-gpc-0)"


def test_rails_with_the_ina238_total_agree_with_jetson_stats(tree):
    root, state = tree
    ours, problems = power.RailReader(power.find_rails(root)).read()
    assert problems == () and {r.name for r in ours} == set(state.rails) == {
        "VDD_GPU", "VDD_CPU_SOC_MSS", "VIN_SYS_5V0", "VIN"}
    theirs = find_all_i2c_power_monitor(str(root / "sys/bus/i2c/devices"))
    assert set(theirs) == set(state.rails) and theirs["VIN"]["type"] == "INA238"
    values = {name: read_power_status(sensor) for name, sensor in theirs.items()}
    for rail in ours:
        volts, amps = state.rails[rail.name]
        assert values[rail.name]["volt"] == round(volts * 1000) and values[rail.name]["curr"] == round(amps * 1000)
    # INA238: jetson-stats takes power1_input (uW) as mW, as the suite takes it as W.
    vin = next(r for r in ours if r.name == "VIN")
    assert values["VIN"]["power"] == int(vin.power_w * 1e3) and vin.power_w > 40
    theirs_total, _ = total_power({name: {"power": v.get("power", v["volt"] * v["curr"] // 1000), "avg": 0}
                                   for name, v in values.items()})
    assert theirs_total["name"] == "VIN"  # jetson-stats prefers the INA238 total, as the catalogue does
    assert power.total_power_w(ours, THOR.total_power_rails)[0] == vin.power_w


def test_gpu_through_gpu_gpc_0_agrees_with_jetson_stats(tree, monkeypatch):
    """jetson-stats reads Thor's GPU at fixed absolute paths; pointed at the tree, its readers
    see what the suite's see."""
    root, state = tree
    gpc = str(root / "sys/class/devfreq/gpu-gpc-0")
    nodes = (gpc, str(root / "sys/class/devfreq/gpu-nvd-0"))
    for module in (thor_gpu, jtop_gpu, hw_detect):
        monkeypatch.setattr(module, "THOR_GPC", gpc)
    monkeypatch.setattr(thor_power, "_DEVFREQ_NODES", nodes)
    monkeypatch.setattr(thor_gpu, "devfreq_nodes", lambda: list(nodes))
    assert hw_detect.is_thor()
    theirs = thor_gpu.GPUService().get_status()["thor"]
    mine = gpu.read_gpu(gpu.find_gpu(root))
    assert theirs["freq"]["cur"] * 1e3 == mine.cur_freq_hz == state.gpu_cur_freq_hz == THOR.gpu_max_freq_hz
    assert theirs["freq"]["max"] * 1e3 == mine.max_freq_hz and theirs["freq"]["governor"] == "nvhost_podgov"
    assert theirs["status"]["load"] == mine.load_pct == pytest.approx(state.gpu_load * 100, abs=0.1)
    assert jtop_gpu._thor_gpc_freq()["cur"] * 1e3 == mine.cur_freq_hz
    assert mine.railgate == "auto" and mine.gated is False


def test_emc_through_bwmgr_agrees_with_jetson_stats(tree):
    root, state = tree
    theirs = jtop_read_emc(str(root / "sys/kernel"))
    ours = emc.read_emc(root)
    assert ours.source == "bwmgr" and theirs["governor"] == "nvhost_podgov"
    assert theirs["cur"] * 1e3 == ours.rate_hz == state.emc_rate_hz and theirs["max"] * 1e3 == ours.max_hz
    assert theirs["val"] == int(ours.util_pct)
    back = read_state(root, THOR)
    assert back.emc_rate_hz == state.emc_rate_hz
    assert {k: pytest.approx(v) for k, v in back.rails.items()} == state.rails
    assert set(back.temperatures_c) == {"cpu-thermal", "gpu-thermal", "soc012-thermal", "soc345-thermal",
                                        "tj-thermal"}


def test_thor_tegrastats_line_parsed_by_jetson_stats():
    state = busy_thor_state()
    line = format_line(THOR, state, datetime(2026, 4, 21, 15, 50, 52), averages_mw={"VIN": 60000})
    text = tegra_parse.DATE(line)
    assert "GR3D_FREQ @[1575,1575,1575]" in text and "SWAP" not in text and "PVA0_FREQ off" in text
    assert tegra_parse.VALS(text)["GR3D"]["frq"] == 1575000  # three GPC clocks, no load
    assert "val" not in tegra_parse.VALS(text)["GR3D"]
    assert len(tegra_parse.CPUS(text)) == 14
    assert {"soc012", "soc345", "gpu", "tj"} <= set(tegra_parse.TEMPS(text))
    watts = tegra_parse.WATTS(text)
    volts, amps = state.rails["VIN"]
    assert watts["VIN"] == {"cur": round(volts * amps * 1000), "avg": 60000}
    assert list(watts)[-1] == "VIN"  # the INA238 last, as tegrastats prints it


def test_nvpmodel_emulation_and_the_power_gating_mask(tree):
    root, _ = tree
    cmd = (str(root / NVPMODEL_LAUNCHER),)
    assert Nvpmodel(cmd).query().name == "MAXN"
    plat = JetsonPlatform(root=root, nvpmodel_cmd=cmd, writer=CapWriter(sudo_cmd=("false",)))
    assert [p.name for p in plat.device.presets] == ["MAXN", "120W"]  # read from the tree's conf
    plat.apply(next(p for p in plat.operating_points() if p.name == "120W"))
    assert int((root / "sys/class/devfreq/gpu-gpc-0/max_freq").read_text()) == 1363e6
    assert plat.restore().startswith("restored MAXN as found")
    # A conf whose mode changes the GPU power-gating mask: Thor needs a reboot for that.
    conf = root / "etc/nvpmodel" / THOR.nvpmodel_conf_name
    text = conf.read_text()
    cut = text.index("< POWER_MODEL ID=1")
    conf.write_text(text[:cut] + text[cut:].replace("GPC_PG_MASK 0", "GPC_PG_MASK 3", 1))
    plat = JetsonPlatform(root=root, nvpmodel_cmd=cmd, writer=CapWriter(sudo_cmd=("false",)))
    assert 1 not in {p.nvpmodel_id for p in plat.operating_points()}
    with pytest.raises(RebootRequiredError):
        plat.apply(next(p for p in plat.operating_points() if p.nvpmodel_id == 0).with_caps(nvpmodel_id=1))
    with pytest.raises(RebootRequiredError):  # and nvpmodel itself, asked directly, prompts and fails
        Nvpmodel(cmd)._run("-m", "1")
    assert Nvpmodel(cmd).query().name == "MAXN"


def test_fp8_and_fp4_run_faster_than_fp16_on_the_virtual_thor():
    from edge_roofline.models import zoo
    from edge_roofline.roofline.costs import analyze_model
    board = VirtualBoard(THOR, mode_id=0)
    latency = {p: board.run_inference(analyze_model(zoo.build("resnet50", batch=32), precision="fp16"), p).latency_s
               for p in ("fp32", "fp16", "fp8", "fp4")}
    assert latency["fp32"] > latency["fp16"] > latency["fp8"] >= latency["fp4"]
    with pytest.raises(ValueError, match="no 'fp8'"):
        VirtualBoard("agx_orin_64gb").run_inference(analyze_model(zoo.build("tiny_cnn"), precision="fp16"), "fp8")
