"""Detection: Thor, Orin on JetPack 6 and Orin on JetPack 7.2 told apart by the device tree's
compatible string, /etc/nv_tegra_release and the GPU's devfreq name; a Super conf picks the
module's Super variant; a layout no release ships is identified and named."""

from __future__ import annotations

import pytest

from edge_roofline.platforms.base import PlatformInitError
from edge_roofline.platforms.jetson.identify import L4tRelease, identify, read_release
from test.platforms.tree import write, write_agx_orin_tree, write_thor_tree

R36 = "# R36 (release), REVISION: 4.3, GCID: 38968081, BOARD: generic, EABI: aarch64, DATE: x\n"
R39 = "# R39 (release), REVISION: 2.1, GCID: 1, BOARD: generic, EABI: aarch64, DATE: x\n"


def test_thor_on_jetpack_7_1(tmp_path):
    found = identify(write_thor_tree(tmp_path))
    assert found.catalogue_key == "agx_thor_t5000" and "nvidia,tegra264" in found.compatible
    assert (found.release.major, found.release.jetpack) == (38, "7.1")
    assert found.gpu_stack == "nvidia.ko (PCI, gpu-gpc-0)" and found.notes == ()
    assert found.software == "JetPack 7.1 (L4T R38.4.0), nvidia.ko (PCI, gpu-gpc-0)"


@pytest.mark.parametrize("release, jetpack", [(R36, "6"), (R39, "7.2")])
def test_orin_on_jetpack_6_and_7_2_keeps_nvgpu(tmp_path, release, jetpack):
    write_agx_orin_tree(tmp_path)
    write(tmp_path / "etc/nv_tegra_release", release)
    found = identify(tmp_path)
    assert found.catalogue_key == "agx_orin_64gb" and found.release.jetpack == jetpack
    assert found.gpu_stack == "nvgpu (17000000.gpu)" and found.notes == ()


def test_jetpack_7_0_and_unknown_releases():
    assert read_release("/nonexistent") is None
    for revision, jetpack in (("2.0", "7.0"), ("4.0", "7.1")):
        assert L4tRelease(38, revision).jetpack == jetpack


def test_layouts_no_release_ships_are_named(tmp_path):
    orin = write_agx_orin_tree(tmp_path / "orin")
    write(orin / "etc/nv_tegra_release", R36.replace("R36", "R38"))
    assert "Orin on L4T R38" in identify(orin).notes[0]
    thor = write_thor_tree(tmp_path / "thor", release=R36)
    assert "Thor on L4T R36" in identify(thor).notes[0]
    for name in ("gpu-gpc-0", "gpu-nvd-0"):
        (thor / "sys/class/devfreq" / name).unlink()
    found = identify(thor)
    assert found.catalogue_key == "agx_thor_t5000" and found.gpu_stack is None  # still Thor by its part number


def test_thor_by_model_string_and_an_unknown_soc(tmp_path):
    write(tmp_path / "proc/device-tree/compatible", "nvidia,p9999-0001\x00nvidia,tegra264\x00")
    write(tmp_path / "proc/device-tree/model", "NVIDIA Jetson AGX Thor Developer Kit\x00")
    assert identify(tmp_path).catalogue_key == "agx_thor_t5000"
    write(tmp_path / "proc/device-tree/model", "Some board\x00")
    with pytest.raises(PlatformInitError, match="unknown Jetson"):
        identify(tmp_path)


def test_a_super_conf_picks_the_super_variant(tmp_path):
    write_agx_orin_tree(tmp_path, "orin_nx_16gb")
    assert identify(tmp_path).catalogue_key == "orin_nx_16gb"
    write(tmp_path / "etc/nvpmodel/nvpmodel_p3767_0000_super.conf",
          "< POWER_MODEL ID=0 NAME=MAXN_SUPER >\n< PM_CONFIG DEFAULT=0 >\n")
    (tmp_path / "etc/nvpmodel.conf").symlink_to("nvpmodel/nvpmodel_p3767_0000_super.conf")
    assert identify(tmp_path).catalogue_key == "orin_nx_16gb_super"
