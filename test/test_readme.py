"""The docs stay true: every node parameter is in docs/nodes.md, every CLI command is shown in
README or docs/."""

import importlib
from pathlib import Path

import pytest

from edge_roofline.cli import build_parser

REPO = Path(__file__).resolve().parent.parent
NODES_DOC = (REPO / "docs" / "nodes.md").read_text()
ALL_DOCS = "\n".join(p.read_text() for p in [REPO / "README.md", *sorted((REPO / "docs").glob("*.md"))])
NODES = ["inference", "power_monitor", "governor", "synthetic_camera", "console", "foxglove_bridge", "latency_probe",
         "generation"]


@pytest.mark.parametrize("node", NODES)
def test_every_node_parameter_is_documented(node):
    params = importlib.import_module(f"edge_roofline.nodes.{node}").PARAMETERS
    missing = [name for name in params if f"| `{name}` |" not in NODES_DOC]
    assert not missing, f"docs/nodes.md lacks {node} parameters {missing}"


def test_every_cli_command_is_shown():
    commands = build_parser()._subparsers._group_actions[0].choices
    missing = [c for c in commands if f"edge-roofline {c}" not in ALL_DOCS]
    assert not missing, f"README and docs/ never show edge-roofline {missing}"


def test_every_file_the_docs_name_exists():
    import re
    # Paths of this repository (not install paths such as share/edge_roofline/config/...).
    pattern = r"(?<![\w/~.-])((?:edge_roofline|test|benchmarks|scripts|config|launch)/[\w/.-]+\.(?:py|yaml|xml|json))"
    named = set(re.findall(pattern, ALL_DOCS))
    missing = sorted(p for p in named if not (REPO / p).exists())
    assert len(named) > 20 and not missing, f"README or docs/ name files that do not exist: {missing}"
