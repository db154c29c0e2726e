"""The INA3221 rails as the power sampler reads them: at the chips' update_interval (the
sampler's rate is a cap), through value files kept open (pread), and with a rail whose file
vanishes or goes bad mid-run reported missing, typed, in one log line."""

from __future__ import annotations

import logging

import pytest

from edge_roofline.platforms.jetson import power
from edge_roofline.platforms.jetson.caps import CapWriter
from edge_roofline.platforms.jetson.platform import JetsonPlatform
from edge_roofline.telemetry import diagnostics
from edge_roofline.telemetry.sampler import PowerSampler
from test.platforms.tree import write, write_agx_orin_tree, write_fake_nvpmodel

DRIVER = "sys/bus/i2c/drivers/ina3221"


@pytest.fixture
def root(tmp_path):
    write_agx_orin_tree(tmp_path)
    write_fake_nvpmodel(tmp_path)
    write(tmp_path / "usr/bin/nvpmodel_status", "0")
    return tmp_path


def hwmon_dirs(root):
    return sorted((root / DRIVER).glob("*/hwmon/hwmon*"))


def make(root):
    return JetsonPlatform(root=root, nvpmodel_cmd=(str(root / "usr/bin/nvpmodel"),),
                          writer=CapWriter(sudo_cmd=("false",)))


def set_update_interval(root, *intervals_ms):
    for hwmon, ms in zip(hwmon_dirs(root), intervals_ms):
        write(hwmon / "update_interval", f"{ms}\n")


@pytest.mark.parametrize("intervals_ms, cap_hz, rate_hz, why", [
    ((13, 13), 200.0, 1000 / 13, "update interval of 13 ms"),
    ((26, 13), 200.0, 1000 / 13, "update interval of 13 ms"),  # the faster chip: no conversion missed
    ((2, 2), 200.0, 200.0, "200 Hz cap"),
    ((13, 13), 50.0, 50.0, "50 Hz cap"),
    ((), 200.0, 200.0, "unknown"),
])
def test_sampler_runs_at_the_chips_update_interval_capped(root, intervals_ms, cap_hz, rate_hz, why):
    set_update_interval(root, *intervals_ms)
    platform = make(root)
    try:
        sampler = PowerSampler(platform, rate_hz=cap_hz)
        assert sampler.rate_hz == pytest.approx(rate_hz) and sampler.period_s == pytest.approx(1 / rate_hz)
        assert why in sampler.rate_reason
    finally:
        platform.close()


def test_open_files_see_values_rewritten_in_place(root):
    reader = power.RailReader(power.find_rails(root))
    first, _ = reader.read()
    vin = next(c for c in reader.channels if c.label == "VIN_SYS_5V0")
    with open(vin.current_path, "r+b") as f:  # in place, as the kernel's attribute changes
        f.write(b"999    \n")
    rails, errors = reader.read()
    assert errors == ()
    assert {r.name: r.current_a for r in rails}["VIN_SYS_5V0"] == pytest.approx(0.999)
    assert {r.name: r.current_a for r in first}["VIN_SYS_5V0"] != pytest.approx(0.999)
    reader.close()


def test_rail_file_removed_mid_run_is_missing_typed_and_logged_once(root, caplog):
    platform = make(root)
    assert platform.sample_power().total_power_w is not None  # files open and read
    vin_current = next((root / DRIVER).glob("1-0040/hwmon/hwmon*/curr3_input"))
    saved = vin_current.read_text()
    vin_current.unlink()
    caplog.set_level(logging.WARNING, logger="edge_roofline.platforms.jetson.platform")
    samples = [platform.sample()] + [platform.sample_power() for _ in range(3)]  # sample() checks the paths
    for s in samples:
        assert "VIN_SYS_5V0" not in {r.name for r in s.rails} and "VDD_GPU_SOC" in {r.name for r in s.rails}
        assert s.total_power_w is None and "total-power rails missing: VIN_SYS_5V0" in s.source
        assert "No such file" in s.missing_rails["VIN_SYS_5V0"]
    lines = [r.getMessage() for r in caplog.records]
    assert len(lines) == 1 and "power rail VIN_SYS_5V0 missing" in lines[0] and str(vin_current) in lines[0]
    _, errors = platform._rails.read()
    assert isinstance(errors[0], power.RailReadError) and errors[0].rail == "VIN_SYS_5V0"

    write(vin_current, saved)  # the driver is back
    back = platform.sample_power()
    assert back.total_power_w is not None and back.missing_rails == {}
    assert "VIN_SYS_5V0 reads again" in caplog.records[-1].getMessage()
    platform.close()


def test_a_total_rail_no_channel_is_labelled_reaches_diagnostics_with_the_fix(root, caplog):
    """A board whose monitors do not carry a rail the catalogue sums (another carrier, a misidentified
    board): before, no log line and /diagnostics said 'this platform measures no power'."""
    label = next(f for f in (root / DRIVER).glob("*/hwmon/hwmon*/in*_label") if f.read_text() == "VIN_SYS_5V0\n")
    write(label, "VIN_SYS_5V0_X\n")
    caplog.set_level(logging.WARNING, logger="edge_roofline.platforms.jetson.platform")
    platform = make(root)
    try:
        sampler = PowerSampler(platform, rate_hz=100)
        for _ in range(3):
            sampler.sample_once()
        window = sampler.take_window()
    finally:
        platform.close()
    statuses = {s.name.split(": ")[1]: s for s in diagnostics.evaluate(window, diagnostics.Thresholds(), "test")}
    rails = statuses["power rails"]
    assert rails.level == diagnostics.ERROR and rails.message == "missing: VIN_SYS_5V0"  # the total is lost
    why = rails.values["VIN_SYS_5V0"]
    assert "no power monitor channel is labelled VIN_SYS_5V0" in why and "VIN_SYS_5V0_X" in why
    assert "set the platform to jetson:DEVICE" in why and "ls /sys/bus/i2c/drivers/ina3221" in why
    assert statuses["power"].level == diagnostics.WARN and statuses["power"].message.endswith("no module power")
    lines = [r.getMessage() for r in caplog.records]
    assert lines == [f"power rail VIN_SYS_5V0 missing: {why}"]  # once, though sampled three times


def test_a_value_that_is_no_number_is_a_typed_error(root):
    reader = power.RailReader(power.find_rails(root))
    gpu = next(c for c in reader.channels if c.label == "VDD_GPU_SOC")
    write(gpu.voltage_path, "garbage\n")
    rails, errors = reader.read()
    assert [e.rail for e in errors] == ["VDD_GPU_SOC"] and "not a number" in str(errors[0])
    assert len(rails) == 3
    reader.close()


def test_a_value_no_chip_can_produce_is_no_reading(root):
    """A rail file reading -99999999 mA once made the module read -500 kW. A current past the
    INA3221's full scale over the channel's shunt (163.8 mV over 2 mOhm: 81.9 A), a bus voltage
    below 0 or past 32.76 V, leave the rail out of the sample with the range it broke; a value
    at the range's edge is still a reading."""
    for hwmon in hwmon_dirs(root):
        for k in (1, 2, 3):
            write(hwmon / f"shunt{k}_resistor", "2000\n")  # uOhm, as the driver shows it
    reader = power.RailReader(power.find_rails(root))
    vin = next(c for c in reader.channels if c.label == "VIN_SYS_5V0")
    gpu = next(c for c in reader.channels if c.label == "VDD_GPU_SOC")
    assert vin.current_max_ma == pytest.approx(81_900)
    write(vin.current_path, "-99999999\n")
    write(gpu.voltage_path, "40000\n")
    rails, errors = reader.read()
    assert {e.rail for e in errors} == {"VIN_SYS_5V0", "VDD_GPU_SOC"} and len(rails) == 2
    why = {e.rail: str(e) for e in errors}
    assert "outside the chip's range -81900..81900 mA" in why["VIN_SYS_5V0"]
    assert "read -99999999 mA" in why["VIN_SYS_5V0"]
    assert "outside the chip's range 0..32760 mV" in why["VDD_GPU_SOC"]
    assert power.total_power_w(rails, ("VIN_SYS_5V0",))[0] is None  # no module power, not -500 kW
    write(vin.current_path, "81900\n")
    write(gpu.voltage_path, "-8\n")
    rails, errors = reader.read()
    assert [e.rail for e in errors] == ["VDD_GPU_SOC"] and "VIN_SYS_5V0" in {r.name for r in rails}
    reader.close()
