"""The console node names the topics it waits on from its own namespace and parameters: a
generation node that has served no request yet gets the request topic to send one to."""

from edge_roofline.msg import GenerationStats
from test.nodes.rosutil import log_text, start_node, stop_node, watcher


def test_the_console_points_to_the_request_topic_of_a_generation_node_with_no_request_yet(ros_env, tmp_path):
    log = tmp_path / "console.log"
    console = start_node("console", ros_env, {"period_s": 0.2, "generation_namespace": "planner"}, log,
                         namespace="/robot")
    try:
        with watcher(ros_env) as (node, spin_until):
            assert spin_until(lambda: "power: waiting for the first PowerTelemetry on /robot/power/telemetry"
                              in log_text(log), procs=[console]), log_text(log)
            node.create_publisher(GenerationStats, "/robot/planner/generation/stats", 10)  # a generation node is up
            assert spin_until(lambda: "send a GenerationRequest to /robot/planner/generation/request"
                              in log_text(log), procs=[console]), log_text(log)
    finally:
        assert stop_node(console) == 0
