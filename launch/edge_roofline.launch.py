"""ros2 launch edge_roofline edge_roofline.launch.py [params_file:=FILE] [namespace:=NS]

Starts the nodes listed in edge_roofline.bringup.NODES (the same list `edge-roofline up` uses)
with one parameter file; by default the virtual AGX Orin configuration.
"""

from pathlib import Path

from ament_index_python.packages import get_package_share_directory
from launch import LaunchDescription
from launch.actions import DeclareLaunchArgument
from launch.substitutions import LaunchConfiguration
from launch_ros.actions import Node

from edge_roofline.bringup import NODES, PACKAGE


def generate_launch_description():
    share = Path(get_package_share_directory(PACKAGE))
    args = [
        DeclareLaunchArgument("params_file", default_value=str(share / "config" / "virtual_agx_orin.yaml"),
                              description="ROS 2 parameter file for all nodes (see config/)"),
        DeclareLaunchArgument("namespace", default_value="", description="namespace for all nodes"),
    ]
    nodes = [
        Node(package=PACKAGE, executable=spec.executable, name=spec.name,
             namespace=LaunchConfiguration("namespace"),
             parameters=[LaunchConfiguration("params_file")], output="screen")
        for spec in NODES
    ]
    return LaunchDescription(args + nodes)
