"""The launch file hands every process the shipped Fast DDS profile unless the user set one, and
string overrides as strings. (The ROS launch tools have no PyPI wheels: they are stubbed; the file's own logic runs.)"""

import runpy
import sys
import types
from pathlib import Path

from edge_roofline.suite.env import profile_variable

LAUNCH_FILE = Path(__file__).resolve().parent.parent / "launch" / "edge_roofline.launch.py"


class _Action:
    def __init__(self, *args, **kwargs):
        self.args = args


def _launch_module(monkeypatch):
    for name in ("ament_index_python", "ament_index_python.packages", "launch", "launch.actions",
                 "launch.substitutions", "launch_ros", "launch_ros.actions", "launch_ros.parameter_descriptions"):
        module = types.ModuleType(name)
        for attr in ("get_package_share_directory", "LaunchDescription", "DeclareLaunchArgument", "ExecuteProcess",
                     "OpaqueFunction", "SetEnvironmentVariable", "LaunchConfiguration", "Node", "ParameterValue"):
            setattr(module, attr, _Action)
        monkeypatch.setitem(sys.modules, name, module)
    return runpy.run_path(str(LAUNCH_FILE))


def test_launch_sets_the_shipped_profile_only_where_none_is_set(monkeypatch):
    monkeypatch.delenv("FASTDDS_DEFAULT_PROFILES_FILE", raising=False)
    monkeypatch.delenv("FASTRTPS_DEFAULT_PROFILES_FILE", raising=False)
    monkeypatch.delenv("ROS_DISTRO", raising=False)
    actions = _launch_module(monkeypatch)["_fastdds_profile"]()
    assert [a.args[0] for a in actions] == [profile_variable()]
    assert Path(actions[0].args[1]).name == "fastdds_localhost.xml" and Path(actions[0].args[1]).is_file()

    monkeypatch.setenv(profile_variable(), "/etc/my_profile.xml")
    assert _launch_module(monkeypatch)["_fastdds_profile"]() == []


def test_launch_keeps_string_overrides_strings(monkeypatch):
    """launch_ros reads a plain string parameter as YAML: "off" would reach the node as a bool
    and a streams list as a list. String overrides go as ParameterValue(..., value_type=str)."""
    streams = "[{name: det, target_latency_ms: 30}]"
    typed = _launch_module(monkeypatch)["_typed"]({"mode": "off", "streams": streams, "target_latency_ms": 20.0})
    assert isinstance(typed["mode"], _Action) and typed["mode"].args == ("off",)
    assert isinstance(typed["streams"], _Action) and typed["streams"].args == (streams,)
    assert typed["target_latency_ms"] == 20.0
