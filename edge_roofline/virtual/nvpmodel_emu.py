"""``nvpmodel`` emulation for a generated tree (``sysfs_tree.render_tree``).

Same command line and output formats as the real tool: ``-q``, ``-q --verbose``,
``-p --verbose``, ``-m N``, ``-f FILE`` (alone: re-apply the saved mode from that file). It reads
the tree's ``/etc/nvpmodel.conf`` (board paths resolved under ``--root``) and applies a mode by
writing its values to those files, with the kernel's clamping (a clock value is snapped into
its FREQ_TABLE; -1/INT_MAX mean the table maximum). A change of a GPU power-gating mask (any
``*_PG_MASK``: Orin's TPC_PG_MASK, the virtual Thor's GPC_PG_MASK) prints nvpmodel's reboot
prompt; EOF or any answer but YES/yes -> ``NVPM ERROR`` and exit 1. It never reboots: YES
applies the mode at once, as the board would after the reboot.

Test hooks, as an environment variable or a file ``<root>/run/nvpmodel_emu/<name>``:
``hang_s`` (``EDGE_ROOFLINE_NVPM_EMU_HANG_S``): sleep that long before doing anything;
``fail`` (``EDGE_ROOFLINE_NVPM_EMU_FAIL``): ``-m`` prints ``NVPM ERROR: <contents>`` and fails.
"""

from __future__ import annotations

import argparse
import os
import sys
import time
from pathlib import Path

from edge_roofline.platforms.jetson.nvpmodel import ConfModel, NvpmodelConf, parse_conf, read_status_mode
from edge_roofline.virtual.sysfs_tree import NVPMODEL_CONF_LINK, write_nvpmodel_status

INT_MAX = 2147483647
HOOK_DIR = "run/nvpmodel_emu"
_HOOK_ENV = {"hang_s": "EDGE_ROOFLINE_NVPM_EMU_HANG_S", "fail": "EDGE_ROOFLINE_NVPM_EMU_FAIL"}


class NvpmError(Exception):
    """Printed as ``NVPM ERROR: ...``; exit status 1."""


def hook(root: Path, name: str) -> str | None:
    value = os.environ.get(_HOOK_ENV[name])
    if value is not None:
        return value
    try:
        return (root / HOOK_DIR / name).read_text().strip()
    except OSError:
        return None


def set_hook(root: str | Path, name: str, value: str | None) -> None:
    """Arm (value) or disarm (None) a file hook; for tests."""
    path = Path(root) / HOOK_DIR / name
    if value is None:
        path.unlink(missing_ok=True)
        return
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(value)


class Emulator:
    def __init__(self, root: Path, conf_file: str | None, out=sys.stdout) -> None:
        self.root = root
        self.out = out
        self.conf_path = self._conf_path(conf_file)
        try:
            self.conf: NvpmodelConf = parse_conf(self.conf_path.read_text())
        except (OSError, ValueError, KeyError) as exc:
            raise NvpmError(f"failed to parse {self.conf_path}: {exc}") from exc

    def _conf_path(self, conf_file: str | None) -> Path:
        if conf_file is None:
            return self.root / NVPMODEL_CONF_LINK
        given = Path(conf_file)
        return given if given.exists() else self.root / conf_file.lstrip("/")

    def say(self, line: str) -> None:
        print(line, file=self.out, flush=True)

    def board(self, board_path: str) -> Path:
        return self.root / board_path.lstrip("/")

    def current_id(self) -> int:
        mode = read_status_mode(self.root)
        return self.conf.default_id if mode is None else mode

    def model(self, mode_id: int) -> ConfModel:
        if mode_id not in self.conf.models:
            raise NvpmError(f"power mode {mode_id} is not defined in {self.conf_path}")
        return self.conf.models[mode_id]

    # ---- commands ---------------------------------------------------------------------------
    def query(self, verbose: bool) -> None:
        model = self.model(self.current_id())
        if verbose:
            for (param, arg), conf_value in model.settings.items():
                path = self.conf.params.get(param, {}).get(arg)
                if path is None:
                    continue
                real = (self.board(path).read_text().split() or ["0"])[0] if self.board(path).exists() else "0"
                shown = INT_MAX if conf_value == -1 else conf_value
                self.say(f"NVPM VERB: PARAM {param}: ARG {arg}: PATH {path}: REAL_VAL: {real} CONF_VAL: {shown}")
        self.say("NVPM WARN: fan mode is not set!")
        self.say(f"NV Power Mode: {model.name}")
        self.say(str(model.mode_id))

    def parse(self, verbose: bool) -> None:
        if not verbose:
            self.say(f"succeed to parse file {self.conf_path}.")
            return
        self.say(f"NVPM VERB: Config file: {self.conf_path}")
        self.say(f"NVPM VERB: parsing done for {self.conf_path}")
        self.say(f"succeed to parse file {self.conf_path}.")
        default = self.model(self.conf.default_id)
        self.say(f"NVPM VERB: PM_CONFIG: DEFAULT={default.name}({default.mode_id})")
        for name, attrs in self.conf.params.items():
            self.say(f"NVPM VERB: PARAM TYPE={attrs.get('TYPE', 'FILE')} NAME={name}")
            for arg, path in attrs.items():
                if arg not in ("TYPE", "NAME"):
                    self.say(f"NVPM VERB: {arg} {path}")
        self.say("NVPM VERB: ")
        for model in self.conf.models.values():
            self.say(f"NVPM VERB: POWER_MODEL: ID={model.mode_id} NAME={model.name}")
            for (param, arg), value in model.settings.items():
                self.say(f"NVPM VERB: {param} {arg} {INT_MAX if value == -1 else value}")
            self.say("NVPM VERB: ")

    def set_mode(self, mode_id: int, stdin) -> None:
        failure = hook(self.root, "fail")
        if failure is not None:
            raise NvpmError(failure or "emulated failure")
        model = self.model(mode_id)
        if self._gating_changes(model):
            self.say(f"NVPM WARN: Reboot required for changing to this power mode: {mode_id}")
            self.say("NVPM WARN: DO YOU WANT TO REBOOT NOW? enter YES/yes to confirm:")
            answer = stdin.readline()
            if answer.strip() not in ("YES", "yes"):
                raise NvpmError("failed to read the reboot confirmation; power mode not changed")
            self.say("NVPM WARN: emulated reboot: the mode is applied now, nothing restarts")
        self._apply(model)
        write_nvpmodel_status(self.root, mode_id)

    # ---- applying a mode ----------------------------------------------------------------------
    def _gating_changes(self, model: ConfModel) -> bool:
        """The mode sets a GPU power-gating mask (Orin's TPC_PG_MASK, Thor's own) other than the
        one in force: that takes a reboot."""
        for (param, arg), value in model.settings.items():
            path = self.conf.params.get(param, {}).get(arg)
            if arg.endswith("PG_MASK") and path and self._read_int(path) != value:
                return True
        return False

    def _read_int(self, board_path: str) -> int | None:
        try:
            return int(self.board(board_path).read_text().split()[0])
        except (OSError, ValueError, IndexError):
            return None

    def _apply(self, model: ConfModel) -> None:
        # Cores first, so clusters that come online get their clock caps.
        ordered = sorted(model.settings.items(), key=lambda kv: kv[0][0] != "CPU_ONLINE")
        for (param, arg), value in ordered:
            attrs = self.conf.params.get(param)
            if attrs is None or arg not in attrs:
                raise NvpmError(f"PARAM {param}: ARG {arg} is not defined in {self.conf_path}")
            self._write(attrs[arg], self._kernel_value(attrs, arg, value))

    def _kernel_value(self, attrs: dict[str, str], arg: str, value: int) -> int:
        """What the kernel keeps: a clock request clamped and snapped into its table."""
        table_path = attrs.get("FREQ_TABLE")
        if attrs.get("TYPE") != "CLOCK" or table_path is None:
            return 0 if value in (-1, INT_MAX) else value
        try:
            table = sorted(int(v) for v in self.board(table_path).read_text().split())
        except (OSError, ValueError) as exc:
            raise NvpmError(f"Error opening {table_path}: {exc}") from exc
        if value in (-1, INT_MAX) or value >= table[-1]:
            return table[-1]
        if arg == "MIN_FREQ":
            return next(f for f in table if f >= value)
        below = [f for f in table if f <= value]
        return below[-1] if below else table[0]

    def _write(self, board_path: str, value: int) -> None:
        try:
            with open(self.board(board_path), "w") as f:
                f.write(f"{value}\n")
        except OSError as exc:
            raise NvpmError(f"Error writing {value} to {board_path}: {exc.errno}") from exc


def main(argv: list[str] | None = None, stdin=None, out=None) -> int:
    parser = argparse.ArgumentParser(prog="nvpmodel", add_help=True,
                                     description="nvpmodel emulation for a generated Jetson tree")
    parser.add_argument("--root", required=True, help="tree root (the emulation's /)")
    parser.add_argument("-q", "--query", action="store_true")
    parser.add_argument("-p", "--parse", action="store_true")
    parser.add_argument("-m", "--mode", type=int)
    parser.add_argument("-f", "--conf")
    parser.add_argument("--verbose", action="store_true")
    args = parser.parse_args(argv)
    root, out, stdin = Path(args.root), out or sys.stdout, stdin or sys.stdin
    hang_s = hook(root, "hang_s")
    if hang_s:
        time.sleep(float(hang_s))
    try:
        emu = Emulator(root, args.conf, out)
        if args.mode is not None:
            emu.set_mode(args.mode, stdin)
        elif args.query:
            emu.query(args.verbose)
        elif args.parse:
            emu.parse(args.verbose)
        elif args.conf:
            emu.set_mode(emu.current_id(), stdin)
        else:
            parser.print_usage(out)
            return 1
    except NvpmError as exc:
        print(f"NVPM ERROR: {exc}", file=out, flush=True)
        print("NVPM ERROR: failed to set power mode!" if args.mode is not None else
              "NVPM ERROR: nvpmodel failed", file=out, flush=True)
        return 1
    return 0


if __name__ == "__main__":
    sys.exit(main())
