"""NVML platform (discrete NVIDIA GPUs): board power, the total-energy counter, clocks and
temperature from pynvml; operating points are the supported power limits and application
clocks. Changing them needs root (or `nvidia-smi -acp UNRESTRICTED`).

NVML also answers on Jetson AGX Thor (the unified nvidia.ko) and on Orin, but only in part: the
name and utilisation answer on Thor, memory and temperature often return NOT_SUPPORTED, clocks
may be missing, power is UNVERIFIED on Thor and NOT_SUPPORTED on Orin (docs/jetson-facts.md).
Every reading here is therefore optional: one that returns NOT_SUPPORTED is None in the sample,
the sample's source names what NVML did not give, and a device without a settable power limit
has no power-limit points. On a Jetson the ``jetson`` platform (INA rails, devfreq) is the one
to use; it takes only the GPU utilisation from NVML, where Thor's devfreq has no load file
(``NvmlUtilisation``).
"""

from __future__ import annotations

import importlib
import logging

from edge_roofline.clock import Clock
from edge_roofline.platforms.base import (ApplyError, DeviceIdentity, OperatingPoint, OperatingPointError,
                                          Platform, PlatformInitError, TelemetrySample)

log = logging.getLogger(__name__)
SOURCE = "nvml"
_JETSON_HINT = "; on a Jetson use the jetson platform, which reads the INA power monitors"
_MHZ = 1e6
POWER_LIMIT_STEPS = 4


def _load_pynvml():
    try:
        nvml = importlib.import_module("pynvml")
        nvml.nvmlInit()
    except Exception as exc:  # ImportError, NVMLError_LibraryNotFound, NVMLError_DriverNotLoaded, ...
        raise PlatformInitError(f"NVML unavailable ({exc}); install the NVIDIA driver and "
                                "`pip install nvidia-ml-py`, or use the CPU platform") from exc
    return nvml


class NvmlPlatform(Platform):
    def __init__(self, index: int = 0, clock: Clock | None = None) -> None:
        self.nvml = _load_pynvml()
        self.clock = clock or Clock()
        try:
            self.handle = self.nvml.nvmlDeviceGetHandleByIndex(index)
        except self.nvml.NVMLError as exc:
            raise PlatformInitError(f"no NVIDIA GPU at index {index}: {exc}") from exc
        name = self.nvml.nvmlDeviceGetName(self.handle)
        self.name = name.decode() if isinstance(name, bytes) else name
        try:
            self._found_limit_w: float | None = self.nvml.nvmlDeviceGetPowerManagementLimit(self.handle) / 1e3
        except self.nvml.NVMLError:  # NOT_SUPPORTED on Jetson: no power-limit points, nothing to restore
            self._found_limit_w = None
        self._point = OperatingPoint(name="found", power_limit_w=self._found_limit_w)
        self._unsupported: set[str] = set()  # readings that returned an NVML error (NOT_SUPPORTED...)

    def identity(self) -> DeviceIdentity:
        return DeviceIdentity(kind="nvml", model=self.name, catalogue_key=None)

    def operating_points(self) -> list[OperatingPoint]:
        points = [self._point]
        if self._found_limit_w is None:
            return points
        try:
            lo_mw, hi_mw = self.nvml.nvmlDeviceGetPowerManagementLimitConstraints(self.handle)
        except self.nvml.NVMLError:
            return points
        for i in range(POWER_LIMIT_STEPS):
            watts = (lo_mw + (hi_mw - lo_mw) * i / (POWER_LIMIT_STEPS - 1)) / 1e3
            points.append(OperatingPoint(name=f"limit{watts:.0f}W", power_limit_w=watts))
        try:
            mem_mhz = max(self.nvml.nvmlDeviceGetSupportedMemoryClocks(self.handle))
            for gpu_mhz in self.nvml.nvmlDeviceGetSupportedGraphicsClocks(self.handle, mem_mhz)[:POWER_LIMIT_STEPS]:
                points.append(OperatingPoint(name=f"app{gpu_mhz}MHz", gpu_max_freq_hz=gpu_mhz * _MHZ,
                                             emc_max_freq_hz=mem_mhz * _MHZ))
        except self.nvml.NVMLError:
            pass  # application clocks are not supported on every board
        return points

    def current_operating_point(self) -> OperatingPoint:
        return self._point

    def apply(self, point: OperatingPoint) -> None:
        if point not in self.operating_points():
            raise OperatingPointError(f"{point.name} is not a supported NVML operating point")
        try:
            if point.power_limit_w is not None:
                self.nvml.nvmlDeviceSetPowerManagementLimit(self.handle, int(point.power_limit_w * 1e3))
            if point.gpu_max_freq_hz is not None:
                self.nvml.nvmlDeviceSetApplicationsClocks(self.handle, int(point.emc_max_freq_hz / _MHZ),
                                                          int(point.gpu_max_freq_hz / _MHZ))
        except self.nvml.NVMLError as exc:
            raise ApplyError(f"NVML refused {point.name}: {exc} (needs root)") from exc
        self._point = point

    def sample(self) -> TelemetrySample:
        nvml, h = self.nvml, self.handle
        missing = []
        def read(what, fn, *args):
            try:
                return fn(h, *args)
            except nvml.NVMLError:
                missing.append(what)
                return None
        power_mw = read("power", nvml.nvmlDeviceGetPowerUsage)
        util = read("utilisation", nvml.nvmlDeviceGetUtilizationRates)
        gpu_mhz = read("clocks", nvml.nvmlDeviceGetClockInfo, nvml.NVML_CLOCK_GRAPHICS)
        mem_mhz = read("memory clock", nvml.nvmlDeviceGetClockInfo, nvml.NVML_CLOCK_MEM)
        temp_c = read("temperature", nvml.nvmlDeviceGetTemperature, nvml.NVML_TEMPERATURE_GPU)
        if set(missing) - self._unsupported:
            log.info("NVML on %s does not give: %s (NOT_SUPPORTED or failing); left out of its samples%s",
                     self.name, ", ".join(missing), _JETSON_HINT if "power" in missing else "")
            self._unsupported |= set(missing)
        return TelemetrySample(
            timestamp_s=self.clock.now_s(), rails=(),
            total_power_w=None if power_mw is None else power_mw / 1e3,
            gpu_freq_hz=None if gpu_mhz is None else gpu_mhz * _MHZ,
            emc_freq_hz=None if mem_mhz is None else mem_mhz * _MHZ,
            gpu_load_pct=None if util is None else float(util.gpu),
            emc_load_pct=None if util is None else float(util.memory),
            temperatures_c={} if temp_c is None else {"gpu": float(temp_c)},
            operating_point=self._point.name,
            source=SOURCE if "power" not in missing else f"{SOURCE} (power not supported by NVML here)")

    def total_energy_j(self) -> float | None:
        try:
            return self.nvml.nvmlDeviceGetTotalEnergyConsumption(self.handle) / 1e3
        except self.nvml.NVMLError:
            return None

    def restore(self) -> str:
        clocks = ", application clocks reset" if self._point.gpu_max_freq_hz is not None else ""
        if self._found_limit_w is None:
            return "nothing to restore (NVML offers no power limit here)"
        try:
            self.nvml.nvmlDeviceSetPowerManagementLimit(self.handle, int(self._found_limit_w * 1e3))
            if clocks:
                self.nvml.nvmlDeviceResetApplicationsClocks(self.handle)
        except self.nvml.NVMLError as exc:
            raise ApplyError(f"NVML restore failed: {exc}") from exc
        self._point = OperatingPoint(name="found", power_limit_w=self._found_limit_w)
        return f"restored the power limit as found ({self._found_limit_w:g} W){clocks}"


class NvmlUtilisation:
    """The GPU's utilisation (percent) from NVML, for a Jetson whose devfreq shows no load
    (Thor). ``read()`` is None where NVML is absent or answers NOT_SUPPORTED; after one such
    answer it stops asking and ``reason`` says why (logged once)."""

    def __init__(self, index: int = 0) -> None:
        self.reason: str | None = None
        try:
            self.nvml = _load_pynvml()
            self.handle = self.nvml.nvmlDeviceGetHandleByIndex(index)
        except Exception as exc:  # PlatformInitError, NVMLError: no NVML here
            self._give_up(f"NVML unavailable ({exc})")

    def _give_up(self, reason: str) -> None:
        self.reason = f"{reason}; GPU load unknown (no devfreq load file either)"
        log.info("%s", self.reason)

    def read(self) -> float | None:
        if self.reason is not None:
            return None
        try:
            return float(self.nvml.nvmlDeviceGetUtilizationRates(self.handle).gpu)
        except self.nvml.NVMLError as exc:  # NOT_SUPPORTED: do not ask again every sample
            self._give_up(f"NVML utilisation: {exc}")
            return None
