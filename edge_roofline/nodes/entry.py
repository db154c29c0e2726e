"""How a node executable starts: ``lib/edge_roofline/NODE`` (what ``ros2 run`` and launch run)
and ``python -m edge_roofline.nodes.entry NODE [--ros-args ...]`` (what ``edge-roofline up``
runs). Importing rclpy and a node's libraries takes a second or more; Ctrl-C or SIGTERM in that
time ends the process quietly with 0, not with a KeyboardInterrupt traceback. From there on the
node's main (nodes/common.py: run_node) handles them. Imports nothing itself before that."""

from __future__ import annotations

import importlib
import signal
import sys


def _quiet_exit(signum, frame) -> None:
    raise SystemExit(0)


def start(executable: str, argv: list[str] | None = None) -> int:
    """Run node ``executable`` (edge_roofline.nodes.<executable>) with ``argv`` (sys.argv)."""
    for signum in (signal.SIGINT, signal.SIGTERM):
        signal.signal(signum, _quiet_exit)
    module = importlib.import_module(f"{__package__}.{executable}")
    return module.main(sys.argv if argv is None else argv)


if __name__ == "__main__":
    if len(sys.argv) < 2 or sys.argv[1].startswith("-"):
        sys.exit(f"usage: python -m {__package__}.entry NODE [--ros-args ...]")
    sys.exit(start(sys.argv[1], [sys.argv[0], *sys.argv[2:]]))
