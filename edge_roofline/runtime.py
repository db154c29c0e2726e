"""Turn a platform spec string (a node parameter or CLI flag) into a Platform.

Specs: ``jetson`` (sysfs + nvpmodel at ``sysfs_root``), ``nvml`` (NVIDIA discrete GPU), ``cpu``
(no power sensor), ``auto`` (the first of those that works), and ``virtual:DEVICE`` (a virtual
Jetson). A virtual Jetson shared between processes is a live tree (``edge-roofline
virtual-jetson --root DIR``) read through the *real* Jetson backend; its samples and identity
are relabelled as simulation so no output can pass for a real measurement.
"""

from __future__ import annotations

from dataclasses import replace
from pathlib import Path

from edge_roofline.platforms.base import (SIMULATION_SOURCE, DeviceIdentity, OperatingPoint, Platform,
                                          PlatformError, PlatformInitError, TelemetrySample)


class SimulationLabelled(Platform):
    """A platform reading a virtual Jetson's tree: everything it reports is marked simulated."""

    def __init__(self, inner: Platform, device_key: str, root: str | Path) -> None:
        self.inner = inner
        self.device_key = device_key
        self.root = Path(root)
        self._board = None

    @property
    def board(self):
        """The live board's client, for the virtual backend (times inferences with its physics)."""
        if self._board is None:
            from edge_roofline.virtual.live import LiveBoardClient
            self._board = LiveBoardClient(self.root)
        return self._board

    def identity(self) -> DeviceIdentity:
        ident = self.inner.identity()
        model = ident.model if "virtual" in ident.model.lower() else f"virtual {ident.model}"
        return replace(ident, kind="virtual", model=model, simulated=True)

    def operating_points(self) -> list[OperatingPoint]:
        return self.inner.operating_points()

    def current_operating_point(self) -> OperatingPoint:
        return self.inner.current_operating_point()

    def apply(self, point: OperatingPoint) -> None:
        self.inner.apply(point)

    @staticmethod
    def _label(sample: TelemetrySample) -> TelemetrySample:
        return replace(sample, simulated=True, source=f"{SIMULATION_SOURCE} via {sample.source}")

    def sample(self) -> TelemetrySample:
        return self._label(self.inner.sample())

    def sample_power(self) -> TelemetrySample:
        return self._label(self.inner.sample_power())

    def restore(self) -> str:
        return self.inner.restore()

    def found_record(self) -> dict | None:
        return self.inner.found_record()

    def restore_record(self, record: dict) -> str:
        return self.inner.restore_record(record)

    def close(self) -> None:
        if self._board is not None:
            self._board.close()
        self.inner.close()


def virtual_nvpmodel_cmd(root: str | Path) -> tuple[str, ...]:
    """The emulated nvpmodel a live virtual Jetson installs in its tree."""
    return (str(Path(root) / "usr" / "bin" / "nvpmodel"),)


def _import(module: str, name: str):
    import importlib
    try:
        return getattr(importlib.import_module(module), name)
    except ImportError as exc:  # a backend missing from this install is a platform that can't start
        raise PlatformInitError(f"{name} is not available in this install ({exc})") from exc


def create_platform(spec: str, *, sysfs_root: str = "/", nvpmodel_cmd: str = "nvpmodel") -> Platform:
    kind, _, arg = spec.partition(":")
    if kind == "jetson":
        jetson = _import("edge_roofline.platforms.jetson.platform", "JetsonPlatform")
        return jetson(root=sysfs_root, nvpmodel_cmd=(nvpmodel_cmd,), device_key=arg or None)
    if kind == "nvml":
        return _import("edge_roofline.platforms.nvml", "NvmlPlatform")(index=int(arg or 0))
    if kind == "cpu":
        from edge_roofline.platforms.cpu import CpuPlatform
        return CpuPlatform(root=sysfs_root)
    if kind == "virtual":
        if not arg:
            raise PlatformInitError("virtual platform needs a device: virtual:agx_orin_64gb "
                                    "(see `edge-roofline virtual-jetson --help` for the list)")
        if sysfs_root in ("", "/"):
            raise PlatformInitError(
                f"virtual:{arg} needs the root of a live virtual Jetson: start one with "
                f"`edge-roofline virtual-jetson --device {arg} --root DIR` and set sysfs_root to DIR "
                f"(`edge-roofline up` does both)")
        jetson = _import("edge_roofline.platforms.jetson.platform", "JetsonPlatform")
        inner = jetson(root=sysfs_root, nvpmodel_cmd=virtual_nvpmodel_cmd(sysfs_root), device_key=arg)
        return SimulationLabelled(inner, arg, sysfs_root)
    if kind == "auto":
        problems = []
        for candidate in ("jetson", "nvml", "cpu"):
            try:
                return create_platform(candidate, sysfs_root=sysfs_root, nvpmodel_cmd=nvpmodel_cmd)
            except PlatformError as exc:
                problems.append(f"{candidate}: {exc}")
        raise PlatformInitError("no platform works here: " + "; ".join(problems))
    raise PlatformInitError(f"unknown platform {spec!r}; use auto, jetson, nvml, cpu or virtual:DEVICE")


def create_platform_or_degraded(spec: str, **kwargs) -> tuple[Platform, str]:
    """Like create_platform, but a platform that cannot start degrades to the CPU backend (no
    power) with the reason returned, so a node keeps running and reports the problem."""
    try:
        return create_platform(spec, **kwargs), ""
    except PlatformError as exc:
        from edge_roofline.platforms.cpu import CpuPlatform
        return CpuPlatform(root=kwargs.get("sysfs_root", "/")), (
            f"platform {spec!r} unavailable ({exc}); running degraded on the CPU backend (no power readings)")
