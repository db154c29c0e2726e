"""Which Jetson is this, on which software? From ``/proc/device-tree/compatible``
(NUL-separated, most specific first, e.g. ``nvidia,p3737-0000+p3701-0005``, ``nvidia,p3701-0005``,
``nvidia,tegra234``), ``/proc/device-tree/model``, ``/etc/nv_tegra_release`` (the L4T release:
R36 = JetPack 6, R38 = JetPack 7.0/7.1, R39 = JetPack 7.2), the GPU's devfreq name and the
nvpmodel.conf in force. The module part number (pXXXX-YYYY) picks the catalogue key (the model
string is the fallback); a conf with MAXN_SUPER picks the module's Super variant.

What tells the boards apart (docs/jetson-facts.md, "Thor and JetPack 7"):

- Thor: SoC ``nvidia,tegra264``, L4T R38+, GPU devfreq ``gpu-gpc-0`` (the GPU is PCI device
  ``0000:01:00.0`` under the unified nvidia.ko);
- Orin on JetPack 6: ``nvidia,tegra234``, R36, devfreq ``17000000.gpu`` (nvgpu);
- Orin on JetPack 7.2: ``nvidia,tegra234``, R39, and still ``17000000.gpu``.

A combination no release ships (Orin on R38, Thor without ``gpu-gpc-0``) is identified from the
device tree anyway and named in ``Identification.notes``.
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
    # Thor: jetson-facts.md (compatible nvidia,p4071-0000+p3834-0008); T4000's part: UNVERIFIED.
    "agx_thor_t5000": BoardId("p3834-0008", "p4071-0000", "tegra264", "NVIDIA Jetson AGX Thor Developer Kit"),
    "agx_thor_t4000": BoardId("p3834-0000", "p4071-0000", "tegra264", "NVIDIA Jetson T4000"),
}
# JetPack 6.2's Super power modes: the same module with another nvpmodel conf.
SUPER_VARIANTS = {"orin_nx_16gb": "orin_nx_16gb_super", "orin_nx_8gb": "orin_nx_8gb_super",
                  "orin_nano_4gb": "orin_nano_4gb_super"}
BOARDS.update({super_key: BOARDS[key] for key, super_key in SUPER_VARIANTS.items()})
# Other part numbers of the same catalogue entries.
_EXTRA_MODULES = {
    "p3701-0000": "agx_orin_64gb",  # first AGX Orin developer-kit module
    "p3767-0003": "orin_nano_8gb",
    "p3668-0000": "xavier_nx", "p3668-0003": "xavier_nx",
    "p2888-0004": "agx_xavier", "p2888-0005": "agx_xavier", "p2888-0006": "agx_xavier",
    "p3448-0002": "nano", "p3448-0003": "nano",
}
_MODEL_HINTS = (("thor", "agx_thor_t5000"), ("agx orin", "agx_orin_64gb"), ("orin nx", "orin_nx_16gb"),
                ("orin nano", "orin_nano_8gb"), ("xavier nx", "xavier_nx"),
                ("agx xavier", "agx_xavier"), ("jetson-agx", "agx_xavier"), ("jetson nano", "nano"))
_PART_RE = re.compile(r"p\d{4}-\d{4}")


NV_TEGRA_RELEASE = "/etc/nv_tegra_release"
THOR_GPU_DEVFREQ = "/sys/class/devfreq/gpu-gpc-0"
NVPMODEL_CONF = "/etc/nvpmodel.conf"
_RELEASE_RE = re.compile(r"R(\d+)\s*\(release\),\s*REVISION:\s*(\d+)(?:\.(\d+))?")
_SUPER_MODE_RE = re.compile(r"<\s*POWER_MODEL\b[^>]*NAME=MAXN_SUPER\b")


@dataclass(frozen=True)
class L4tRelease:
    major: int  # 36, 38, 39
    revision: str  # "4.3"

    @property
    def jetpack(self) -> str:
        """JetPack of this L4T release (JetPack 7.0 = R38.2, 7.1 = R38.4, 7.2 = R39)."""
        if self.major >= 39:
            return "7.2"
        if self.major == 38:
            return "7.0" if self.revision.startswith(("0", "1", "2")) else "7.1"
        return {36: "6", 35: "5.1", 34: "5.0", 32: "4"}.get(self.major, f"L4T R{self.major}")


@dataclass(frozen=True)
class Identification:
    catalogue_key: str
    model: str
    compatible: tuple[str, ...]
    release: L4tRelease | None = None  # None: no readable /etc/nv_tegra_release
    gpu_stack: str | None = None  # "nvidia.ko (PCI, gpu-gpc-0)" | "nvgpu (17000000.gpu)" | None
    notes: tuple[str, ...] = ()  # layouts no release ships, said once at start

    @property
    def software(self) -> str:
        """E.g. ``JetPack 7.1 (L4T R38.4), nvidia.ko (PCI, gpu-gpc-0)``."""
        parts = [f"JetPack {self.release.jetpack} (L4T R{self.release.major}.{self.release.revision})"
                 if self.release else "L4T release unknown"]
        return ", ".join(parts + ([self.gpu_stack] if self.gpu_stack else []))


def read_release(root: str | Path = "/") -> L4tRelease | None:
    """``# R38 (release), REVISION: 4.0, GCID: ...`` -> L4tRelease(38, "4.0")."""
    try:
        text = under(root, NV_TEGRA_RELEASE).read_text(errors="replace")
    except OSError:
        return None
    match = _RELEASE_RE.search(text)
    if not match:
        return None
    return L4tRelease(int(match.group(1)), f"{match.group(2)}.{match.group(3) or 0}")


def gpu_stack(root: str | Path = "/") -> str | None:
    """Thor's PCI GPU shows devfreq ``gpu-gpc-0``; Orin's nvgpu ``17000000.gpu`` (or ``.ga10b``)."""
    if under(root, THOR_GPU_DEVFREQ).exists():
        return "nvidia.ko (PCI, gpu-gpc-0)"
    devfreq = under(root, "/sys/class/devfreq")
    if any((devfreq / name).exists() for name in ("17000000.gpu", "17000000.ga10b", "17000000.gv11b")):
        return "nvgpu (17000000.gpu)"
    return None


def has_super_modes(root: str | Path = "/") -> bool:
    """The nvpmodel.conf in force defines MAXN_SUPER (JetPack 6.2 Super conf)."""
    try:
        return bool(_SUPER_MODE_RE.search(under(root, NVPMODEL_CONF).read_text(errors="replace")))
    except OSError:
        return False


def _layout_notes(key: str, soc: str | None, release: L4tRelease | None, stack: str | None) -> tuple[str, ...]:
    notes = []
    thor = soc == "tegra264" or key.startswith("agx_thor")
    if thor and stack and "gpu-gpc-0" not in stack:
        notes.append(f"a Thor without /sys/class/devfreq/gpu-gpc-0 (GPU stack: {stack})")
    if not thor and stack and "gpu-gpc-0" in stack:
        notes.append("an Orin-class module with Thor's GPU devfreq gpu-gpc-0")
    if release and thor and release.major < 38:
        notes.append(f"a Thor on L4T R{release.major} (Thor needs JetPack 7, R38+)")
    if release and not thor and release.major == 38:
        notes.append("an Orin on L4T R38 (JetPack 7.0/7.1 shipped for Thor only; 7.2 = R39 runs on Orin)")
    return tuple(f"unexpected layout: {n}; identified from the device tree" for n in notes)


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
    key = _catalogue_key(compatible, model)
    if key is None:
        raise PlatformInitError(
            f"unknown Jetson: model {model!r}, compatible {list(compatible)}; pass device_key= "
            "with a catalogue key (see edge_roofline.roofline.devices.CATALOGUE)")
    if key in SUPER_VARIANTS and has_super_modes(root):
        key = SUPER_VARIANTS[key]
    soc = next((s.split(",", 1)[1] for s in compatible if s.startswith("nvidia,tegra")), None)
    release, stack = read_release(root), gpu_stack(root)
    return Identification(key, model, compatible, release, stack, _layout_notes(key, soc, release, stack))


def _catalogue_key(compatible: tuple[str, ...], model: str) -> str | None:
    modules = {**{b.module: key for key, b in BOARDS.items() if key not in SUPER_VARIANTS.values()},
               **_EXTRA_MODULES}
    for entry in compatible:
        for part in _PART_RE.findall(entry):
            if part in modules:
                return modules[part]
    for hint, key in _MODEL_HINTS:
        if hint in model.lower():
            return key
    return None

