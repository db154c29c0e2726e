"""ros2 launch edge_roofline edge_roofline.launch.py [params_file:=FILE] [namespace:=NS]

Starts the nodes listed in edge_roofline.bringup.NODES (the same list `edge-roofline up` uses)
with one parameter file (default: config/virtual_agx_orin.yaml). When the parameters point a
node at a virtual Jetson (platform: virtual:DEVICE, sysfs_root: DIR), the live virtual Jetson
is started first, as `edge-roofline up` does.
"""

from pathlib import Path

from ament_index_python.packages import get_package_share_directory
from launch import LaunchDescription
from launch.actions import DeclareLaunchArgument, ExecuteProcess, OpaqueFunction
from launch.substitutions import LaunchConfiguration
from launch_ros.actions import Node

from edge_roofline.bringup import NODES, PACKAGE, load_params, virtual_devices


def _nodes(context):
    params_file = LaunchConfiguration("params_file").perform(context)
    namespace = LaunchConfiguration("namespace").perform(context)
    actions = [ExecuteProcess(cmd=["edge-roofline", "virtual-jetson", "--device", device, "--root", root],
                              output="screen")
               for root, device in virtual_devices(load_params(params_file)).items()]
    actions += [Node(package=PACKAGE, executable=spec.executable, name=spec.name, namespace=namespace,
                     parameters=[params_file], output="screen") for spec in NODES]
    return actions


def generate_launch_description():
    share = Path(get_package_share_directory(PACKAGE))
    return LaunchDescription([
        DeclareLaunchArgument("params_file", default_value=str(share / "config" / "virtual_agx_orin.yaml"),
                              description="ROS 2 parameter file for all nodes (see config/)"),
        DeclareLaunchArgument("namespace", default_value="", description="namespace for all nodes"),
        OpaqueFunction(function=_nodes),
    ])
