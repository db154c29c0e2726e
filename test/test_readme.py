"""README stays true: every node parameter and every CLI command is documented."""

import importlib
from pathlib import Path

import pytest

from edge_roofline.cli import build_parser

README = (Path(__file__).resolve().parent.parent / "README.md").read_text()
NODES = ["inference", "power_monitor", "governor", "synthetic_camera", "console", "foxglove_bridge", "latency_probe"]


@pytest.mark.parametrize("node", NODES)
def test_every_node_parameter_is_in_the_readme(node):
    params = importlib.import_module(f"edge_roofline.nodes.{node}").PARAMETERS
    missing = [name for name in params if f"| `{name}` |" not in README]
    assert not missing, f"README lacks {node} parameters {missing}"


def test_every_cli_command_is_in_the_readme():
    commands = build_parser()._subparsers._group_actions[0].choices
    missing = [c for c in commands if f"edge-roofline {c}" not in README]
    assert not missing, f"README never shows edge-roofline {missing}"
