"""A parameter file checked against what the nodes declare, before anything starts: an unknown
node, an unknown key or a value of the wrong type is refused with one line naming the file, the
key and the allowed ones (ROS itself would ignore the first two and fail the node on the third);
then a node's values by the node's own check where it has one (SETTINGS_CHECKS: the governor's
and the inference node's), which the node would otherwise run only once the suite had started
around it.

What a node declares is its module-level ``PARAMETERS`` table in ``edge_roofline/nodes/NODE.py``,
read here with ``ast`` so that checking a file needs neither rclpy nor the nodes' imports (a
table the node imports comes from an rclpy-free module: the governor's, from GovernorConfig);
the table stays the one source. A default that is not a literal leaves that key's type to the
node, which refuses a wrong one at start on one line too."""

from __future__ import annotations

import ast
import difflib
import functools
import importlib
from pathlib import Path

from edge_roofline.governor.node_parameters import node_config
from edge_roofline.inference.config import check_settings as check_inference_settings

NODES_DIR = Path(__file__).resolve().parent.parent / "nodes"
# A node's own check of its values (rclpy-free), where it has one: what the node would refuse at
# start is refused with the file and the arguments, before the suite starts anything around it.
SETTINGS_CHECKS = {"governor": node_config, "inference": check_inference_settings}
# Declared by rclpy itself on every node.
ROS_PARAMETERS = {"use_sim_time": False, "start_type_description_service": True}
UNCHECKED = ...  # a default that is not a literal: the type is left to the node
TYPE_NAMES = {bool: "bool", int: "integer", float: "double", str: "string", list: "list"}


class ParameterFileError(ValueError):
    """A parameter file that names an unknown node or key, or gives a value of the wrong type."""


def _default(entry: ast.expr):
    """The default of a ``(default, description)`` entry, as a value to compare types with."""
    node = entry.elts[0] if isinstance(entry, ast.Tuple) and entry.elts else entry
    try:
        return ast.literal_eval(node)
    except ValueError:
        is_list = isinstance(node, ast.Call) and isinstance(node.func, ast.Name) and node.func.id == "list"
        return [] if is_list else UNCHECKED  # list(...): a list whose items are not checked


@functools.cache
def declared_parameters() -> dict[str, dict]:
    """{node: {parameter: default}} for every node module with a PARAMETERS table."""
    nodes = {}
    for path in sorted(NODES_DIR.glob("*.py")):
        for stmt in ast.parse(path.read_text()).body:
            if (isinstance(stmt, ast.Assign) and isinstance(stmt.value, ast.Dict)
                    and any(isinstance(t, ast.Name) and t.id == "PARAMETERS" for t in stmt.targets)):
                nodes[path.stem] = {ast.literal_eval(k): _default(v)
                                    for k, v in zip(stmt.value.keys, stmt.value.values)}
            elif (isinstance(stmt, ast.ImportFrom) and stmt.level == 0
                  and any(a.name == "PARAMETERS" and not a.asname for a in stmt.names)):
                # A table derived elsewhere (the governor's, from GovernorConfig): that module is
                # rclpy-free by the core's rule, so importing it is cheap.
                table = importlib.import_module(stmt.module).PARAMETERS
                nodes[path.stem] = {name: default for name, (default, _) in table.items()}
    return nodes


def _kind(value) -> str:
    return TYPE_NAMES.get(type(value), type(value).__name__)


def _type_problem(key: str, value, default) -> str | None:
    """Why ``value`` cannot set a parameter declared with ``default`` (rclpy's rules: no int->double)."""
    if default is UNCHECKED:
        return None
    if isinstance(default, list):
        item_types = {type(v) for v in default}
        if isinstance(value, list) and all(not item_types or type(v) in item_types for v in value):
            return None
        expected = f"a list of {_kind(default[0])}" if default else "a list"
    elif type(value) is type(default):
        return None
    else:
        expected = _kind(default)
    hint = f" (write {value}.0: ROS does not turn integers into doubles)" if (
        type(value) is int and type(default) is float) else ""
    if isinstance(default, str) and isinstance(value, (list, dict)):  # the governor's streams
        hint = " (a ROS parameter holds no mappings: write it as YAML text in quotes, or a file's path)"
    return f"{key} is {value!r} ({_kind(value)}), expected {expected} like its default {default!r}{hint}"


def _unknown(name: str, allowed, what: str) -> str:
    close = difflib.get_close_matches(name, allowed, n=1)
    return f"unknown {what} {name!r}{f' (did you mean {close[0]!r}?)' if close else ''}; allowed: {', '.join(allowed)}"


def check_parameter_file(path: str | Path, params: dict[str, dict]) -> None:
    """Raise ParameterFileError listing every unknown node, unknown key and wrongly typed value in
    ``params`` ({node name: {parameter: value}}, as read from ``path``). A node name may carry a
    namespace (``/ns/inference``); a wildcard (``/**``) is checked against every node's keys."""
    declared = declared_parameters()
    problems = []
    for name, values in params.items():
        node = name.rsplit("/", 1)[-1]
        if "*" in node:
            allowed = {k: v for table in declared.values() for k, v in table.items()}
        elif node in declared:
            allowed = declared[node]
        else:
            problems.append(_unknown(name, sorted(declared), "node"))
            continue
        allowed = {**allowed, **ROS_PARAMETERS}
        for key, value in values.items():
            if key not in allowed:
                problems.append(f"{name}: " + _unknown(key, sorted(allowed), "key"))
            elif (problem := _type_problem(key, value, allowed[key])) is not None:
                problems.append(f"{name}: {problem}")
    if not problems:  # keys and types right: the values, as the nodes themselves check them
        for name, values in params.items():
            node = name.rsplit("/", 1)[-1]
            if (problem := settings_problem(node, {**params.get("**", {}), **values})) is not None:
                problems.append(f"{name}: {problem}")
    if problems:
        raise ParameterFileError(f"parameter file {path}: " + "; ".join(problems))


def settings_problem(node: str, values: dict) -> str | None:
    """What ``node``'s own check (SETTINGS_CHECKS) refuses among ``values`` (its parameters by
    name, the others at their defaults); None when nothing is, or the node has no check."""
    try:
        SETTINGS_CHECKS.get(node, lambda _: None)({**declared_parameters().get(node, {}), **values})
    except ValueError as exc:
        return str(exc)
    return None
