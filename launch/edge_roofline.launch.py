"""ros2 launch edge_roofline edge_roofline.launch.py [params_file:=FILE] [namespace:=NS]
    [with:=synthetic_camera,console,foxglove_bridge] [record:=FILE.mcap]
    [target_latency_ms:=MS] [governor_mode:=off|advise|active] [governor_streams:=FILE_OR_YAML]
    [foxglove_port:=PORT]

Starts what edge_roofline.suite.spec.suite_plan names (the plan `edge-roofline up` starts too):
the nodes the parameter file configures (a path or a shipped file's name; default:
config/virtual_agx_orin.yaml), then the extras
of `with` (a whole demo on one machine: camera, console, Foxglove server), and with `record` a
Foxglove bridge that records every topic it forwards to an MCAP file. When the parameters point
a node at a virtual Jetson (platform: virtual:DEVICE, sysfs_root: DIR), the live virtual Jetson
is started first, as `edge-roofline up` does. Every process gets the shipped Fast DDS profile
(config/fastdds_localhost.xml: shared memory big enough for camera frames) unless a Fast DDS
profile variable is already set.
"""

import os
from pathlib import Path

from ament_index_python.packages import get_package_share_directory
from launch import LaunchDescription
from launch.actions import DeclareLaunchArgument, ExecuteProcess, OpaqueFunction, SetEnvironmentVariable
from launch.substitutions import LaunchConfiguration
from launch_ros.actions import Node
from launch_ros.parameter_descriptions import ParameterValue

from edge_roofline.paths import config_file
from edge_roofline.suite.spec import (ARGUMENTS, PACKAGE, SUITE_ARGUMENTS, argument_overrides, load_params,
                                      node_parameters, suite_plan, virtual_devices)
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
    value = {name: LaunchConfiguration(name).perform(context) for name in (*SUITE_ARGUMENTS, *ARGUMENTS)}
    value["params_file"] = str(config_file(value["params_file"]).resolve())  # as up --config: a name in config/ too
    params = load_params(value["params_file"])
    plan = suite_plan(params, extras=value["with"], record=value["record"], namespace=value["namespace"],
                      overrides=argument_overrides({arg: value[arg] for arg in ARGUMENTS}))
    actions = [ExecuteProcess(cmd=["edge-roofline", "virtual-jetson", "--device", device, "--root", root],
                              name=f"virtual_jetson_{device}", output="screen")
               for root, device in virtual_devices(params).items()]
    # The file as ROS reads it, then its section for the node (which ROS would not apply in a
    # namespace), then the arguments.
    actions += [Node(package=PACKAGE, executable=start.spec.executable, name=start.spec.name,
                     namespace=start.namespace,
                     parameters=[value["params_file"],
                                 _typed(node_parameters(params, start.spec.name, value["namespace"])),
                                 _typed(start.overrides)],
                     output="screen")
                for start in plan]
    return actions


def generate_launch_description():
    default_params = Path(get_package_share_directory(PACKAGE)) / "config" / "virtual_agx_orin.yaml"
    defaults = {"params_file": str(default_params)}
    return LaunchDescription([
        *_fastdds_profile(),
        *[DeclareLaunchArgument(name, default_value=defaults.get(name, ""), description=text)
          for name, text in SUITE_ARGUMENTS.items()],
        *[DeclareLaunchArgument(arg, default_value="", description=f"{help_text} (empty: the parameter file's)")
          for arg, (_, _, _, help_text) in ARGUMENTS.items()],
        OpaqueFunction(function=_nodes),
    ])
