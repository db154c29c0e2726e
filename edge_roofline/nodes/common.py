"""What every node's boilerplate would otherwise repeat: parameters declared up front with
descriptors, and a main() that inits, spins and shuts down cleanly, whatever signals arrive."""

from __future__ import annotations

import difflib
import inspect
import logging
import math
import re
import sys
from pathlib import Path
from typing import Collection

import rclpy
from rcl_interfaces.msg import ParameterDescriptor, SetParametersResult
from rclpy.exceptions import (InvalidParameterTypeException, InvalidTopicNameException, NameValidationException,
                               ParameterException)
from rclpy.executors import ExternalShutdownException
from rclpy.logging import LoggingSeverity, get_logger
from rclpy.node import Node
from rclpy.parameter import Parameter
from rclpy.signals import SignalHandlerOptions
from rclpy.validate_topic_name import validate_topic_name

from edge_roofline.suite.env import default_fastdds_profile
from edge_roofline.suite.errors import is_user_error, one_line
from edge_roofline.suite.parameters import ROS_PARAMETERS, declared_parameters
from edge_roofline.suite.signals import StartInterrupted, StopSignals, ignore_stop_signals, start_signals


class ParameterError(ValueError):
    """A parameter given (file or -p) with another type than the node declares, a rate it cannot
    run at, or a topic that is no ROS name."""


def check_topic_name(topic: str, what: str, fix: str) -> None:
    """``topic`` a ROS topic name, or ParameterError naming ``what`` it is and ``fix``: rcl's own
    resolve fails on a bad one with a bare RCLError traceback."""
    try:
        validate_topic_name(topic)
    except InvalidTopicNameException as exc:
        why = str(exc).splitlines()[0].removeprefix("Invalid topic name: ").rstrip(": ")
        raise ParameterError(f"{what} {topic!r} is not a ROS topic name ({why}): {fix}") from None


def declare_parameters(node: Node, parameters: dict[str, tuple], runtime: Collection[str] = ()) -> dict:
    """Declare ``{name: (default, description)}`` and return the values in force. A parameter
    set after start (``ros2 param set``) is refused with the reason unless it is in ``runtime``,
    the names the node's own on-set callback applies: accepted, it would read as in force while
    the node kept what it read at start. A rate
    (``*_hz``) drives a timer or a sampler, so it must be finite and > 0 (rcl's timer would
    otherwise fail with its own traceback, or a NaN period spin); a duration (``*_s``) >= 0; a
    topic (``*_topic``, empty: off) a ROS name."""
    for name, (default, description) in parameters.items():
        try:
            node.declare_parameter(name, default, ParameterDescriptor(description=description))
        except InvalidParameterTypeException as exc:
            given = re.search(r" to '(.*)' of type '(\w+)'", str(exc))  # rclpy keeps no fields
            got = f"{given[1]!r} ({given[2].lower()})" if given else "of another type"
            raise ParameterError(
                f"parameter {name} is {got}, expected {Parameter.Type.from_parameter_value(default).name.lower()} "
                f"like its default {default!r}: fix it in the parameter file or -p {name}:=VALUE") from None
    _refuse_unknown(node, parameters)
    values = {name: node.get_parameter(name).value for name in parameters}
    for name, value in values.items():
        if name.endswith("_hz") and not (math.isfinite(value) and value > 0):
            raise ParameterError(f"parameter {name} must be a rate > 0 Hz, got {value}: fix it in the "
                                     f"parameter file or -p {name}:=VALUE")
        if name.endswith("_topic") and value:
            check_topic_name(value, f"parameter {name}", f"fix it in the parameter file or -p {name}:=/NAME")
        # A duration drives a timer or a wait: a negative or NaN one was rcl's or Python's traceback.
        if name.endswith("_s") and isinstance(value, float) and not value >= 0:
            raise ParameterError(f"parameter {name} must be a duration >= 0 s, got {value}: fix it in the "
                                 f"parameter file or -p {name}:=VALUE")
    node.add_on_set_parameters_callback(
        lambda params: start_only_refusal(node.get_name(), params, set(parameters) - set(runtime), runtime)
        or SetParametersResult(successful=True))
    return values


def start_only_refusal(node_name: str, params: list[Parameter], start_only: Collection[str],
                       runtime: Collection[str]) -> SetParametersResult | None:
    """The refusal of a runtime change to parameters a node reads at start only, naming them and
    what can change at runtime; None when ``params`` has none of them."""
    fixed = sorted({p.name for p in params} & set(start_only))
    if not fixed:
        return None
    switchable = f"switchable at runtime: {', '.join(sorted(runtime))}" if runtime else "none is switchable at runtime"
    return SetParametersResult(successful=False, reason=(
        f"{', '.join(fixed)}: read by {node_name} at start only ({switchable}); restart the node with "
        f"-p NAME:=VALUE or the parameter file"))


def _refuse_unknown(node: Node, parameters: dict[str, tuple]) -> None:
    """A parameter given (file or -p) that no node of the suite declares is a typo: rclpy would
    ignore it and leave the default in force. One another node declares passes (a ``/**``
    section sets each node's own from one list). The other nodes' tables (a scan of their files,
    ~30 ms) are read only where a parameter is not this node's."""
    foreign = set(node._parameter_overrides) - {*parameters, *ROS_PARAMETERS}  # rclpy keeps no public view of them
    if not foreign:
        return
    unknown = sorted(foreign - {name for table in declared_parameters().values() for name in table})
    if unknown:
        close = {name: difflib.get_close_matches(name, list(parameters), n=1) for name in unknown}
        fix = (f"did you mean {', '.join(repr(c[0]) for c in close.values())}?" if all(close.values())
               else f"{node.get_name()} has: {', '.join(sorted(parameters))}")
        raise ParameterError(f"unknown parameter(s) {', '.join(map(repr, unknown))}: {fix}; "
                             f"fix the parameter file or -p")


def _destroy_half_built(node: Node) -> None:
    """Only rclpy's part of a node whose __init__ did not finish (if made): its own destroy_node
    would touch what was never made."""
    if getattr(node, "handle", None) is not None:
        try:
            Node.destroy_node(node)
        except AttributeError:  # rclpy's own __init__ was cut short (a signal): the context's shutdown frees it
            pass


class NodeLog(logging.Handler):
    """The package's Python log records (a platform's "power rail X missing", a roofline's warning) as the node's
    own lines: with their severity and the node's name, and on /rosout, as every line the node logs itself;
    otherwise Python prints them bare on stderr, a warning that does not say it is one."""

    def __init__(self, node: Node, executable: str) -> None:
        super().__init__()
        self.node, self.executable = node, executable

    def emit(self, record: logging.LogRecord) -> None:
        try:
            logger = self.node.get_logger()
        except AttributeError:  # the node is not built yet: the name its start reports under
            logger = get_logger(self.executable)
        logger.log(self.format(record), LoggingSeverity(min(max(record.levelno // 10 * 10, 10), 50)))


def run_node(node_class: type[Node], argv: list[str] | None) -> int:
    """Init rclpy, build the node, spin until Ctrl-C/SIGTERM, shut down. A node that cannot
    start (bad parameters, unloadable model) prints one line, ``NODE: cannot start: why``, and
    exits 2; a bug keeps its traceback. Ctrl-C or SIGTERM while it starts ends it with 0 and one
    line. ``destroy_node`` runs on every way out of a built node, an exception in a callback
    included, and never on a half-built one. Signals (edge_roofline.suite.signals) never
    interrupt it, and rclpy's own handlers are not installed: they shut the context down at
    once, and the teardown's log lines (the governor's "restored ...") would find rosout gone.
    Bad input is the package's own errors (edge_roofline.suite.errors) and rclpy's parameter and
    name errors. The shipped Fast DDS profile applies unless the user set one (`ros2 run` and
    launch included)."""
    stop = start_signals()  # installed already where the entry point ran the node's imports
    try:
        return _run(node_class, argv, stop)
    finally:
        ignore_stop_signals()  # the process is ending: nothing may kill it while Python finalises


def _params_file_problem(exc: RuntimeError, argv: list[str] | None) -> str | None:
    """For a parameter file rcl cannot parse, the suite's check of it (``up`` runs the same):
    rcl names only a line of its parser ("Sequence should be of same type"), not the key."""
    rule = re.search(r"parameter override rule: '-p ([^:']+):=([\[{].*)'\. Error", str(exc))
    if rule and "{" in rule[2]:  # a mapping (the governor's streams): rcl says only "Unknown YAML event"
        return (f"-p {rule[1]}:={rule[2]} is a mapping, which a ROS parameter cannot hold: give it as YAML text in "
                f"quotes, -p \"{rule[1]}:='{rule[2]}'\", or a file's path")
    if "params file" not in str(exc):
        return None
    from edge_roofline.suite.spec import load_params
    args = list(sys.argv if argv is None else argv)
    for flag, path in zip(args, args[1:]):
        if flag == "--params-file":
            try:
                load_params(path)
            except (ValueError, OSError) as problem:
                return one_line(problem)
    return None


def _start_interrupt_in(exc: BaseException | None) -> StartInterrupted | None:
    """The StartInterrupted an exception was raised from or during, if any: a signal landing in a
    native module's import comes back as that module's ImportError."""
    seen = set()
    while exc is not None and id(exc) not in seen:
        if isinstance(exc, StartInterrupted):
            return exc
        seen.add(id(exc))
        exc = exc.__cause__ or exc.__context__
    return None


def _run(node_class: type[Node], argv: list[str] | None, stop: StopSignals) -> int:
    executable = Path(inspect.getfile(node_class)).stem  # the name to report before the node has one
    default_fastdds_profile()
    node = node_class.__new__(node_class)
    package_log, handler = logging.getLogger("edge_roofline"), NodeLog(node, executable)
    package_log.addHandler(handler)
    try:
        return _start_and_spin(node, executable, argv, stop)
    finally:  # a process that runs nodes one after another (tests) logs each record once, as its own node
        package_log.removeHandler(handler)


def _start_and_spin(node: Node, executable: str, argv: list[str] | None, stop: StopSignals) -> int:
    try:
        try:
            rclpy.init(args=argv, signal_handler_options=SignalHandlerOptions.NO)
        except RuntimeError as exc:  # rcl's RCLError: --ros-args it cannot parse (rcl has logged where)
            print(f"{executable}: cannot start: {_params_file_problem(exc, argv) or one_line(exc)}", file=sys.stderr)
            return 2
        try:
            node.__init__()
        except Exception as exc:
            if (interrupted := _start_interrupt_in(exc)) is not None:
                raise interrupted from None  # a library wrapped it (onnxruntime's import: "initialization failed")
            name = node.get_name() if getattr(node, "handle", None) is not None else executable
            _destroy_half_built(node)
            rclpy.try_shutdown()
            if not (is_user_error(exc) or isinstance(exc, (ParameterException, NameValidationException))):
                raise
            print(f"{name}: cannot start: {one_line(exc)}", file=sys.stderr)
            return 2
        stop.started()
    except StartInterrupted as exc:
        _destroy_half_built(node)
        rclpy.try_shutdown()
        print(f"{executable}: stopped by {exc} while starting", file=sys.stderr)
        return 0
    executor = rclpy.get_global_executor()
    try:
        executor.add_node(node)
        while not stop.requested and node.context.ok():  # a signal is seen within one timeout
            executor.spin_once(timeout_sec=0.1)
    except ExternalShutdownException:
        pass
    finally:
        executor.remove_node(node)
        node.destroy_node()
        rclpy.try_shutdown()
    return getattr(node, "exit_code", 0)  # a node whose teardown failed its duty says so (governor)
