"""What every node's boilerplate would otherwise repeat: parameters declared up front with
descriptors, and a main() that inits, spins and shuts down cleanly."""

from __future__ import annotations

import sys
from typing import Callable

import rclpy
from rcl_interfaces.msg import ParameterDescriptor
from rclpy.executors import ExternalShutdownException
from rclpy.node import Node

from edge_roofline.rosenv import default_fastdds_profile


def declare_parameters(node: Node, parameters: dict[str, tuple]) -> dict:
    """Declare ``{name: (default, description)}`` and return the values in force."""
    for name, (default, description) in parameters.items():
        node.declare_parameter(name, default, ParameterDescriptor(description=description))
    return {name: node.get_parameter(name).value for name in parameters}


def run_node(factory: Callable[[], Node], argv: list[str] | None, startup_errors: tuple = (ValueError,)) -> int:
    """Init rclpy, build the node, spin until Ctrl-C/SIGTERM, shut down. A node that cannot
    start (bad parameters, unloadable model) prints why and exits 2 instead of a traceback.
    ``destroy_node`` runs on every way out, an exception in a callback included. The shipped Fast
    DDS profile applies unless the user set one (`ros2 run` and launch included)."""
    default_fastdds_profile()
    rclpy.init(args=argv)
    try:
        node = factory()
    except startup_errors as exc:
        print(f"{getattr(factory, '__name__', 'node')}: {exc}", file=sys.stderr)
        rclpy.try_shutdown()
        return 2
    try:
        rclpy.spin(node)
    except (KeyboardInterrupt, ExternalShutdownException):
        pass
    except RuntimeError:
        # SIGTERM shuts the context down; an executor building its wait set at that instant
        # raises RCLError instead of ExternalShutdownException. Only then is it not an error.
        if node.context.ok():
            raise
    finally:
        node.destroy_node()
        rclpy.try_shutdown()
    return 0
