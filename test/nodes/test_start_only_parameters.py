"""A parameter a node reads at start only, set at runtime (`ros2 param set /power_monitor
publish_rate_hz 0.0`), is refused with the reason: accepted, `ros2 param get` would read the new
value while the node kept the old one (real rclpy, every node of the suite through the one
declare_parameters)."""

import signal

from rcl_interfaces.msg import Parameter as ParameterMsg
from rcl_interfaces.srv import GetParameters, SetParameters
from rclpy.parameter import Parameter

from test.nodes.rosutil import log_text, start_node, stop_node, watcher


def test_a_start_only_parameter_set_at_runtime_is_refused(ros_env, tmp_path):
    logs = {name: tmp_path / f"{name}.log" for name in ("power_monitor", "synthetic_camera")}
    procs = [start_node("power_monitor", ros_env, {"platform": "cpu"}, logs["power_monitor"]),
             start_node("synthetic_camera", ros_env, {"rate_hz": 5.0}, logs["synthetic_camera"])]
    try:
        with watcher(ros_env) as (node, spin_until):
            def call(kind, name, request):
                client = node.create_client(kind, name)
                assert client.wait_for_service(timeout_sec=60), {n: log_text(p) for n, p in logs.items()}
                future = client.call_async(request)
                assert spin_until(future.done, timeout_s=30, procs=procs)
                return future.result()

            for node_name, name, value, in_force in (("power_monitor", "publish_rate_hz", 0.0, 20.0),
                                                     ("synthetic_camera", "encoding", "yuv422", "rgb8"),
                                                     ("synthetic_camera", "rate_hz", -1.0, 5.0)):
                result = call(SetParameters, f"/{node_name}/set_parameters", SetParameters.Request(
                    parameters=[Parameter(name, value=value).to_parameter_msg()])).results[0]
                assert not result.successful, (node_name, name)
                assert result.reason.startswith(f"{name}: read by {node_name} at start only"), result.reason
                reply = call(GetParameters, f"/{node_name}/get_parameters", GetParameters.Request(names=[name]))
                assert Parameter.from_parameter_msg(ParameterMsg(name=name, value=reply.values[0])).value == in_force
            # rclpy's own parameter stays rclpy's to switch
            assert call(SetParameters, "/power_monitor/set_parameters", SetParameters.Request(
                parameters=[Parameter("use_sim_time", value=False).to_parameter_msg()])).results[0].successful
    finally:
        codes = [stop_node(proc, signal.SIGINT, timeout_s=30) for proc in procs]
    assert codes == [0, 0], {n: log_text(p) for n, p in logs.items()}
