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


def thor_like_pynvml(utilisation=True):
    """NVML as it answers on Jetson AGX Thor (jetson-facts.md): name and utilisation, the rest
    NOT_SUPPORTED."""
    m = fake_pynvml()
    m.calls = {"util": 0}

    def not_supported(*args):
        raise FakeError("Not Supported")

    def util(h):
        m.calls["util"] += 1
        if not utilisation:
            raise FakeError("Not Supported")
        return types.SimpleNamespace(gpu=37, memory=0)

    m.nvmlDeviceGetName = lambda h: "NVIDIA Thor"
    for name in ("nvmlDeviceGetPowerManagementLimit", "nvmlDeviceGetPowerManagementLimitConstraints",
                 "nvmlDeviceGetPowerUsage", "nvmlDeviceGetClockInfo", "nvmlDeviceGetTemperature",
                 "nvmlDeviceGetTotalEnergyConsumption"):
        setattr(m, name, not_supported)
    m.nvmlDeviceGetUtilizationRates = util
    return m


def test_not_supported_readings_are_absent_not_fatal(monkeypatch, caplog):
    monkeypatch.setitem(sys.modules, "pynvml", thor_like_pynvml())
    caplog.set_level("INFO", logger="edge_roofline.platforms.nvml")
    plat = NvmlPlatform(0)
    assert plat.identity().model == "NVIDIA Thor"
    assert [p.name for p in plat.operating_points()] == ["found"]  # no power limit to set
    s = plat.sample()
    assert s.total_power_w is None and s.gpu_load_pct == 37.0 and s.gpu_freq_hz is None
    assert s.source == "nvml (power not supported by NVML here)" and plat.total_energy_j() is None
    assert "jetson platform" in caplog.text and plat.sample().gpu_load_pct == 37.0
    assert plat.restore().startswith("nothing to restore")


def test_nvml_utilisation_fallback_stops_asking_after_not_supported(monkeypatch):
    from edge_roofline.platforms.nvml import NvmlUtilisation
    monkeypatch.setitem(sys.modules, "pynvml", thor_like_pynvml())
    assert NvmlUtilisation().read() == 37.0
    orin = thor_like_pynvml(utilisation=False)
    monkeypatch.setitem(sys.modules, "pynvml", orin)
    util = NvmlUtilisation()
    assert util.read() is None and util.read() is None and orin.calls["util"] == 1
    assert "GPU load unknown" in util.reason
    monkeypatch.setitem(sys.modules, "pynvml", fake_pynvml(fail_init=True))
    assert NvmlUtilisation().read() is None
