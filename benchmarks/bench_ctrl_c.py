"""Ctrl-C of a real `ros2 launch` after the governor moved the board, N times: what a user sees
when they stop the suite in a terminal (SIGINT to the launch's whole process group).

Each stop: the shipped launch file with a robot-style parameter file on a live virtual AGX Orin
(SIMULATION), `governor_mode:=active with:=synthetic_camera`; as soon as any cap file differs
from the board as found, SIGINT to the group; then the launch's exit code, every process's
"finished cleanly", traceback marks in any output, and every cap file against the board as
found. Needs the ROS 2 launch tools (shared/ros2-tools, installed as `make test` does).

    python benchmarks/bench_ctrl_c.py [--stops 10]
"""

from __future__ import annotations

import argparse
import sys
import tempfile
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

from edge_roofline.suite.env import localhost_environment  # noqa: E402
from test.suite.robot import stop_after_move  # noqa: E402
from test.suite.ros2_tools import ensure_installed  # noqa: E402


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--stops", type=int, default=10)
    args = parser.parse_args()
    localhost_environment()
    installed, where = ensure_installed()
    if not installed:
        print(f"cannot run: {where}")
        return 2
    print("stop  moved after s  stop took s  exit  caps as found  tracebacks  unclean exits")
    good = 0
    with tempfile.TemporaryDirectory(prefix="bench_ctrl_c_") as tmp:
        for i in range(args.stops):
            stop = stop_after_move(Path(tmp) / f"stop_{i}")
            good += stop.ok
            print(f"{i + 1:4d}  {stop.moved_after_s:13.1f}  {stop.stop_s:11.2f}  {stop.exit_code:4d}  "
                  f"{'yes' if stop.caps_as_found else 'NO':>13}  {len(stop.noise):10d}  {len(stop.unclean):13d}",
                  flush=True)
            if not stop.ok:
                print(stop.log[-4000:])
    print(f"{good} of {args.stops} stops clean: exit 0, every process finished cleanly, no traceback, "
          "every cap file as found")
    return 0 if good == args.stops else 1


if __name__ == "__main__":
    sys.exit(main())
