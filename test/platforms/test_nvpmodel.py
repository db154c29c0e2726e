"""nvpmodel wrapper against a fake nvpmodel: live switch, refused reboot switch, hang."""

from __future__ import annotations

import time

import pytest

from edge_roofline.platforms.base import ApplyError, RebootRequiredError
from edge_roofline.platforms.jetson.nvpmodel import Nvpmodel, parse_conf, parse_query
from edge_roofline.roofline.devices import get_device
from test.platforms.tree import write, write_fake_nvpmodel

PRESETS = {p.name: p for p in get_device("agx_orin_64gb").presets}


@pytest.fixture
def nvp(tmp_path):
    return Nvpmodel((str(write_fake_nvpmodel(tmp_path)),))


def test_query_and_list(nvp):
    assert nvp.query().name == "MODE_30W" and nvp.query().mode_id == 2
    default_id, models = nvp.list_modes()
    assert default_id == 2 and models[0] == "MAXN" and models[3] == "MODE_50W"


def test_live_switch_maxn_mode_50w(nvp, tmp_path):
    write(tmp_path / "usr/bin/nvpmodel_status", "0")
    nvp.set_mode(PRESETS["MODE_50W"], PRESETS["MAXN"])
    assert nvp.query().name == "MODE_50W"
    nvp.set_mode(PRESETS["MAXN"], PRESETS["MODE_50W"])
    assert nvp.query().mode_id == 0


def test_tpc_mask_change_refused_before_calling(tmp_path):
    never_run = Nvpmodel((str(tmp_path / "does-not-exist"),))
    with pytest.raises(RebootRequiredError, match="TPC_PG_MASK"):
        never_run.set_mode(PRESETS["MODE_15W"], PRESETS["MODE_30W"])  # mask 248 vs 240


def test_reboot_prompt_is_answered_with_eof(nvp):
    with pytest.raises(RebootRequiredError):
        nvp._run("-m", "1")  # MODE_30W -> MODE_15W changes the mask
    assert nvp.query().name == "MODE_30W"


def test_nvpm_error_and_hang(nvp, tmp_path):
    with pytest.raises(ApplyError, match="NVPM ERROR"):
        nvp._run("-m", "9")
    write(tmp_path / "usr/bin/HANG", "")
    nvp.timeout_s = 0.5
    start = time.monotonic()
    with pytest.raises(ApplyError, match="did not answer"):
        nvp.query()
    assert time.monotonic() - start < 5


def test_parse_conf_and_query():
    conf = parse_conf("""
< PARAM TYPE=CLOCK NAME=GPU >
MAX_FREQ /sys/devices/gpu/devfreq/max_freq
< POWER_MODEL ID=0 NAME=MAXN >
CPU_ONLINE CORE_4 1
TPC_POWER_GATING TPC_PG_MASK 0
GPU MAX_FREQ -1
< POWER_MODEL ID=1 NAME=MODE_15W >
TPC_POWER_GATING TPC_PG_MASK 248
CPU_A78_0 MAX_FREQ 1113600
< PM_CONFIG DEFAULT=0 >
""")
    assert conf.default_id == 0 and conf.models[1].name == "MODE_15W"
    assert conf.models[1].settings[("TPC_POWER_GATING", "TPC_PG_MASK")] == 248
    assert conf.params["GPU"]["MAX_FREQ"] == "/sys/devices/gpu/devfreq/max_freq"
    with pytest.raises(ValueError, match="PM_CONFIG"):
        parse_conf("< POWER_MODEL ID=0 NAME=MAXN >\n")
    assert parse_query("NVPM WARN: fan mode is not set!\nNV Power Mode: MAXN\n0\n").mode_id == 0
    with pytest.raises(ApplyError):
        parse_query("garbage")
