"""Ctrl-C in the terminal of a real `ros2 launch` (SIGINT to its whole process group: every node
gets it twice, from the terminal and from launch), after the governor has moved the virtual
board: exit 0, every process finishes cleanly, no traceback anywhere, and every cap file and the
mode are as the board was found. EDGE_ROOFLINE_CTRL_C_STOPS repetitions (default 2 here;
benchmarks/bench_ctrl_c.py runs 10 and prints the table)."""

import os

import pytest

from test.suite.robot import stop_after_move

STOPS = int(os.environ.get("EDGE_ROOFLINE_CTRL_C_STOPS", "2"))


@pytest.mark.parametrize("repetition", range(STOPS))
def test_ctrl_c_after_the_governor_moved_the_board(ros2_tools, tmp_path, repetition):
    stop = stop_after_move(tmp_path)
    assert stop.exit_code == 0, stop.log[-5000:]
    assert not stop.noise, f"{stop.noise}\n{stop.log[-5000:]}"
    assert not stop.unclean, f"{stop.unclean}\n{stop.log[-5000:]}"
    assert stop.caps_as_found, stop.log[-5000:]
    started = stop.log.count("process started with pid")
    assert started == 5 and stop.log.count("process has finished cleanly") == started, stop.log[-3000:]
    assert "restored " in stop.log, stop.log[-3000:]
