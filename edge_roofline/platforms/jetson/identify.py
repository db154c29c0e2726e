"""Which Jetson is this? From ``/proc/device-tree/compatible`` (NUL-separated, most specific
first, e.g. ``nvidia,p3737-0000+p3701-0005``, ``nvidia,p3701-0005``, ``nvidia,tegra234``) and
``/proc/device-tree/model``. The module part number (pXXXX-YYYY) picks the catalogue key; the
model string is the fallback when the part number is unknown.
"""

from __future__ import annotations

import re
from dataclasses import dataclass
from pathlib import Path

from edge_roofline.platforms.base import PlatformInitError
from edge_roofline.platforms.jetson.files import under


@dataclass(frozen=True)
class BoardId:
    """How a module shows itself in the device tree (also used to render virtual trees)."""

    module: str  # part number, e.g. p3701-0005
    carrier: str  # developer-kit carrier board, e.g. p3737-0000
    soc: str  # e.g. tegra234
    model: str  # /proc/device-tree/model


# Part numbers as listed by NVIDIA and jetson-stats (jtop/core/jetson_variables.py).
BOARDS: dict[str, BoardId] = {
    "agx_orin_64gb": BoardId("p3701-0005", "p3737-0000", "tegra234", "NVIDIA Jetson AGX Orin Developer Kit"),
    "agx_orin_32gb": BoardId("p3701-0004", "p3737-0000", "tegra234", "NVIDIA Jetson AGX Orin"),
    "orin_nx_16gb": BoardId("p3767-0000", "p3768-0000", "tegra234",
                            "NVIDIA Jetson Orin NX Engineering Reference Developer Kit"),
    "orin_nx_8gb": BoardId("p3767-0001", "p3768-0000", "tegra234",
                           "NVIDIA Jetson Orin NX Engineering Reference Developer Kit"),
    "orin_nano_8gb": BoardId("p3767-0005", "p3768-0000", "tegra234", "NVIDIA Jetson Orin Nano Developer Kit"),
    "orin_nano_4gb": BoardId("p3767-0004", "p3768-0000", "tegra234", "NVIDIA Jetson Orin Nano"),
    "agx_xavier": BoardId("p2888-0001", "p2822-0000", "tegra194", "Jetson-AGX"),
    "xavier_nx": BoardId("p3668-0001", "p3509-0000", "tegra194", "NVIDIA Jetson Xavier NX Developer Kit"),
    "nano": BoardId("p3448-0000", "p3449-0000", "tegra210", "NVIDIA Jetson Nano Developer Kit"),
}
# Other part numbers of the same catalogue entries.
_EXTRA_MODULES = {
    "p3701-0000": "agx_orin_64gb",  # first AGX Orin developer-kit module
    "p3767-0003": "orin_nano_8gb",
    "p3668-0000": "xavier_nx", "p3668-0003": "xavier_nx",
    "p2888-0004": "agx_xavier", "p2888-0005": "agx_xavier", "p2888-0006": "agx_xavier",
    "p3448-0002": "nano", "p3448-0003": "nano",
}
_MODEL_HINTS = (("agx orin", "agx_orin_64gb"), ("orin nx", "orin_nx_16gb"),
                ("orin nano", "orin_nano_8gb"), ("xavier nx", "xavier_nx"),
                ("agx xavier", "agx_xavier"), ("jetson-agx", "agx_xavier"), ("jetson nano", "nano"))
_PART_RE = re.compile(r"p\d{4}-\d{4}")


@dataclass(frozen=True)
class Identification:
    catalogue_key: str
    model: str
    compatible: tuple[str, ...]


def compatible_strings(board: BoardId) -> tuple[str, ...]:
    return (f"nvidia,{board.carrier}+{board.module}", f"nvidia,{board.module}", f"nvidia,{board.soc}")


def _read_dt(root: str | Path, name: str) -> bytes | None:
    try:
        return under(root, f"/proc/device-tree/{name}").read_bytes()
    except OSError:
        return None


def identify(root: str | Path = "/") -> Identification:
    """Raise PlatformInitError with the reason when the tree is not a (known) Jetson."""
    raw_compatible = _read_dt(root, "compatible")
    raw_model = _read_dt(root, "model")
    if raw_compatible is None and raw_model is None:
        raise PlatformInitError(
            f"not a Jetson: no {under(root, '/proc/device-tree')}/compatible or model; "
            "use the NVML or CPU platform on this machine (a node's -p platform:=nvml or -p platform:=cpu)")
    compatible = tuple(s for s in (raw_compatible or b"").decode(errors="replace").split("\x00") if s)
    model = (raw_model or b"").decode(errors="replace").rstrip("\x00").strip()
    if not any(s.startswith("nvidia,tegra") for s in compatible):
        raise PlatformInitError(
            f"not a Jetson: device tree says model {model!r}, compatible {list(compatible)} "
            "(no nvidia,tegra SoC); use the NVML or CPU platform on this machine")
    modules = {**{b.module: key for key, b in BOARDS.items()}, **_EXTRA_MODULES}
    for entry in compatible:
        for part in _PART_RE.findall(entry):
            if part in modules:
                return Identification(modules[part], model, compatible)
    for hint, key in _MODEL_HINTS:
        if hint in model.lower():
            return Identification(key, model, compatible)
    raise PlatformInitError(
        f"unknown Jetson: model {model!r}, compatible {list(compatible)}; pass device_key= "
        "with a catalogue key (see edge_roofline.roofline.devices.CATALOGUE)")
