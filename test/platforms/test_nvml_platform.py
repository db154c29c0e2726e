"""NvmlPlatform against a fake pynvml module."""

from __future__ import annotations

import sys
import types

import pytest

from edge_roofline.platforms.base import OperatingPointError, PlatformInitError
from edge_roofline.platforms.nvml import NvmlPlatform


class FakeError(Exception):
    pass


def fake_pynvml(fail_init=False):
    state = {"limit_mw": 250_000}
    m = types.SimpleNamespace(NVMLError=FakeError, NVML_CLOCK_GRAPHICS=0, NVML_CLOCK_MEM=2,
                              NVML_TEMPERATURE_GPU=0, state=state)
    def init():
        if fail_init:
            raise FakeError("NVML Shared Library Not Found")
    m.nvmlInit = init
    m.nvmlDeviceGetHandleByIndex = lambda i: "h0"
    m.nvmlDeviceGetName = lambda h: b"NVIDIA H200"
    m.nvmlDeviceGetPowerManagementLimit = lambda h: state["limit_mw"]
    m.nvmlDeviceGetPowerManagementLimitConstraints = lambda h: (100_000, 400_000)
    m.nvmlDeviceSetPowerManagementLimit = lambda h, mw: state.update(limit_mw=mw)
    m.nvmlDeviceGetSupportedMemoryClocks = lambda h: [1593]
    def graphics(h, mem):
        raise FakeError("Not Supported")
    m.nvmlDeviceGetSupportedGraphicsClocks = graphics
    m.nvmlDeviceGetPowerUsage = lambda h: 123_456
    m.nvmlDeviceGetUtilizationRates = lambda h: types.SimpleNamespace(gpu=40, memory=10)
    m.nvmlDeviceGetClockInfo = lambda h, kind: 1980 if kind == 0 else 1593
    m.nvmlDeviceGetTemperature = graphics
    m.nvmlDeviceGetTotalEnergyConsumption = lambda h: 5_000_000
    return m


def test_sample_points_apply_restore(monkeypatch):
    fake = fake_pynvml()
    monkeypatch.setitem(sys.modules, "pynvml", fake)
    plat = NvmlPlatform(0)
    s = plat.sample()
    assert s.total_power_w == pytest.approx(123.456) and s.gpu_freq_hz == 1980e6
    assert s.temperatures_c == {} and plat.total_energy_j() == 5000.0
    points = plat.operating_points()
    assert [p.power_limit_w for p in points[1:]] == [100.0, 200.0, 300.0, 400.0]
    plat.apply(points[1])
    assert fake.state["limit_mw"] == 100_000
    with pytest.raises(OperatingPointError):
        plat.apply(points[1].with_caps(power_limit_w=999.0))
    plat.restore()
    assert fake.state["limit_mw"] == 250_000


def test_no_nvml(monkeypatch):
    monkeypatch.setitem(sys.modules, "pynvml", fake_pynvml(fail_init=True))
    with pytest.raises(PlatformInitError, match="nvidia-ml-py"):
        NvmlPlatform(0)
