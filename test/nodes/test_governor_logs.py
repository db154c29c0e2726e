"""A governor in fallback does not log the same line at every step (issue 23: 439 lines in 29 s):
lines that differ only in their numbers come once per interval, with a count of those held
back. Real rclpy, a live virtual AGX Orin; the test plays inference and power monitor."""

import signal
import time

from test.nodes.rosutil import log_text, start_node, stop_node, watcher
from test.nodes.test_governor_faults import fake_inputs
from test.nodes.virtual_rig import governor_params


def test_fallback_lines_are_rate_limited(board, ros_env, tmp_path):  # noqa: F811
    log = tmp_path / "governor.log"
    states = []
    with watcher(ros_env) as (node, spin_until):
        fake = fake_inputs(node, states)
        gov = start_node("governor", ros_env, governor_params(board, tmp_path / "state.json"), log)
        try:
            assert spin_until(lambda: states and states[-1][1].state not in ("fallback", "waiting"),
                              timeout_s=90, procs=[gov]), log_text(log)
            fake["power"] = False  # the power monitor stops: stale telemetry, every step a new number
            assert spin_until(lambda: states[-1][1].state == "fallback", timeout_s=10, procs=[gov]), log_text(log)
            t0 = time.monotonic()
            spin_until(lambda: False, timeout_s=4.0, procs=[gov])
            steps = sum(1 for t, s in states if t >= t0 and s.state == "fallback")
        finally:
            code = stop_node(gov, signal.SIGTERM, timeout_s=30)
    text = log_text(log)
    assert code == 0, text
    stale = [line for line in text.splitlines() if "fallback MAXN: stale telemetry" in line]
    print(f"{steps} fallback steps in 4 s, {len(stale)} 'stale telemetry' lines logged")
    assert steps >= 20 and 1 <= len(stale) <= 2, text
