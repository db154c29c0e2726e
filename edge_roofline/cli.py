"""``edge-roofline``: one command line over the core; subcommands live in
``edge_roofline.commands`` and are imported only when used, so ``--help`` stays fast. A user's
error (edge_roofline.suite.errors.is_user_error) is ``edge-roofline CMD: error: ...`` and exit 2.
Ctrl-C or SIGTERM before a command takes them (``console_main``): exit 0 while the command line is
still read, else ``interrupted`` and exit 130."""

from __future__ import annotations

import argparse
import importlib
import pkgutil
import sys

from edge_roofline import __version__, commands
from edge_roofline.suite.signals import StartInterrupted, ignore_stop_signals, start_signals


def _command_modules():
    for info in sorted(pkgutil.iter_modules(commands.__path__), key=lambda i: i.name):
        if not info.name.startswith("_"):
            yield importlib.import_module(f"{commands.__name__}.{info.name}")


def build_parser() -> argparse.ArgumentParser:
    parser = argparse.ArgumentParser(
        prog="edge-roofline",
        description="Per-layer roofline telemetry, power telemetry and an energy-aware "
                    "governor for DNN inference on NVIDIA Jetson.")
    parser.add_argument("--version", action="version", version=f"edge-roofline {__version__}")
    sub = parser.add_subparsers(dest="command", metavar="COMMAND", required=True)
    for module in _command_modules():
        p = sub.add_parser(module.NAME, help=module.HELP, description=module.HELP)
        module.add_arguments(p)
        p.set_defaults(_run=module.run)
    return parser


def console_main(argv: list[str] | None = None) -> int:
    """The ``edge-roofline`` executable: ``main`` with the process's signals handled from its
    first line. A Ctrl-C or SIGTERM before a command takes them (the long-running ones: ``up``,
    ``virtual-jetson``, ``sweep``) lands at a safe point, never inside an import or a library's
    code (suite.signals: there it could leave native state half made), and ends the process with
    one line and no traceback; a second one never kills the process while it cleans up or exits.
    (Not ``main`` itself: a test calling it must keep its own process's handlers.)"""
    start_signals()
    try:
        return main(argv)
    finally:
        ignore_stop_signals()


def main(argv: list[str] | None = None) -> int:
    try:
        args = build_parser().parse_args(argv)  # its imports may take a held signal (console_main)
    except StartInterrupted as exc:  # nothing was done: a clean stop, as a node's while it starts
        print(f"edge-roofline: stopped by {exc} while starting", file=sys.stderr)
        return 0
    try:
        return int(args._run(args) or 0)
    except (KeyboardInterrupt, StartInterrupted):
        print("interrupted", file=sys.stderr)
        return 130
    except Exception as exc:  # the one place a user's error becomes one line; a bug keeps its traceback
        from edge_roofline.suite.errors import is_user_error, one_line
        if not is_user_error(exc):
            raise
        print(f"edge-roofline {args.command}: error: {one_line(exc)}", file=sys.stderr)
        return 2


if __name__ == "__main__":
    sys.exit(console_main())
