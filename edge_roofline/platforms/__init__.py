"""Turn a platform spec string (a node parameter or CLI flag) into a Platform.

Specs: ``jetson`` (sysfs + nvpmodel at ``sysfs_root``), ``nvml`` (NVIDIA discrete GPU), ``cpu``
(no power sensor), ``auto`` (the first of those that works), and ``virtual:DEVICE`` (a virtual
Jetson). A virtual Jetson shared between processes is a live tree (``edge-roofline
virtual-jetson --root DIR``) read through the *real* Jetson backend; its samples and identity
are relabelled as simulation so no output can pass for a real measurement.
"""

from __future__ import annotations

from pathlib import Path

from edge_roofline import load_implementation
from edge_roofline.platforms.base import Platform, PlatformError, PlatformInitError, PlatformUnavailableError
from edge_roofline.platforms.simulation import SimulationLabelled


def virtual_nvpmodel_cmd(root: str | Path) -> tuple[str, ...]:
    """The emulated nvpmodel a live virtual Jetson installs in its tree."""
    return (str(Path(root) / "usr" / "bin" / "nvpmodel"),)


def _live_board_client(root: Path):
    from edge_roofline.virtual.live import LiveBoardClient
    return LiveBoardClient(root)


def _import(module: str, name: str):
    # A platform missing from this install is a platform that can't start.
    return load_implementation(module, name, PlatformUnavailableError)


# How long a node waits for a live virtual Jetson started beside it to render its tree.
LIVE_BOARD_WAIT_S = 60.0


def create_platform(spec: str, *, sysfs_root: str = "/", nvpmodel_cmd: str = "nvpmodel",
                    live_board_wait_s: float = LIVE_BOARD_WAIT_S) -> Platform:
    kind, _, arg = spec.partition(":")
    if kind == "jetson":
        from edge_roofline.virtual.live import RUN_DIR, live_board_device
        if (Path(sysfs_root) / RUN_DIR / "physics.json").exists():  # its readings would pass for a real board's
            raise PlatformInitError(f"{sysfs_root} is a virtual Jetson's tree (SIMULATION): use "
                                    f"virtual:{live_board_device(sysfs_root)} for it, not jetson")
        jetson = _import("edge_roofline.platforms.jetson.platform", "JetsonPlatform")
        return jetson(root=sysfs_root, nvpmodel_cmd=(nvpmodel_cmd,), device_key=arg or None)
    if kind == "nvml":
        return _import("edge_roofline.platforms.nvml", "NvmlPlatform")(index=int(arg or 0))
    if kind == "cpu":
        from edge_roofline.platforms.cpu import CpuPlatform
        return CpuPlatform(root=sysfs_root)
    if kind == "virtual":
        from edge_roofline.virtual.params import CALIBRATION
        if arg not in CALIBRATION:  # else a wait of a minute for a board no virtual Jetson can render
            raise PlatformInitError(f"virtual platform needs a device the virtual Jetson knows: virtual:DEVICE, "
                                    f"DEVICE one of {', '.join(sorted(CALIBRATION))}; got {spec!r}")
        if sysfs_root in ("", "/"):
            raise PlatformInitError(
                f"virtual:{arg} needs the root of a live virtual Jetson: start one with "
                f"`edge-roofline virtual-jetson --device {arg} --root DIR` and set sysfs_root to DIR "
                f"(`edge-roofline up` does both)")
        from edge_roofline.virtual.live import live_board_device, wait_for_live_board
        if not wait_for_live_board(sysfs_root, live_board_wait_s):
            raise PlatformInitError(
                f"no live virtual Jetson at {sysfs_root} after waiting {live_board_wait_s:.0f} s: start one with "
                f"`edge-roofline virtual-jetson --device {arg} --root {sysfs_root}` (`edge-roofline up` and the "
                f"launch file start it for you)")
        rendered = live_board_device(sysfs_root)
        if rendered != arg:  # else one board's rails and clocks read as another's, in silence
            raise PlatformInitError(f"the live virtual Jetson at {sysfs_root} is {rendered}, not {arg}: set "
                                    f"virtual:{rendered}, or start a {arg} under another root (edge-roofline "
                                    f"virtual-jetson --device {arg} --root DIR)")
        jetson = _import("edge_roofline.platforms.jetson.platform", "JetsonPlatform")
        inner = jetson(root=sysfs_root, nvpmodel_cmd=virtual_nvpmodel_cmd(sysfs_root), device_key=arg)
        return SimulationLabelled(inner, arg, sysfs_root, _live_board_client)
    if kind == "auto":
        problems = []
        for candidate in ("jetson", "nvml", "cpu"):
            try:
                return create_platform(candidate, sysfs_root=sysfs_root, nvpmodel_cmd=nvpmodel_cmd)
            except PlatformError as exc:
                problems.append(f"{candidate}: {exc}")
        raise PlatformInitError("no platform works here: " + "; ".join(problems))
    raise PlatformUnavailableError(f"unknown platform {spec!r}; use auto, jetson, nvml, cpu or virtual:DEVICE")


def create_platform_or_degraded(spec: str, **kwargs) -> tuple[Platform, str]:
    """Like create_platform, but a platform that cannot start degrades to the CPU backend (no
    power) with the reason returned, so a node keeps running and reports the problem."""
    try:
        return create_platform(spec, **kwargs), ""
    except PlatformError as exc:
        from edge_roofline.platforms.cpu import CpuPlatform
        return CpuPlatform(root=kwargs.get("sysfs_root", "/")), (
            f"platform {spec!r} unavailable ({exc}); running degraded on the CPU backend (no power readings)")
