"""nvpmodel: query and switch power modes without ever answering its reboot prompt, and parse
its configuration file.

``-m N`` runs with stdin closed (EOF), so a mode that needs a reboot makes nvpmodel print its
prompt and fail with ``NVPM ERROR`` instead of rebooting; a TPC_PG_MASK change is refused here
before nvpmodel is even called. Every call has a timeout (4 s, as jetson-stats uses), because
``nvpmodel -q`` has been seen to hang under full load.
"""

from __future__ import annotations

import os
import re
import signal
import subprocess
from dataclasses import dataclass, field
from pathlib import Path

from edge_roofline.platforms.base import ApplyError, RebootRequiredError
from edge_roofline.roofline.devices import Preset

DEFAULT_TIMEOUT_S = 4.0
_REBOOT_MARKERS = ("Reboot required", "DO YOU WANT TO REBOOT")
_QUERY_NAME_RE = re.compile(r"NV Power Mode:\s*(\S+)")
_VERBOSE_DEFAULT_RE = re.compile(r"PM_CONFIG:\s*DEFAULT=(\S+)\((\d+)\)")
_VERBOSE_MODEL_RE = re.compile(r"POWER_MODEL:\s*ID=(\d+)\s+NAME=(\S+)")
_SECTION_RE = re.compile(r"^<\s*(\w+)\s*(.*?)\s*>$")
_ATTR_RE = re.compile(r"(\w+)=(\S+)")
_QUERY_VERBOSE_RE = re.compile(r"PARAM (\w+): ARG (\w+): PATH \S+ REAL_VAL: (-?\d+) CONF_VAL: (-?\d+)")


@dataclass(frozen=True)
class ModeQuery:
    mode_id: int
    name: str


@dataclass
class ConfModel:
    mode_id: int
    name: str
    # (PARAM, ARG) -> value; a number, or a word where NVIDIA's confs write one
    # (``GPU_POWER_CONTROL_ENABLE GPU_PWR_CNTL_EN on``)
    settings: dict[tuple[str, str], int | str] = field(default_factory=dict)


@dataclass
class NvpmodelConf:
    default_id: int
    models: dict[int, ConfModel]
    params: dict[str, dict[str, str]]  # NAME -> section attributes (TYPE, ...) and paths


def parse_conf(text: str) -> NvpmodelConf:
    """``< PARAM ... >``, ``< POWER_MODEL ID= NAME= >`` with ``PARAM ARG VALUE`` lines, and the
    mandatory ``< PM_CONFIG DEFAULT= >``. Raises ValueError on a conf without PM_CONFIG."""
    default_id, models, params = None, {}, {}
    current_model, current_param = None, None
    for raw in text.splitlines():
        line = raw.split("#", 1)[0].strip()
        if not line:
            continue
        section = _SECTION_RE.match(line)
        if section:
            kind, attrs = section.group(1), dict(_ATTR_RE.findall(section.group(2)))
            current_model = current_param = None
            if kind == "POWER_MODEL":
                current_model = ConfModel(int(attrs["ID"]), attrs.get("NAME", attrs["ID"]))
                models[current_model.mode_id] = current_model
            elif kind == "PM_CONFIG":
                default_id = int(attrs["DEFAULT"])
            elif kind.startswith("PARAM"):
                current_param = params.setdefault(attrs.get("NAME", ""), dict(attrs))
            continue
        words = line.split()
        if current_model is not None and len(words) == 3:
            current_model.settings[(words[0], words[1])] = _number_or_word(words[2])
        elif current_param is not None and len(words) >= 2:
            current_param[words[0]] = words[1]
    if default_id is None:
        raise ValueError("nvpmodel conf has no < PM_CONFIG DEFAULT=n > section")
    return NvpmodelConf(default_id, models, params)


def _number_or_word(text: str) -> int | str:
    try:
        return int(text)
    except ValueError:
        return text


def _int_settings(model: ConfModel) -> dict[tuple[str, str], int]:
    return {key: v for key, v in model.settings.items() if isinstance(v, int)}


# The GPU clock's PARAM name: GPU on Orin; Thor's conf: UNVERIFIED, so GPC-named ones are taken too.
_GPU_CLOCK_PARAMS = ("GPU", "GPU_GPC", "GPC")


def presets_from_conf(conf: NvpmodelConf, cpu_cores: int) -> tuple[Preset, ...]:
    """The conf's power modes as presets, the way nvpmodel applies them: cores online from
    ``CPU_ONLINE CORE_n`` (a core not listed stays online), the CPU cap the lowest ``CPU_*
    MAX_FREQ`` (kHz), ``GPU MAX_FREQ`` and ``EMC MAX_FREQ`` in Hz (-1, and 0 for EMC: no cap), the
    GPU power-gating mask from any ``*_PG_MASK`` (``TPC_PG_MASK`` on Orin) or 0."""
    presets = []
    for model in sorted(conf.models.values(), key=lambda m: m.mode_id):
        values = _int_settings(model)
        online = {arg: v for (param, arg), v in values.items() if param == "CPU_ONLINE"}
        cores = sum(1 for c in range(cpu_cores) if online.get(f"CORE_{c}", 1) != 0)
        cpu_caps = [v for (param, arg), v in values.items()
                    if param.startswith("CPU_") and param != "CPU_ONLINE" and arg == "MAX_FREQ" and v > 0]
        gpu = next((values[(p, "MAX_FREQ")] for p in _GPU_CLOCK_PARAMS if (p, "MAX_FREQ") in values), -1)
        emc = values.get(("EMC", "MAX_FREQ"), 0)
        masks = {arg: v for (_, arg), v in values.items() if arg.endswith("PG_MASK")}
        mask = masks.get("TPC_PG_MASK", next(iter(masks.values()), 0))  # Orin's name first
        presets.append(Preset(model.mode_id, model.name, cores, mask,
                              min(cpu_caps) * 1e3 if cpu_caps else None,
                              float(gpu) if gpu > 0 else None, float(emc) if emc > 0 else None))
    return tuple(presets)


def parse_query(output: str) -> ModeQuery:
    """``NV Power Mode: NAME`` followed by the id line (warnings may precede it)."""
    lines = [ln.strip() for ln in output.splitlines() if ln.strip()]
    for i, line in enumerate(lines):
        match = _QUERY_NAME_RE.search(line)
        if match and i + 1 < len(lines) and lines[i + 1].isdigit():
            return ModeQuery(int(lines[i + 1]), match.group(1))
    raise ApplyError(f"cannot parse `nvpmodel -q` output: {output!r}")


def parse_verbose(output: str) -> tuple[int | None, dict[int, str]]:
    """``-p --verbose``: (default id, {id: name})."""
    default = _VERBOSE_DEFAULT_RE.search(output)
    models = {int(i): name for i, name in _VERBOSE_MODEL_RE.findall(output)}
    return (int(default.group(2)) if default else None), models


def parse_query_verbose(output: str) -> dict[tuple[str, str], tuple[int, int]]:
    """``-q --verbose``: {(PARAM, ARG): (value in the file now, value in the conf)}; lines
    look like ``NVPM VERB: PARAM GPU: ARG MAX_FREQ: PATH /sys/...: REAL_VAL: n CONF_VAL: n``."""
    return {(p, a): (int(real), int(conf)) for p, a, real, conf in _QUERY_VERBOSE_RE.findall(output)}


STATUS_FILE = "/var/lib/nvpmodel/status"  # "pmode:0002 fmode:quiet", kept by nvpmodel [likely]


def read_status_mode(root: str | Path = "/") -> int | None:
    """The mode id nvpmodel last set, from its status file (no subprocess: cheap enough for
    every telemetry sample); ``None`` where the file is absent or unreadable."""
    try:
        text = (Path(root) / STATUS_FILE.lstrip("/")).read_text(encoding="ascii", errors="replace")
    except OSError:
        return None
    for word in text.split():
        if word.startswith("pmode:") and word[6:].isdigit():
            return int(word[6:])
    return None


def _kill_group(proc: subprocess.Popen) -> None:
    """SIGTERM the whole group first (sudo relays it to nvpmodel), then SIGKILL what is left."""
    for sig, grace_s in ((signal.SIGTERM, 0.5), (signal.SIGKILL, 2.0)):
        try:
            os.killpg(proc.pid, sig)
        except ProcessLookupError:
            break
        try:
            proc.communicate(timeout=grace_s)
            break
        except subprocess.TimeoutExpired:
            continue


class Nvpmodel:
    def __init__(self, cmd: tuple[str, ...] = ("nvpmodel",), timeout_s: float = DEFAULT_TIMEOUT_S):
        self.cmd = tuple(cmd)
        self.timeout_s = timeout_s

    def _run(self, *args: str) -> str:
        argv = [*self.cmd, *args]
        try:
            # Own process group: nvpmodel may run under sudo, and a timeout must reach both.
            proc = subprocess.Popen(argv, stdin=subprocess.DEVNULL, stdout=subprocess.PIPE,
                                    stderr=subprocess.PIPE, text=True, start_new_session=True)
        except OSError as exc:
            raise ApplyError(f"cannot run {argv[0]}: {exc}; is nvpmodel installed "
                             "(JetPack nvpmodel package)?") from exc
        try:
            stdout, stderr = proc.communicate(timeout=self.timeout_s)
        except subprocess.TimeoutExpired as exc:
            _kill_group(proc)
            raise ApplyError(f"{' '.join(argv)} did not answer within {self.timeout_s} s "
                             "(killed; check `nvpmodel -q` by hand, the device may be loaded)") from exc
        output = stdout + stderr
        if any(marker in output for marker in _REBOOT_MARKERS):
            raise RebootRequiredError(f"{' '.join(argv)} needs a reboot; not done at runtime")
        if proc.returncode != 0 or "NVPM ERROR" in output:
            raise ApplyError(f"{' '.join(argv)} failed (exit {proc.returncode}): {output.strip()}")
        return output

    def query(self) -> ModeQuery:
        return parse_query(self._run("-q"))

    def query_verbose(self) -> dict[tuple[str, str], tuple[int, int]]:
        return parse_query_verbose(self._run("-q", "--verbose"))

    def list_modes(self) -> tuple[int | None, dict[int, str]]:
        return parse_verbose(self._run("-p", "--verbose"))

    def set_mode(self, target: Preset, current: Preset) -> None:
        """Switch live; a TPC power-gating change would need a reboot, so it is refused first."""
        if target.tpc_pg_mask != current.tpc_pg_mask:
            raise RebootRequiredError(
                f"{current.name} -> {target.name} changes TPC_PG_MASK "
                f"({current.tpc_pg_mask} -> {target.tpc_pg_mask}) and needs a reboot")
        self._run("-m", str(target.mode_id))


def read_conf(path: str | Path) -> NvpmodelConf:
    return parse_conf(Path(path).read_text())
