"""The governor node's parameters read what is in force (real rclpy): a section's setting given
with -p (safety.stale_telemetry_s), the state_path chosen for an empty one, a target set through
governor/set_target, the mode after governor/enable; a parameter set after start is refused
with the reason instead of reading as in force while nothing uses it."""

import signal

from rcl_interfaces.msg import Parameter as ParameterMsg
from rcl_interfaces.srv import GetParameters, SetParameters
from rclpy.parameter import Parameter
from std_srvs.srv import SetBool

from edge_roofline.governor.runtime import default_state_path
from edge_roofline.ros import topics
from edge_roofline.srv import SetTarget
from test.nodes.rosutil import log_text, start_node, stop_node, watcher


def test_parameters_read_what_is_in_force(ros_env, tmp_path):
    root = tmp_path / "not_a_jetson"  # advise off a Jetson: starts fast, governs nothing
    root.mkdir()
    log = tmp_path / "governor.log"
    params = {"sysfs_root": str(root), "model": "zoo:tiny_cnn", "mode": "advise", "safety.stale_telemetry_s": 0.5}
    with watcher(ros_env) as (node, spin_until):
        gov = start_node("governor", ros_env, params, log)
        try:
            def call(kind, name, request):
                client = node.create_client(kind, name)
                assert client.wait_for_service(timeout_sec=60), log_text(log)
                future = client.call_async(request)
                assert spin_until(future.done, timeout_s=30, procs=[gov]), log_text(log)
                return future.result()

            def get(*names):
                reply = call(GetParameters, "/governor/get_parameters", GetParameters.Request(names=list(names)))
                return [Parameter.from_parameter_msg(ParameterMsg(name=n, value=v)).value
                        for n, v in zip(names, reply.values)]

            assert get("safety.stale_telemetry_s", "state_path", "mode", "target_latency_ms") == [
                0.5, str(default_state_path(str(root))), "advise", 50.0]

            assert call(SetTarget, f"/{topics.GOVERNOR_SET_TARGET}",
                        SetTarget.Request(target_latency_ms=30.0, percentile=0.0)).success
            assert get("target_latency_ms", "percentile") == [30.0, 95.0]

            refused = call(SetParameters, "/governor/set_parameters", SetParameters.Request(
                parameters=[Parameter("target_latency_ms", value=10.0).to_parameter_msg()])).results[0]
            assert not refused.successful and "governor/set_target" in refused.reason, refused
            assert get("target_latency_ms") == [30.0]

            assert call(SetBool, f"/{topics.GOVERNOR_ENABLE}", SetBool.Request(data=False)).success
            assert get("mode") == ["off"]
        finally:
            code = stop_node(gov, signal.SIGINT, timeout_s=30)
    assert code == 0 and "Traceback" not in log_text(log), log_text(log)
