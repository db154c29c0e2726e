"""The device as this board shows it: the catalogue entry (roofline/devices.py) with the power
modes of the nvpmodel.conf in force and the clock tables of the board's own cpufreq and devfreq
files put in place of the catalogue's wherever the board shows them.

Why: the catalogue holds facts some of which no source confirmed (``DeviceSpec.unverified``:
Thor's clock tables, its 120W caps, JetPack 7.2's modes 2-3, ...), and a board flashed with
another conf (JetPack 6.2's Super modes, a custom mode) differs from the catalogue anyway. What
the board shows wins; a fact kept from the catalogue keeps its UNVERIFIED mark, so callers can
refuse to act on it (the Jetson backend switches no nvpmodel mode whose power-gating mask it
could only guess).
"""

from __future__ import annotations

from dataclasses import dataclass, replace
from pathlib import Path

from edge_roofline.platforms.jetson import cpu, emc, gpu, nvpmodel
from edge_roofline.platforms.jetson.files import under
from edge_roofline.roofline.devices import DeviceSpec

NVPMODEL_CONF = "/etc/nvpmodel.conf"


@dataclass(frozen=True)
class BoardFacts:
    device: DeviceSpec  # the catalogue entry with what the board showed in place
    from_board: tuple[str, ...]  # e.g. "power modes (/etc/nvpmodel.conf)"
    from_catalogue: tuple[str, ...]  # what the board did not show, kept from the catalogue

    def summary(self) -> str:
        kept = ", ".join(self.from_catalogue) or "nothing"
        return (f"from the board: {', '.join(self.from_board) or 'nothing'}; from the catalogue: {kept}"
                + (f" (UNVERIFIED there: {', '.join(self.device.unverified)})" if self.device.unverified else ""))


def read_conf_presets(root: str | Path, device: DeviceSpec):
    """(presets, default id, None) from the board's nvpmodel.conf, or (None, None, why not)."""
    path = under(root, NVPMODEL_CONF)
    try:
        conf = nvpmodel.read_conf(path)
    except OSError as exc:
        return None, None, f"{path} unreadable ({exc.strerror or exc})"
    except (ValueError, KeyError) as exc:
        return None, None, f"{path} malformed ({exc})"
    presets = nvpmodel.presets_from_conf(conf, device.cpu_cores)
    if not presets or conf.default_id not in {p.mode_id for p in presets}:
        return None, None, f"{path} has no power mode {conf.default_id} (its PM_CONFIG DEFAULT)"
    return presets, conf.default_id, None


def _drop_marks(device: DeviceSpec, fields: set[str]) -> tuple[str, ...]:
    return tuple(u for u in device.unverified if u.split("[", 1)[0] not in fields)


def board_device(root: str | Path, catalogue: DeviceSpec, gpu_paths: gpu.GpuPaths | None) -> BoardFacts:
    """``catalogue`` with the board's modes and tables in place where the board shows them."""
    changes: dict = {}
    from_board, kept = [], []
    presets, default_id, why = read_conf_presets(root, catalogue)
    if presets is not None:
        changes.update(presets=presets, default_mode_id=default_id)
        from_board.append(f"power modes ({NVPMODEL_CONF})")
    else:
        kept.append(f"power modes ({why})")
    cores = cpu.list_cores(root)
    tables = {
        "cpu_freqs_hz": cpu.read_core(root, cores[0]).available_freqs_hz if cores else (),
        "gpu_freqs_hz": gpu.read_gpu(gpu_paths).available_freqs_hz if gpu_paths else (),
        "emc_freqs_hz": emc.read_emc(root).available_hz,
    }
    for name, table in tables.items():
        label = name.removesuffix("_freqs_hz").upper() + " clock table"
        if table:
            changes[name] = tuple(sorted(table))
            from_board.append(label)
        else:
            kept.append(label)
    shown = {name for name in changes if name != "default_mode_id"}
    device = replace(catalogue, **changes, unverified=_drop_marks(catalogue, shown))
    return BoardFacts(device, tuple(from_board), tuple(kept))
