"""create_platform_or_degraded: a platform that cannot start degrades to the CPU with the reason
(the factories' shared idiom is tested in test/test_factories.py)."""

import sys
import time

from edge_roofline.platforms import create_platform_or_degraded


def test_a_missing_platform_degrades_to_the_cpu_with_the_reason(monkeypatch):
    monkeypatch.setitem(sys.modules, "edge_roofline.platforms.nvml", None)
    platform, problem = create_platform_or_degraded("nvml")
    try:
        assert platform.identity().kind == "cpu"
        assert "NvmlPlatform is not available in this install" in problem
    finally:
        platform.close()


def test_an_unknown_virtual_device_is_named_at_once(tmp_path):
    # It waited a minute for a live board no virtual Jetson can render, then told the user to start
    # one with --device nosuch (which virtual-jetson refuses).
    start = time.monotonic()
    platform, problem = create_platform_or_degraded("virtual:nosuch", sysfs_root=str(tmp_path))
    platform.close()
    assert time.monotonic() - start < 5.0
    assert "virtual platform needs a device the virtual Jetson knows: virtual:DEVICE, DEVICE one of " \
           "agx_orin_32gb, agx_orin_64gb" in problem and "got 'virtual:nosuch'" in problem, problem


def test_a_live_virtual_board_is_read_only_as_itself(tmp_path):
    # virtual:orin_nx_16gb on an AGX Orin's tree read the AGX's rails as the NX's, and jetson on it
    # (nvpmodel_cmd the emulator) labelled SIMULATION readings a real Jetson's.
    from edge_roofline.platforms import virtual_nvpmodel_cmd
    from edge_roofline.virtual.live import LiveVirtualJetson
    LiveVirtualJetson(tmp_path, "agx_orin_64gb")
    platform, problem = create_platform_or_degraded("virtual:orin_nx_16gb", sysfs_root=str(tmp_path))
    platform.close()
    assert f"the live virtual Jetson at {tmp_path} is agx_orin_64gb, not orin_nx_16gb: set virtual:agx_orin_64gb" \
        in problem, problem
    platform, problem = create_platform_or_degraded("jetson", sysfs_root=str(tmp_path),
                                                    nvpmodel_cmd=virtual_nvpmodel_cmd(tmp_path)[0])
    platform.close()
    assert f"{tmp_path} is a virtual Jetson's tree (SIMULATION): use virtual:agx_orin_64gb for it, not jetson" \
        in problem, problem
    platform, problem = create_platform_or_degraded("virtual:agx_orin_64gb", sysfs_root=str(tmp_path))
    try:
        assert not problem and platform.identity().simulated
    finally:
        platform.close()
