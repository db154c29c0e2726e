"""nvpmodel.conf as NVIDIA ships it (``_KNEXT`` paths, ``GPU_POWER_CONTROL_*`` words, DLA and
PVA clocks, EMC as a FILE parameter, comments) read into presets: the JetPack 6.2 Super confs
give the catalogue's Super tables, and a JetPack 7.2 Thor conf gives modes the catalogue lacks."""

from __future__ import annotations

import pytest

from edge_roofline.platforms.jetson.nvpmodel import parse_conf, presets_from_conf
from edge_roofline.roofline.devices import get_device

_ORIN_PARAMS = """\
# the file format of NVIDIA's nvpmodel_p3767_*.conf (paths as on JetPack 6)
< PARAM TYPE=FILE NAME=CPU_ONLINE >
{cores}

< PARAM TYPE=FILE NAME=TPC_POWER_GATING >
TPC_PG_MASK /sys/devices/platform/gpu.0/tpc_pg_mask

< PARAM TYPE=FILE NAME=GPU_POWER_CONTROL_ENABLE >
GPU_PWR_CNTL_EN /sys/devices/platform/gpu.0/power/control

< PARAM TYPE=FILE NAME=GPU_POWER_CONTROL_DISABLE >
GPU_PWR_CNTL_DIS /sys/devices/platform/gpu.0/power/control

< PARAM TYPE=CLOCK NAME=CPU_A78_0 >
FREQ_TABLE /sys/devices/system/cpu/cpu0/cpufreq/scaling_available_frequencies
MAX_FREQ /sys/devices/system/cpu/cpu0/cpufreq/scaling_max_freq
MIN_FREQ /sys/devices/system/cpu/cpu0/cpufreq/scaling_min_freq
FREQ_TABLE_KNEXT /sys/devices/system/cpu/cpu0/cpufreq/scaling_available_frequencies
MAX_FREQ_KNEXT /sys/devices/system/cpu/cpu0/cpufreq/scaling_max_freq
MIN_FREQ_KNEXT /sys/devices/system/cpu/cpu0/cpufreq/scaling_min_freq

< PARAM TYPE=CLOCK NAME=CPU_A78_1 >
FREQ_TABLE /sys/devices/system/cpu/cpu4/cpufreq/scaling_available_frequencies
MAX_FREQ /sys/devices/system/cpu/cpu4/cpufreq/scaling_max_freq
MIN_FREQ /sys/devices/system/cpu/cpu4/cpufreq/scaling_min_freq

< PARAM TYPE=CLOCK NAME=GPU >
FREQ_TABLE /sys/devices/platform/bus@0/17000000.gpu/devfreq/17000000.gpu/available_frequencies
MAX_FREQ /sys/devices/platform/bus@0/17000000.gpu/devfreq/17000000.gpu/max_freq
MIN_FREQ /sys/devices/platform/bus@0/17000000.gpu/devfreq/17000000.gpu/min_freq

< PARAM TYPE=CLOCK NAME=PVA0_VPS >
MAX_FREQ /sys/devices/platform/13e00000.host1x/16000000.pva0/acm/clk_cap/pva0_vps

< PARAM TYPE=FILE NAME=EMC >
MAX_FREQ /sys/kernel/nvpmodel_emc_cap/emc_iso_cap
"""


def shipped_orin_conf(cores: int, modes: list[tuple], default: int) -> str:
    """``modes``: (id, name, online cores, CPU kHz or -1, GPU Hz or -1, EMC Hz or 0)."""
    text = _ORIN_PARAMS.format(cores="\n".join(f"CORE_{c} /sys/devices/system/cpu/cpu{c}/online"
                                               for c in range(cores)))
    for mode_id, name, online, cpu_khz, gpu_hz, emc_hz in modes:
        lines = [f"< POWER_MODEL ID={mode_id} NAME={name} >"]
        lines += [f"CPU_ONLINE CORE_{c} {int(c < online)}" for c in range(cores)]
        lines += ["TPC_POWER_GATING TPC_PG_MASK 0", "GPU_POWER_CONTROL_ENABLE GPU_PWR_CNTL_EN on",
                  "CPU_A78_0 MIN_FREQ 729600", f"CPU_A78_0 MAX_FREQ {cpu_khz}"]
        if online > 4:
            lines += ["CPU_A78_1 MIN_FREQ 729600", f"CPU_A78_1 MAX_FREQ {cpu_khz}"]
        lines += ["GPU MIN_FREQ 0", f"GPU MAX_FREQ {gpu_hz}", "GPU_POWER_CONTROL_DISABLE GPU_PWR_CNTL_DIS auto",
                  "PVA0_VPS MAX_FREQ -1", f"EMC MAX_FREQ {emc_hz}", ""]
        text += "\n" + "\n".join(lines)
    return text + f"\n# mandatory section to configure the default power mode\n< PM_CONFIG DEFAULT={default} >\n"


# The JetPack 6.2 Super confs' modes (jetson-facts.md; CPU caps of the original modes).
SUPER_CONFS = {
    "orin_nx_16gb_super": (8, [(0, "MAXN_SUPER", 8, -1, -1, 0), (1, "10W", 4, 1190400, 612000000, 2133000000),
                               (2, "15W", 4, 1651200, 612000000, 0), (3, "25W", 8, 1497600, 408000000, 0),
                               (4, "40W", 8, -1, 1173000000, 0)], 4),
    "orin_nx_8gb_super": (6, [(0, "MAXN_SUPER", 6, -1, -1, 0), (1, "10W", 4, 1190400, 612000000, 2133000000),
                              (2, "15W", 4, 1651200, 612000000, 0), (3, "20W", 6, 1497600, 408000000, 0),
                              (4, "40W", 6, 1984000, 1173000000, 0)], 4),
    "orin_nano_8gb": (6, [(0, "15W", 6, 1497600, 612000000, 2133000000), (1, "25W", 6, 1344000, 918000000, 3199000000),
                          (2, "MAXN_SUPER", 6, -1, -1, 0)], 1),
    "orin_nano_4gb_super": (6, [(0, "10W", 6, -1, 612000000, 0), (1, "25W", 6, 1728000, 1020000000, 0),
                                (2, "MAXN_SUPER", 6, -1, -1, 0)], 1),
}


@pytest.mark.parametrize("key", sorted(SUPER_CONFS))
def test_a_shipped_super_conf_gives_the_catalogue_table(key):
    cores, modes, default = SUPER_CONFS[key]
    conf = parse_conf(shipped_orin_conf(cores, modes, default))
    assert conf.default_id == get_device(key).default_mode_id == default
    assert conf.models[modes[0][0]].settings[("GPU_POWER_CONTROL_ENABLE", "GPU_PWR_CNTL_EN")] == "on"
    assert presets_from_conf(conf, cores) == get_device(key).presets


def test_a_conf_value_that_is_a_word_is_kept_and_a_missing_core_stays_online():
    conf = parse_conf("< POWER_MODEL ID=0 NAME=X >\nCPU_ONLINE CORE_1 0\nGPU_POWER_CONTROL_DISABLE "
                      "GPU_PWR_CNTL_DIS auto\nEMC MAX_FREQ -1\n< PM_CONFIG DEFAULT=0 >\n")
    (preset,) = presets_from_conf(conf, 4)
    assert preset.cpu_online_cores == 3 and preset.emc_max_freq_hz is None and preset.tpc_pg_mask == 0


def test_a_jetpack_7_2_thor_conf_reads_modes_the_catalogue_does_not_have():
    """Thor's 7.2 conf defines ids 0-3 (2-3 UNVERIFIED in the catalogue): read from the board,
    with a GPU power-gating mask under whatever *_PG_MASK name the conf uses."""
    thor = get_device("agx_thor_t5000")
    modes = [(0, "MAXN", 14, -1, -1, 0, 0), (1, "120W", 14, -1, 1363000000, 0, 0),
             (2, "90W", 12, 2188800, 1048000000, 3200000000, 0), (3, "70W", 8, 1728000, 838000000, 0, 5)]
    text = "< PARAM TYPE=FILE NAME=GPU_POWER_GATING >\nGPC_PG_MASK /x\n"
    for mode_id, name, online, cpu_khz, gpu_hz, emc_hz, mask in modes:
        text += (f"< POWER_MODEL ID={mode_id} NAME={name} >\n"
                 + "".join(f"CPU_ONLINE CORE_{c} {int(c < online)}\n" for c in range(14))
                 + f"GPU_POWER_GATING GPC_PG_MASK {mask}\nCPU_V3AE_0 MAX_FREQ {cpu_khz}\n"
                 + f"GPU MAX_FREQ {gpu_hz}\nEMC MAX_FREQ {emc_hz}\n")
    presets = presets_from_conf(parse_conf(text + "< PM_CONFIG DEFAULT=0 >\n"), thor.cpu_cores)
    assert presets[:2] == thor.presets
    assert [(p.name, p.cpu_online_cores, p.tpc_pg_mask) for p in presets[2:]] == [("90W", 12, 0), ("70W", 8, 5)]
    assert presets[2].cpu_max_freq_hz == 2188.8e6 and presets[2].emc_max_freq_hz == 3200e6
