"""What the suite starts: the single source of truth shared by
``launch/edge_roofline.launch.py`` (``ros2 launch``) and ``edge-roofline up``/``demo`` (the same
processes without the ROS launch tools): the nodes a parameter file configures, the extras
(camera, console, Foxglove), a recording, and the arguments that override parameters.

Pure Python and ROS-free, so tests can check the node list against the executables and each
node's declared parameters.
"""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path

import yaml

from edge_roofline.paths import config_dirs
from edge_roofline.ros.topics import LLM_NAMESPACE, LLM_TYPES, POWER_TELEMETRY, TYPES
from edge_roofline.paths import read_text_file, yaml_problem
from edge_roofline.suite.parameters import check_parameter_file, settings_problem

PACKAGE = "edge_roofline"


@dataclass(frozen=True)
class NodeSpec:
    executable: str  # in lib/edge_roofline (ros2 run) and edge_roofline.nodes.<executable>
    name: str
    # A namespace of its own under the suite's (its inference/stats must not mix with the
    # inference node's), and the parameters naming suite topics it must then reach by full name.
    namespace: str = ""
    suite_topics: tuple[tuple[str, str], ...] = ()


# Stopped in reverse order: the governor first, so it restores the device while telemetry runs.
NODES = (
    NodeSpec("power_monitor", "power_monitor"),
    NodeSpec("inference", "inference"),
    NodeSpec("generation", "generation", namespace=LLM_NAMESPACE, suite_topics=(("power_topic", POWER_TELEMETRY),)),
    NodeSpec("governor", "governor"),
)

# What ``with:=a,b`` (ros2 launch) and ``--with a,b`` (up) add, for a whole demo on one machine:
# a test-pattern camera, the terminal summary, the Foxglove server. Their parameters come from
# the same file (a section named as the node), else the nodes' defaults.
EXTRAS = (
    NodeSpec("synthetic_camera", "synthetic_camera"),
    NodeSpec("console", "console"),
    NodeSpec("foxglove_bridge", "foxglove_bridge"),
)
BRIDGE = "foxglove_bridge"

# The launch file's arguments besides ARGUMENTS (up: --config, --with, --record; the namespace
# is launch's alone).
SUITE_ARGUMENTS = {
    "params_file": "ROS 2 parameter file for all nodes: a path, or the name of a shipped one (config/)",
    "namespace": "namespace for all nodes",
    "with": "comma-separated extra nodes: synthetic_camera, console, foxglove_bridge (as edge-roofline up --with)",
    "record": "record every topic the Foxglove bridge forwards to this MCAP file (adds a bridge that only "
              "records when with has none)",
}

# Launch arguments (``name:=value`` for ros2 launch, ``--name`` for edge-roofline up) that
# override one node parameter each (node, parameter, type, help); empty: the file's value.
ARGUMENTS = {
    "target_latency_ms": ("governor", "target_latency_ms", float, "governor latency target at its percentile (ms)"),
    "governor_mode": ("governor", "mode", str, "governor mode: off | advise | active"),
    "governor_streams": ("governor", "streams", str,
                         "governor streams: a YAML file, or a YAML list [{name: det, target_latency_ms: 30}, ...]"),
    "foxglove_port": (BRIDGE, "port", int, "Foxglove WebSocket port of the foxglove_bridge node (0: any free port)"),
}


@dataclass(frozen=True)
class Start:
    """One node to start: what, the parameters that override the file's, and its namespace (the
    suite's, or a namespace of its own under it)."""
    spec: NodeSpec
    overrides: dict
    namespace: str = ""


def extra_nodes(names: str | list[str] | tuple[str, ...]) -> tuple[NodeSpec, ...]:
    """The EXTRAS named (``"a,b"`` or a list), in the order given; one line for an unknown one."""
    if isinstance(names, str):
        names = [n.strip() for n in names.split(",")]
    known = {spec.name: spec for spec in EXTRAS}
    unknown = [n for n in names if n and n not in known]
    if unknown:
        raise ValueError(f"unknown extra node(s) {unknown}; choose from {', '.join(known)}")
    return tuple(dict.fromkeys(known[n] for n in names if n))


def suite_plan(params: dict[str, dict], *, extras=(), record: str | Path = "",
               overrides: dict[str, dict] | None = None, namespace: str = "") -> list[Start]:
    """Every node to start, in start order (stopped in reverse): the configured NODES, then the
    extras (``extra_nodes``). ``record``: an MCAP file the Foxglove bridge writes every topic it
    forwards to; without the bridge among the extras, one that only records is added (a second
    server would find the port taken). The one plan of ``ros2 launch`` and ``edge-roofline up``."""
    overrides = overrides or {}
    nodes = configured_nodes(params) + extra_nodes(extras)
    plan = [_start(spec, params, overrides.get(spec.name, {}), namespace) for spec in nodes]
    bridge = next((s for s in plan if s.spec.name == BRIDGE), None)
    if record:
        if bridge is None:
            bridge = _start(next(s for s in EXTRAS if s.name == BRIDGE), params,
                            {**overrides.get(BRIDGE, {}), "serve": False}, namespace)
            plan.append(bridge)
        bridge.overrides["mcap_path"] = str(Path(record).expanduser().resolve())
    # A language model's topics (in its own namespace) are forwarded too, unless the file names the topics.
    if bridge is not None and any(s.spec.namespace == LLM_NAMESPACE for s in plan) \
            and "topics" not in {**node_parameters(params, BRIDGE, namespace), **bridge.overrides}:
        bridge.overrides["topics"] = [*TYPES, *LLM_TYPES]
    return plan


def _start(spec: NodeSpec, params: dict[str, dict], overrides: dict, namespace: str) -> Start:
    """A node in a namespace of its own gets its section of the file as parameters (ROS would not
    apply a plain ``name:`` section there) and the suite topics it reads by their full names."""
    suite_ns = namespace.strip("/")
    if not spec.namespace:
        return Start(spec, dict(overrides), suite_ns)
    own = node_parameters(params, spec.name, suite_ns)
    topics = {param: "/" + "/".join(p for p in (suite_ns, topic) if p) for param, topic in spec.suite_topics
              if param not in own}
    return Start(spec, {**own, **topics, **overrides}, "/".join(p for p in (suite_ns, spec.namespace) if p))


def argument_overrides(values: dict[str, str | None]) -> dict[str, dict]:
    """{node_name: {param: value}} for the launch arguments given (non-empty), typed as the
    node declares them (a launch argument is a string; "20" would reach ROS as an integer) and
    checked as the node checks them (suite.parameters.SETTINGS_CHECKS)."""
    overrides: dict[str, dict] = {}
    for arg, value in values.items():
        if value in ("", None):
            continue
        node, param, kind, _ = ARGUMENTS[arg]
        try:
            overrides.setdefault(node, {})[param] = kind(value)
        except ValueError as exc:
            raise ValueError(f"{arg}: expected a {kind.__name__}, got {value!r}") from exc
        # Here, where the node would refuse it only after the suite had started around it.
        if (problem := settings_problem(node, {param: overrides[node][param]})) is not None:
            raise ValueError(f"{arg}: {problem}")
    return overrides


def load_params(path: str | Path) -> dict[str, dict]:
    """Read a ROS 2 parameter file (``node_name: {ros__parameters: {...}}``) into
    ``{node_name: {param: value}}``, with one clear line for malformed YAML, an unknown node or
    key, or a value of the wrong type."""
    path = Path(path)
    try:
        data = yaml.safe_load(read_text_file(path)) or {}
    except FileNotFoundError as exc:
        raise ValueError(f"parameter file {path} not found; pass an existing file "
                         f"(shipped ones are in {[str(d) for d in config_dirs()]})") from exc
    except yaml.YAMLError as exc:
        raise ValueError(f"parameter file {path} is {yaml_problem(exc)}") from None
    if not isinstance(data, dict):
        raise ValueError(f"parameter file {path}: top level must map node names to "
                         f"{{ros__parameters: ...}}, got {type(data).__name__}")
    params: dict[str, dict] = {}
    for node, body in data.items():
        node_params = (body or {}).get("ros__parameters") if isinstance(body, dict) else None
        if not isinstance(node_params, dict):
            raise ValueError(f"parameter file {path}: node {node!r} needs a 'ros__parameters' mapping")
        if beside := sorted(str(key) for key in body if key != "ros__parameters"):  # rcl refuses the file in every node
            raise ValueError(f"parameter file {path}: node {node!r} has {', '.join(beside)} beside ros__parameters; "
                             f"move it under ros__parameters")
        params[str(node).lstrip("/")] = flat_parameters(node_params)
    check_parameter_file(path, params)
    return params


def flat_parameters(values: dict, prefix: str = "") -> dict:
    """Nested mappings as ROS reads them: ``safety: {stale_telemetry_s: 1.0}`` is the parameter
    ``safety.stale_telemetry_s``."""
    out = {}
    for key, value in values.items():
        if isinstance(value, dict):
            out.update(flat_parameters(value, f"{prefix}{key}."))
        else:
            out[f"{prefix}{key}"] = value
    return out


def node_parameters(params: dict[str, dict], name: str, namespace: str = "") -> dict:
    """What a parameter file sets for node ``name`` started in ``namespace``: its ``/**``
    section, its own, and one under the namespace's name. ROS itself matches a plain ``name:``
    section only to a node outside any namespace, so ``namespace:=robot1`` would otherwise start
    every node on its defaults."""
    qualified = f"{namespace.strip('/')}/{name}".strip("/")
    return {**params.get("**", {}), **params.get(name, {}), **params.get(qualified, {})}


def configured_nodes(params: dict[str, dict]) -> tuple[NodeSpec, ...]:
    """The NODES the parameter file configures: a file without a ``governor`` section (the host
    CPU demo: nothing to govern) starts no governor. A file that configures none of them is a
    mistake (an empty file, a typo in every section name, only a ``/**`` section), not a suite of
    nothing: refused."""
    nodes = tuple(spec for spec in NODES if spec.name in params)
    if not nodes:
        raise ValueError(f"the parameter file configures none of the suite's nodes "
                         f"({', '.join(spec.name for spec in NODES)}): give each node to start a section "
                         f"(NODE: ros__parameters: ...), as the shipped config/virtual_agx_orin.yaml does")
    return nodes


def virtual_devices(params: dict[str, dict]) -> dict[str, str]:
    """{sysfs_root: device_key} of the virtual Jetsons the nodes' parameters point at."""
    found = {}
    for node_params in params.values():
        platform = str(node_params.get("platform", ""))
        if platform.startswith("virtual:"):
            root = str(node_params.get("sysfs_root", ""))
            if root in ("", "/"):
                raise ValueError(f"platform {platform} needs sysfs_root: the directory the virtual Jetson renders")
            device = platform.split(":", 1)[1]
            if found.setdefault(root, device) != device:  # one tree, one board: the last would win in silence
                raise ValueError(f"sysfs_root {root} is given to virtual:{found[root]} and to {platform}: one "
                                 f"virtual Jetson per root; give each device its own sysfs_root, or one device")
    return found
