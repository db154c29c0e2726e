"""The governor node off a Jetson (issue 23), real rclpy: with the default platform (jetson) on a
machine that is not one, mode advise starts, publishes GovernorState saying it governs nothing
and why, and exits 0 on Ctrl-C; mode active exits 2 in one line naming what to set. Every
``-p NAME:=`` hint it prints names a real parameter of the node."""

import re
import signal
import time

from edge_roofline.msg import GovernorState
from edge_roofline.nodes.governor import PARAMETERS
from edge_roofline.ros import topics
from test.nodes.rosutil import log_text, start_node, stop_node, watcher


def test_advise_runs_off_a_jetson_and_active_refuses_in_one_line(ros_env, tmp_path):
    root = tmp_path / "not_a_jetson"  # an empty tree: not a Jetson on any machine, this one included
    root.mkdir()
    params = {"sysfs_root": str(root), "state_path": str(tmp_path / "state.json"), "model": "zoo:tiny_cnn"}
    logs = {mode: tmp_path / f"{mode}.log" for mode in ("advise", "active")}
    states = []
    with watcher(ros_env) as (node, spin_until):
        node.create_subscription(GovernorState, topics.GOVERNOR_STATE, states.append, 10)
        gov = start_node("governor", ros_env, {**params, "mode": "advise"}, logs["advise"])
        try:
            assert spin_until(lambda: len(states) >= 3, timeout_s=90, procs=[gov]), log_text(logs["advise"])
        finally:
            code = stop_node(gov, signal.SIGINT, timeout_s=30)
    advise = log_text(logs["advise"])
    assert code == 0 and "Traceback" not in advise, advise
    last = states[-1]
    assert last.mode == "advise" and last.state == "unavailable" and not last.fallback_active
    assert last.reason.startswith("nothing to govern: platform 'jetson' unavailable (not a Jetson: ")
    told = [line for line in advise.splitlines() if "governing nothing: " in line]
    assert len(told) == 1, advise
    assert not (tmp_path / "state.json").exists()

    active = start_node("governor", ros_env, {**params, "mode": "active"}, logs["active"])
    deadline = time.monotonic() + 90
    while active.poll() is None and time.monotonic() < deadline:
        time.sleep(0.2)
    refused = log_text(logs["active"])
    assert stop_node(active) == 2, refused
    lines = [line for line in refused.splitlines() if line.strip()]
    assert len(lines) == 1 and lines[0].startswith("governor: cannot start: not a Jetson: "), refused
    assert "-p mode:=advise" in lines[0]

    hinted = set(re.findall(r"-p (\w+):=", advise + refused))
    assert {"platform", "mode", "sysfs_root"} <= hinted and hinted <= set(PARAMETERS), hinted
