"""ros2 launch edge_roofline edge_roofline.launch.py [params_file:=FILE] [namespace:=NS]
    [target_latency_ms:=MS] [governor_mode:=off|advise|active] [governor_streams:=FILE_OR_YAML]

Starts the nodes of edge_roofline.suite.spec.NODES that the parameter file configures (the same
list, rule and arguments `edge-roofline up` uses) with one parameter file (default:
config/virtual_agx_orin.yaml). When the parameters point a node at a virtual Jetson (platform:
virtual:DEVICE, sysfs_root: DIR), the live virtual Jetson is started first, as `edge-roofline up`
does. Every process gets the shipped Fast DDS profile (config/fastdds_localhost.xml: shared
memory big enough for camera frames) unless a Fast DDS profile variable is already set.
"""

import os
from pathlib import Path

from ament_index_python.packages import get_package_share_directory
from launch import LaunchDescription
from launch.actions import DeclareLaunchArgument, ExecuteProcess, OpaqueFunction, SetEnvironmentVariable
from launch.substitutions import LaunchConfiguration
from launch_ros.actions import Node
from launch_ros.parameter_descriptions import ParameterValue

from edge_roofline.suite.spec import (ARGUMENTS, PACKAGE, argument_overrides, configured_nodes, load_params,
                                      virtual_devices)
from edge_roofline.suite.env import PROFILE_VARIABLES, default_fastdds_profile


def _fastdds_profile():
    env = {name: value for name, value in os.environ.items() if name in PROFILE_VARIABLES}
    default_fastdds_profile(env)  # adds the shipped profile only where the user set none
    return [SetEnvironmentVariable(name, value) for name, value in env.items() if name not in os.environ]


def _typed(overrides: dict) -> dict:
    """Strings stay strings: launch_ros would read "off" as a bool and a streams list as a list."""
    return {name: ParameterValue(value, value_type=str) if isinstance(value, str) else value
            for name, value in overrides.items()}


def _nodes(context):
    params_file = LaunchConfiguration("params_file").perform(context)
    namespace = LaunchConfiguration("namespace").perform(context)
    overrides = argument_overrides({arg: LaunchConfiguration(arg).perform(context) for arg in ARGUMENTS})
    params = load_params(params_file)
    actions = [ExecuteProcess(cmd=["edge-roofline", "virtual-jetson", "--device", device, "--root", root],
                              output="screen")
               for root, device in virtual_devices(params).items()]
    actions += [Node(package=PACKAGE, executable=spec.executable, name=spec.name, namespace=namespace,
                     parameters=[params_file, _typed(overrides.get(spec.name, {}))], output="screen")
                for spec in configured_nodes(params)]
    return actions


def generate_launch_description():
    share = Path(get_package_share_directory(PACKAGE))
    return LaunchDescription([
        *_fastdds_profile(),
        DeclareLaunchArgument("params_file", default_value=str(share / "config" / "virtual_agx_orin.yaml"),
                              description="ROS 2 parameter file for all nodes (see config/)"),
        DeclareLaunchArgument("namespace", default_value="", description="namespace for all nodes"),
        *[DeclareLaunchArgument(arg, default_value="", description=f"{help_text} (empty: the parameter file's)")
          for arg, (_, _, _, help_text) in ARGUMENTS.items()],
        OpaqueFunction(function=_nodes),
    ])
