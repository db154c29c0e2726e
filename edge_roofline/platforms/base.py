"""One platform interface for every device kind: a real Jetson, an NVIDIA discrete GPU through
NVML, a plain CPU, and the virtual Jetson.

Units live in field names; frequencies are always Hz here (the sysfs layer converts cpufreq's
kHz). A platform never decides *which* operating point to use; the governor does.
"""

from __future__ import annotations

import abc
from dataclasses import dataclass, field, replace
from typing import TYPE_CHECKING

if TYPE_CHECKING:
    from edge_roofline.roofline.devices import DeviceSpec


# The source label of every sample a virtual Jetson produces, so none can pass for a measurement.
SIMULATION_SOURCE = "virtual (SIMULATION)"


class PlatformError(RuntimeError):
    """Base class of platform errors; the message names the problem and the fix."""


class PlatformInitError(PlatformError):
    """The platform cannot be used on this machine (not a Jetson, no NVML, no sysfs...)."""


class PlatformUnavailableError(PlatformInitError):
    """The platform spec names no platform, or one this install cannot import."""


class OperatingPointError(PlatformError):
    """An operating point is invalid for this device (value not in the available table...)."""


class RebootRequiredError(OperatingPointError):
    """Reaching this point needs a reboot (e.g. a TPC power-gating change); never applied."""


class ApplyError(PlatformError):
    """Applying a valid operating point failed (nvpmodel error or timeout, sysfs write denied)."""


@dataclass(frozen=True)
class OperatingPoint:
    """Where the device runs: an nvpmodel preset plus optional caps inside its envelope.

    ``None`` for a cap means "the preset's own cap". ``power_limit_w`` is for NVML devices.
    """

    name: str
    nvpmodel_id: int | None = None
    cpu_online_cores: int | None = None
    cpu_max_freq_hz: float | None = None
    gpu_max_freq_hz: float | None = None
    emc_max_freq_hz: float | None = None
    power_limit_w: float | None = None

    def with_caps(self, **caps) -> "OperatingPoint":
        return replace(self, **caps)

    @property
    def has_caps(self) -> bool:
        """Custom caps or a power limit on top of the preset (else: the preset as it is)."""
        return any(v is not None for v in (self.cpu_online_cores, self.cpu_max_freq_hz, self.gpu_max_freq_hz,
                                           self.emc_max_freq_hz, self.power_limit_w))


@dataclass(frozen=True)
class RailSample:
    name: str
    voltage_v: float
    current_a: float
    power_w: float


@dataclass(frozen=True)
class TelemetrySample:
    """One reading of power, clocks, loads and temperatures."""

    timestamp_s: float
    rails: tuple[RailSample, ...]
    total_power_w: float | None  # None where the platform cannot measure power (CPU-only)
    cpu_freq_hz: tuple[float, ...] = ()  # per online core (or per cluster where that is all we see)
    gpu_freq_hz: float | None = None
    emc_freq_hz: float | None = None
    cpu_load_pct: float | None = None
    gpu_load_pct: float | None = None
    emc_load_pct: float | None = None
    temperatures_c: dict[str, float] = field(default_factory=dict)
    nvpmodel_mode: str = ""
    operating_point: str = ""
    source: str = ""  # e.g. "jetson-sysfs", "jtop", "nvml", "cpu", "virtual (SIMULATION)"
    simulated: bool = False
    missing_rails: dict[str, str] = field(default_factory=dict)  # rail -> why it did not read


@dataclass(frozen=True)
class DeviceIdentity:
    kind: str  # "jetson" | "nvml" | "cpu" | "virtual"
    model: str  # human name, e.g. "Jetson AGX Orin 64GB"
    catalogue_key: str | None  # key in roofline.devices.CATALOGUE, when known
    simulated: bool = False


class Platform(abc.ABC):
    """The interface the telemetry node, the governor and the sweep drive.

    Implementations remember the operating point found at construction and put it back in
    ``restore()``; callers must call ``restore()`` (or use the platform as a context manager).
    """

    @abc.abstractmethod
    def identity(self) -> DeviceIdentity: ...

    def device_spec(self) -> "DeviceSpec | None":
        """The device's facts as this platform has them: the catalogue entry of its identity
        (a Jetson backend puts the board's own modes and clock tables in place); None outside
        the catalogue."""
        from edge_roofline.roofline.devices import UnknownDeviceError, get_device
        key = self.identity().catalogue_key
        try:
            return get_device(key) if key else None
        except UnknownDeviceError:
            return None

    @abc.abstractmethod
    def operating_points(self) -> list[OperatingPoint]:
        """Points reachable at runtime (never those needing a reboot)."""

    @abc.abstractmethod
    def current_operating_point(self) -> OperatingPoint: ...

    @abc.abstractmethod
    def apply(self, point: OperatingPoint) -> None:
        """Validate and apply; raises OperatingPointError / RebootRequiredError / ApplyError."""

    @abc.abstractmethod
    def sample(self) -> TelemetrySample: ...

    def sample_power(self) -> TelemetrySample:
        """Rails and total power only, as cheaply as the platform can: the fast path of the
        power sampler (clocks, loads and temperatures come from ``sample()`` at a lower rate).
        Default: a full sample."""
        return self.sample()

    def power_update_interval_s(self) -> float | None:
        """How often the power sensor produces a new reading (a faster read returns the same
        value); None where unknown."""
        return None

    @abc.abstractmethod
    def restore(self) -> str:
        """Put back what was found at start; one line saying what ("restored ..."). Raises
        ApplyError naming what could not be put back, after putting back the rest."""

    def refind(self) -> None:
        """What is in force now becomes what ``restore()`` puts back (someone else chose it while a
        governor ran). Default: nothing (a platform that reports no outside change)."""

    def found_record(self) -> dict | None:
        """What ``restore()`` puts back, as JSON, for a crash record (None: the found point
        says it all; recovery then applies that point)."""
        return None

    def restore_record(self, record: dict) -> str:
        """Put back a ``found_record()`` saved by a process that may have crashed."""
        raise PlatformError(f"{type(self).__name__} cannot put back a crash record of kind {record.get('kind')!r}")

    def close(self) -> None:
        self.restore()

    def __enter__(self) -> "Platform":
        return self

    def __exit__(self, *exc) -> None:
        self.close()
