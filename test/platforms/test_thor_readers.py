"""The Jetson backend's readers and platform on a Jetson AGX Thor tree written by hand from
jetson-facts.md (not by the virtual Jetson): GPU devfreq gpu-gpc-0 on a PCI device, EMC via
bwmgr, INA3221 rails plus the INA238 total, thermal zones that fail with EAGAIN while the GPU is
gated, the board's own modes and tables preferred over the catalogue's guesses."""

from __future__ import annotations

import errno
import os

import pytest

from edge_roofline.platforms.base import OperatingPoint, OperatingPointError, RebootRequiredError
from edge_roofline.platforms.jetson import emc, gpu, power, thermal
from edge_roofline.platforms.jetson.caps import CapWriter
from edge_roofline.platforms.jetson.platform import JetsonPlatform
from edge_roofline.telemetry import modes
from test.platforms.tree import (THOR_EMC_HZ, THOR_GPU_HZ, THOR_VIN_MV, THOR_VIN_UW, THOR_ZONES, write,
                                 write_fake_nvpmodel, write_thor_tree)


@pytest.fixture
def root(tmp_path):
    write_thor_tree(tmp_path)
    write_fake_nvpmodel(tmp_path, "agx_thor_t5000")
    return tmp_path


def platform(root):
    return JetsonPlatform(root=root, nvpmodel_cmd=(str(root / "usr/bin/nvpmodel"),),
                          writer=CapWriter(sudo_cmd=("false",)))


def test_gpu_is_gpu_gpc_0_on_the_pci_device(root):
    paths = gpu.find_gpu(root)
    assert paths.name == "gpu-gpc-0" and paths.pci_dir.name == "0000:01:00.0"
    status = gpu.read_gpu(paths)
    assert status.cur_freq_hz == THOR_GPU_HZ and status.available_freqs_hz[-1] == 1575e6
    assert (status.railgate, status.gated, status.tpc_pg_mask) == ("auto", False, None)
    assert status.codec_freq_hz == 115.2e6 and status.load_pct is None  # no load file: unknown, not 0
    write(paths.pci_dir / "power/runtime_status", "suspended\n")
    assert gpu.read_gpu(paths).gated
    write(paths.devfreq_dir / "load", "345\n")
    assert gpu.read_gpu(paths).load_pct == 34.5


def test_emc_through_bwmgr(root):
    status = emc.read_emc(root)
    assert status.source == "bwmgr" and status.rate_hz == THOR_EMC_HZ and status.max_hz == 4266e6
    assert status.util_pct == pytest.approx(10.0) and status.iso_cap_hz is None
    assert status.available_hz == (2133e6, 2750e6, 4266e6)


def test_rails_and_the_ina238_total_in_microwatts(root):
    channels = power.find_rails(root)
    assert [c.label for c in channels] == ["VDD_GPU", "VDD_CPU_SOC_MSS", "VIN_SYS_5V0", "VIN"]
    reader = power.RailReader(channels)
    rails = {r.name: r for r in reader.read()[0]}
    assert rails["VIN"].power_w == THOR_VIN_UW / 1e6 and rails["VIN"].voltage_v == THOR_VIN_MV / 1e3
    assert rails["VDD_GPU"].power_w == pytest.approx(19.8 * 0.099)
    assert power.total_power_w(tuple(rails.values()), ("VIN",)) == (19.78, None)
    # The INA238's power register is unsigned: a negative power1_input is no reading.
    vin = next(c for c in channels if c.label == "VIN")
    vin.power_path.write_text("-5000000\n")
    rails, errors = reader.read()
    assert "VIN" not in {r.name for r in rails} and "outside the chip's range 0..inf uW" in str(errors[0])
    reader.close()


def test_a_zone_failing_with_eagain_is_left_out_not_the_others(root, monkeypatch):
    """gpu-thermal answers EAGAIN while Thor's GPU is rail-gated: that zone is missing from the
    sample (not 0 C, not an exception), and it is read again once the GPU is back."""
    zones = thermal.find_zones(root)
    gated = {str(path) for name, path in zones if name == "gpu-thermal"}
    real_open, real_read, gated_fds = os.open, os.read, set()

    def fake_open(path, *args, **kwargs):
        fd = real_open(path, *args, **kwargs)
        if str(path) in gated:
            gated_fds.add(fd)
        return fd

    def fake_read(fd, n):
        if fd in gated_fds:
            gated_fds.discard(fd)
            raise BlockingIOError(errno.EAGAIN, "Resource temporarily unavailable")
        return real_read(fd, n)

    monkeypatch.setattr(os, "open", fake_open)
    monkeypatch.setattr(os, "read", fake_read)
    temps = thermal.read_zones(zones)
    assert "gpu-thermal" not in temps and temps["soc012-thermal"] == 37.468 and len(temps) == len(THOR_ZONES) - 1
    gated.clear()
    assert thermal.read_zones(zones)["gpu-thermal"] == 38.875


def test_platform_samples_thor(root):
    plat = platform(root)
    assert plat.identity().catalogue_key == "agx_thor_t5000"
    sample = plat.sample()
    assert sample.total_power_w == 19.78 and sample.gpu_freq_hz == THOR_GPU_HZ and sample.emc_freq_hz == THOR_EMC_HZ
    assert sample.gpu_load_pct is None  # a generated tree never asks the host's NVML
    assert set(sample.temperatures_c) == {z for z, _ in THOR_ZONES} and len(sample.cpu_freq_hz) == 14
    assert plat.sample_power().total_power_w == 19.78


def test_without_a_conf_only_caps_inside_the_mode_are_applied(root):
    """No readable nvpmodel.conf: the 120W mode's power-gating mask is the catalogue's guess,
    so the platform never switches to it (a wrong guess would ask for a reboot)."""
    plat = platform(root)
    assert "power modes (" in plat.facts.summary() and "unreadable" in plat.facts.summary()
    assert {p.nvpmodel_id for p in plat.operating_points()} == {0}
    with pytest.raises(RebootRequiredError, match="was not readable"):
        plat.apply(OperatingPoint(name="120W", nvpmodel_id=1))
    # The board's own tables win where it shows them: GPU from devfreq, EMC from bwmgr.
    assert plat.device.gpu_freqs_hz == (314e6, 1000e6, 1575e6) and plat.device.emc_freqs_hz[-1] == 4266e6
    assert not plat.device.is_unverified("gpu_freqs_hz") and plat.device.is_unverified("cpu_freqs_hz")


def test_with_the_boards_conf_the_modes_are_the_boards(root):
    write(root / "etc/nvpmodel/nvpmodel_p3834_0008.conf",
          "< POWER_MODEL ID=0 NAME=MAXN >\nGPU MAX_FREQ -1\n< POWER_MODEL ID=1 NAME=120W >\n"
          "GPU MAX_FREQ 1000000000\n< POWER_MODEL ID=2 NAME=90W >\nGPU MAX_FREQ 314000000\n"
          "< PM_CONFIG DEFAULT=0 >\n")
    (root / "etc/nvpmodel.conf").symlink_to("nvpmodel/nvpmodel_p3834_0008.conf")
    plat = platform(root)
    assert plat.device.presets[1].gpu_max_freq_hz == 1e9 and not plat.device.is_unverified("presets")
    # The power monitor's get_mode/set_mode services list the board's modes, JetPack 7.2's third too.
    assert [(m.name, m.reachable_without_reboot) for m in modes.list_modes(plat)] == [
        ("MAXN", True), ("120W", True), ("90W", True)]
    plat.apply(next(p for p in plat.operating_points() if p.name == "120W"))
    assert plat.sample().nvpmodel_mode == "120W"
    with pytest.raises(OperatingPointError, match="above 120W's"):
        plat.apply(plat.operating_points()[0].with_caps(nvpmodel_id=1, gpu_max_freq_hz=1575e6))


def test_apply_and_restore_a_crash_record_on_thors_files(root):
    plat = platform(root)
    gpc_max = root / "sys/class/devfreq/gpu-gpc-0/max_freq"
    iso_cap = root / "sys/kernel/nvpmodel_emc_cap/emc_iso_cap"
    record = plat.found_record()
    assert any(path.endswith("devfreq/gpu-gpc-0/max_freq") for path in record["files"])
    point = next(p for p in plat.operating_points() if p.has_caps and p.gpu_max_freq_hz == 1000e6
                 and p.emc_max_freq_hz == 2750e6 and p.cpu_online_cores == 7)
    plat.apply(point)
    assert gpc_max.read_text() == "1000000000" and iso_cap.read_text() == "2750000000"
    assert (root / "sys/devices/system/cpu/cpu13/online").read_text() == "0"
    # A new process (the governor restarted after a crash) puts back what the first one found.
    message = platform(root).restore_record(record)
    assert message.startswith("restored MAXN as found")
    assert gpc_max.read_text().strip() == "1575000000" and iso_cap.read_text().strip() == "0"
    assert (root / "sys/devices/system/cpu/cpu13/online").read_text().strip() == "1"


def test_every_cap_file_of_a_thor_record_is_on_the_privileged_allow_list(root):
    from edge_roofline.platforms.jetson.privileged_write import allowed
    files = [os.path.relpath(path, root) for path in platform(root).found_record()["files"]]
    assert files and all(allowed(f"/{path}", "0") for path in files), files
    assert not allowed("/sys/devices/platform/x/devfreq/gpu-nvd-0/max_freq", "0")  # the codec clock is not ours
