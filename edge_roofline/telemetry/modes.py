"""nvpmodel preset queries and switches for the power monitor's services: which presets exist,
which are reachable without a reboot, and a switch that refuses reboot-requiring changes."""

from __future__ import annotations

from dataclasses import dataclass

from edge_roofline.platforms.base import (ApplyError, OperatingPoint, OperatingPointError, Platform,
                                          RebootRequiredError)


@dataclass(frozen=True)
class ModeInfo:
    mode_id: int
    name: str
    reachable_without_reboot: bool


def list_modes(platform: Platform) -> list[ModeInfo]:
    """The modes the board has (its nvpmodel.conf where the platform read one, e.g. JetPack 7.2's
    Thor modes), each marked reachable without a reboot or not."""
    device = platform.device_spec()
    presets = device.presets if device else ()
    reachable = {p.nvpmodel_id for p in platform.operating_points() if not p.has_caps}
    return [ModeInfo(p.mode_id, p.name, p.mode_id in reachable) for p in presets]


def set_mode(platform: Platform, mode: str) -> tuple[bool, str]:
    """Switch to a preset given by name or id. Returns (success, message)."""
    modes = list_modes(platform)
    wanted = mode.strip()
    match = next((m for m in modes if m.name == wanted or str(m.mode_id) == wanted), None)
    if match is None:
        known = ", ".join(f"{m.mode_id} {m.name}" for m in modes) or "none (not an nvpmodel device)"
        return False, f"unknown power mode {mode!r}; available: {known}"
    if not match.reachable_without_reboot:
        return False, (f"power mode {match.name} ({match.mode_id}) needs a reboot from the current mode "
                       f"(TPC power gating changes); refused. Switch it yourself with "
                       f"'sudo nvpmodel -m {match.mode_id}' and reboot if you really want it.")
    try:
        platform.apply(OperatingPoint(name=match.name, nvpmodel_id=match.mode_id))
    except RebootRequiredError as exc:
        return False, f"refused, a reboot would be needed: {exc}"
    except (OperatingPointError, ApplyError) as exc:
        return False, f"switching to {match.name} failed: {exc}"
    return True, f"power mode now {match.name} ({match.mode_id})"
