"""What every node's boilerplate would otherwise repeat: parameters declared up front with
descriptors, and a main() that inits, spins and shuts down cleanly."""

from __future__ import annotations

import inspect
import re
import sys
from pathlib import Path

import rclpy
from rcl_interfaces.msg import ParameterDescriptor
from rclpy.exceptions import InvalidParameterTypeException, NameValidationException, ParameterException
from rclpy.executors import ExternalShutdownException
from rclpy.node import Node
from rclpy.parameter import Parameter

from edge_roofline.suite.env import default_fastdds_profile
from edge_roofline.suite.errors import is_user_error, one_line


class ParameterTypeError(ValueError):
    """A parameter given (file or -p) with another type than the node declares."""


def declare_parameters(node: Node, parameters: dict[str, tuple]) -> dict:
    """Declare ``{name: (default, description)}`` and return the values in force."""
    for name, (default, description) in parameters.items():
        try:
            node.declare_parameter(name, default, ParameterDescriptor(description=description))
        except InvalidParameterTypeException as exc:
            given = re.search(r" to '(.*)' of type '(\w+)'", str(exc))  # rclpy keeps no fields
            got = f"{given[1]!r} ({given[2].lower()})" if given else "of another type"
            raise ParameterTypeError(
                f"parameter {name} is {got}, expected {Parameter.Type.from_parameter_value(default).name.lower()} "
                f"like its default {default!r}: fix it in the parameter file or -p {name}:=VALUE") from None
    return {name: node.get_parameter(name).value for name in parameters}


def run_node(node_class: type[Node], argv: list[str] | None) -> int:
    """Init rclpy, build the node, spin until Ctrl-C/SIGTERM, shut down. A node that cannot
    start (bad parameters, unloadable model) prints one line, ``NODE: cannot start: why``, and
    exits 2; a bug keeps its traceback. ``destroy_node`` runs on every way out of a built node,
    an exception in a callback included, and never on a half-built one. Bad input is the
    package's own errors (edge_roofline.suite.errors) and rclpy's parameter and name errors. The
    shipped Fast DDS profile applies unless the user set one (`ros2 run` and launch included)."""
    executable = Path(inspect.getfile(node_class)).stem  # the name to report before the node has one
    default_fastdds_profile()
    try:
        rclpy.init(args=argv)
    except RuntimeError as exc:  # rcl's RCLError: --ros-args it cannot parse (rcl has logged where)
        print(f"{executable}: cannot start: {one_line(exc)}", file=sys.stderr)
        return 2
    node = node_class.__new__(node_class)
    try:
        node.__init__()
    except Exception as exc:
        # Half built: its own destroy_node would touch what was never made, and the context
        # would call it at shutdown. Only rclpy's part (if made) is destroyed.
        built = getattr(node, "handle", None) is not None
        name = node.get_name() if built else executable
        if built:
            Node.destroy_node(node)
        rclpy.try_shutdown()
        if not (is_user_error(exc) or isinstance(exc, (ParameterException, NameValidationException))):
            raise
        print(f"{name}: cannot start: {one_line(exc)}", file=sys.stderr)
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
    return getattr(node, "exit_code", 0)  # a node whose teardown failed its duty says so (governor)
