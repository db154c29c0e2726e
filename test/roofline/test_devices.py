"""The device catalogue's new entries: Jetson AGX Thor (FP8/FP4 roofs, its layout, what is
UNVERIFIED) and the JetPack 6.2 Super modes of Orin Nano/NX."""

from __future__ import annotations

import re

import pytest

from edge_roofline.roofline.ceilings import CeilingsError, preset_ceilings, spec_ceilings
from edge_roofline.roofline.devices import PRECISIONS, get_device

THOR = get_device("agx_thor_t5000")


def test_thor_t5000_matches_its_published_figures():
    assert (THOR.gpu_sm_count, THOR.cpu_cores, THOR.dla_cores) == (20, 14, 0)
    assert THOR.gpu_max_freq_hz == 1.575e9 and THOR.cpu_max_freq_hz == 2.6016e9
    assert THOR.gpu_l2_bytes == 32 * 2**20 and THOR.ram_mb > 120_000
    assert THOR.dram_bandwidth_bps(THOR.emc_max_freq_hz) == pytest.approx(273e9, rel=0.001)
    # Published: 2070 FP4 TFLOPS sparse, 1035 FP8 (read as sparse): the catalogue is dense.
    assert 2 * THOR.gpu_peak_flops("fp4", THOR.gpu_max_freq_hz) == pytest.approx(2070e12)
    assert 2 * THOR.gpu_peak_flops("fp8", THOR.gpu_max_freq_hz) == pytest.approx(1035e12)
    assert THOR.precisions == PRECISIONS
    assert [p.name for p in THOR.presets] == ["MAXN", "120W"] and THOR.default_mode_id == 0


def test_thor_ceilings_per_precision_and_what_is_unverified():
    peaks = {p: preset_ceilings(THOR, "MAXN", p) for p in THOR.precisions}
    assert [peaks[p].peak_flops for p in ("fp32", "fp16", "fp8", "fp4")] == sorted(
        peaks[p].peak_flops for p in ("fp32", "fp16", "fp8", "fp4"))
    assert peaks["fp4"].source == "spec"  # the published sparse figure, halved
    assert all(peaks[p].source == "spec, peak UNVERIFIED" for p in ("fp32", "fp16", "int8", "fp8"))
    assert preset_ceilings("agx_orin_64gb", "MAXN", "fp16").source == "spec"
    # The 120W mode's GPU cap is a guess the catalogue says is one.
    assert THOR.is_unverified("presets") and not get_device("agx_orin_64gb").is_unverified("presets")
    with pytest.raises(CeilingsError, match="no DLA"):
        spec_ceilings(THOR, "int8", engine="dla")


def test_fp8_and_fp4_only_where_the_tensor_cores_have_them():
    for key in ("agx_orin_64gb", "orin_nx_16gb_super", "nano"):
        device = get_device(key)
        assert "fp8" not in device.precisions and "fp4" not in device.precisions
        with pytest.raises(CeilingsError, match=re.escape(f"{device.name} has no fp8 on its GPU")):
            spec_ceilings(device, "fp8")
    with pytest.raises(CeilingsError, match="Neoverse-V3AE CPU has no fp4"):
        spec_ceilings(THOR, "fp4", engine="cpu")
    with pytest.raises(CeilingsError, match="unknown precision"):
        spec_ceilings(THOR, "fp6")


def test_thor_t4000_is_smaller_and_says_what_is_guessed():
    t4000 = get_device("agx_thor_t4000")
    assert t4000.cpu_cores == 12 and t4000.ram_mb < THOR.ram_mb
    sparse_fp4 = 2 * t4000.gpu_peak_flops("fp4", t4000.gpu_max_freq_hz)
    assert sparse_fp4 == pytest.approx(1200e12, rel=0.05)  # the secondary sources' 1200 TFLOPS
    assert t4000.is_unverified("gpu_sm_count")
    assert preset_ceilings(t4000, "MAXN", "fp4").source == "spec, peak UNVERIFIED"


# JetPack 6.2 Super modes (jetson-facts.md): (id, name, GPU cap MHz or None, online cores), default.
SUPER = {
    "orin_nano_8gb": ([(0, "15W", 612, 6), (1, "25W", 918, 6), (2, "MAXN_SUPER", None, 6)], 1),
    "orin_nano_4gb_super": ([(0, "10W", 612, 6), (1, "25W", 1020, 6), (2, "MAXN_SUPER", None, 6)], 1),
    "orin_nx_16gb_super": ([(0, "MAXN_SUPER", None, 8), (1, "10W", 612, 4), (2, "15W", 612, 4),
                            (3, "25W", 408, 8), (4, "40W", 1173, 8)], 4),
    "orin_nx_8gb_super": ([(0, "MAXN_SUPER", None, 6), (1, "10W", 612, 4), (2, "15W", 612, 4),
                           (3, "20W", 408, 6), (4, "40W", 1173, 6)], 4),
}


@pytest.mark.parametrize("key", sorted(SUPER))
def test_super_mode_tables(key):
    device = get_device(key)
    modes, default = SUPER[key]
    assert device.default_mode_id == default
    assert [(p.mode_id, p.name, p.gpu_max_freq_hz and p.gpu_max_freq_hz / 1e6, p.cpu_online_cores)
            for p in device.presets] == modes
    top = max((mhz for _, _, mhz, _ in modes if mhz), default=0) * 1e6
    assert device.gpu_max_freq_hz >= top and device.snap_gpu_freq(top) == top  # every cap is a table entry
    assert device.nvpmodel_conf_name.endswith("_super.conf")


def test_super_raises_the_roofs_over_the_original_modes():
    for key in ("orin_nx_16gb", "orin_nx_8gb", "orin_nano_4gb"):
        plain = preset_ceilings(key, "MAXN" if "nx" in key else "10W", "int8")
        boosted = preset_ceilings(f"{key}_super", "MAXN_SUPER", "int8")
        assert boosted.peak_flops > plain.peak_flops and boosted.dram_bandwidth_bps >= plain.dram_bandwidth_bps
