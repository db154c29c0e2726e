"""What the suite starts: the single source of truth shared by
``launch/edge_roofline.launch.py`` (``ros2 launch``) and ``edge-roofline up`` (machines without
the ROS launch tools).

Pure Python and ROS-free, so tests can check the node list against the executables and each
node's declared parameters.
"""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path

import yaml

from edge_roofline.paths import config_dirs

PACKAGE = "edge_roofline"


@dataclass(frozen=True)
class NodeSpec:
    executable: str  # in lib/edge_roofline (ros2 run) and edge_roofline.nodes.<executable>
    name: str


NODES = (
    NodeSpec("power_monitor", "power_monitor"),
    NodeSpec("inference", "inference"),
    NodeSpec("governor", "governor"),
)


def load_params(path: str | Path) -> dict[str, dict]:
    """Read a ROS 2 parameter file (``node_name: {ros__parameters: {...}}``) into
    ``{node_name: {param: value}}``, with a clear error for malformed YAML."""
    path = Path(path)
    try:
        data = yaml.safe_load(path.read_text()) or {}
    except FileNotFoundError as exc:
        raise ValueError(f"parameter file {path} not found; pass an existing file "
                         f"(shipped ones are in {[str(d) for d in config_dirs()]})") from exc
    except yaml.YAMLError as exc:
        raise ValueError(f"parameter file {path} is not valid YAML: {exc}") from exc
    if not isinstance(data, dict):
        raise ValueError(f"parameter file {path}: top level must map node names to "
                         f"{{ros__parameters: ...}}, got {type(data).__name__}")
    params: dict[str, dict] = {}
    for node, body in data.items():
        node_params = (body or {}).get("ros__parameters") if isinstance(body, dict) else None
        if not isinstance(node_params, dict):
            raise ValueError(f"parameter file {path}: node {node!r} needs a 'ros__parameters' mapping")
        params[str(node).lstrip("/")] = node_params
    return params
