"""How a node executable starts: ``lib/edge_roofline/NODE`` (what ``ros2 run`` and launch run)
and ``python -m edge_roofline.nodes.entry NODE [--ros-args ...]`` (what ``edge-roofline up``
runs). Importing rclpy and a node's libraries takes a second or more; Ctrl-C or SIGTERM in that
time ends the process quietly with 0 once the import in hand is done (never inside it:
edge_roofline.suite.signals), not with a KeyboardInterrupt traceback, and a second one never
kills it while it exits. From there on the node's main (nodes/common.py: run_node) handles them
with the same handlers. Imports nothing itself before that but the signal handling."""

from __future__ import annotations

import importlib
import sys

from edge_roofline.suite.signals import StartInterrupted, ignore_stop_signals, start_signals


def start(executable: str, argv: list[str] | None = None) -> int:
    """Run node ``executable`` (edge_roofline.nodes.<executable>) with ``argv`` (sys.argv)."""
    try:
        start_signals()  # raises at once for a signal the executable held back since its first line
        module = importlib.import_module(f"{__package__}.{executable}")
        return module.main(sys.argv if argv is None else argv)
    except StartInterrupted:
        return 0
    finally:
        ignore_stop_signals()  # the process is ending: nothing may kill it while Python finalises


if __name__ == "__main__":
    if len(sys.argv) < 2 or sys.argv[1].startswith("-"):
        sys.exit(f"usage: python -m {__package__}.entry NODE [--ros-args ...]")
    sys.exit(start(sys.argv[1], [sys.argv[0], *sys.argv[2:]]))
