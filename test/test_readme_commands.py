"""Every command the README and docs/ show still parses against the code: `edge-roofline` lines
through the CLI's own parser, `ros2 run/param set` lines against the node's declared parameters,
`ros2 launch` arguments against the launch file's, `make` targets against the Makefile."""

import importlib
import re
import shlex
from pathlib import Path

import pytest

from edge_roofline.suite.spec import ARGUMENTS, SUITE_ARGUMENTS
from edge_roofline.cli import build_parser

REPO = Path(__file__).resolve().parent.parent
DOCS = [REPO / "README.md", *sorted((REPO / "docs").glob("*.md"))]
LAUNCH_ARGUMENTS = {*SUITE_ARGUMENTS, *ARGUMENTS}
LAUNCH_OPTIONS = {"--show-args", "-s"}


def shown_commands(path: Path) -> list[str]:
    """Command lines inside ``` blocks (continuations joined, comments and prompts dropped)."""
    commands, block, pending = [], False, ""
    for line in path.read_text().splitlines():
        if line.startswith("```"):
            block, pending = not block, ""
            continue
        if not block:
            continue
        line = pending + re.sub(r"^\s*\$ ", "", line).split("  #")[0].split(" # ")[0]
        if line.rstrip().endswith("\\"):
            pending = line.rstrip()[:-1] + " "
            continue
        pending = ""
        for part in line.split("&&"):
            part = part.strip()
            if re.match(r"^(edge-roofline|ros2|make) ", part) and " [" not in part:  # not a usage synopsis
                commands.append(part)
    return commands


COMMANDS = [(path.relative_to(REPO), cmd) for path in DOCS for cmd in shown_commands(path)]


def node_parameters(node: str) -> dict:
    return importlib.import_module(f"edge_roofline.nodes.{node}").PARAMETERS


def ros_args_parameters(words: list[str]) -> list[str]:
    return [words[i + 1].split(":=")[0] for i, w in enumerate(words[:-1]) if w == "-p"]


def check(cmd: str) -> None:
    words = shlex.split(cmd)
    if words[0] == "edge-roofline":
        try:
            build_parser().parse_args(words[1:])
        except SystemExit as exc:
            raise AssertionError(f"the CLI rejects {cmd!r}") from exc
    elif words[:2] == ["ros2", "run"]:
        assert words[2] == "edge_roofline", cmd
        params = node_parameters(words[3])
        unknown = [p for p in ros_args_parameters(words) if p not in params]
        assert not unknown, f"{words[3]} declares no parameter {unknown}: {cmd!r}"
    elif words[:3] == ["ros2", "param", "set"]:
        node, param = words[3].rsplit("/", 1)[-1], words[4]
        assert param in node_parameters(node), f"{node} declares no parameter {param!r}: {cmd!r}"
    elif words[:2] == ["ros2", "launch"]:
        assert words[2:4] == ["edge_roofline", "edge_roofline.launch.py"], cmd
        unknown = [w.split(":=")[0] for w in words[4:]
                   if w.split(":=")[0] not in LAUNCH_ARGUMENTS and w not in LAUNCH_OPTIONS]
        assert not unknown, f"the launch file has no argument {unknown}: {cmd!r}"
    elif words[0] == "make":
        targets = re.findall(r"^([\w-]+):", (REPO / "Makefile").read_text(), re.MULTILINE)
        assert words[1] in targets, f"the Makefile has no target {words[1]!r}"


def test_the_readme_shows_commands():
    assert sum(1 for path, _ in COMMANDS if path.name == "README.md") >= 5


@pytest.mark.parametrize("path,cmd", COMMANDS, ids=[f"{p}:{c[:60]}" for p, c in COMMANDS])
def test_shown_command_parses(path, cmd):
    check(cmd)


def test_the_checks_can_fail():
    for wrong in ("edge-roofline sweep --no-such-flag", "ros2 run edge_roofline inference --ros-args -p modle:=x",
                  "ros2 param set /governor no_such 1", "ros2 launch edge_roofline edge_roofline.launch.py x:=1",
                  "make no-such-target"):
        with pytest.raises(AssertionError):
            check(wrong)
