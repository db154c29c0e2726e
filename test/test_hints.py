"""Every hint the code prints exists (issue 23, finding 6), parsed against the real CLI and the
nodes' parameters as test_readme_commands.py parses the README's commands:

- ``edge-roofline SUB --flag VALUE`` in a message: SUB is a subcommand, each flag is one of its
  options and a value for an option with choices is one of them (``edge-roofline --platform
  nvml|cpu`` was printed: no such flag);
- a bare ``--flag`` (no command named with it) only where a command, not a node, prints it, and
  only as an option of a command that reaches that code ("--backend ort" reached a node: its
  parameter is ``-p backend:=ort``);
- ``-p NAME:=VALUE`` and ``NAME:=VALUE``: NAME is a parameter a node declares (that node's, in a
  node's own module) or a launch argument;
- ``docs/NAME.md``: the file exists.

A message is a string or f-string literal with a space and no newline, outside docstrings (an
argparse option name or a script is not a message); f-string fields read as placeholders."""

from __future__ import annotations

import ast
import importlib
import re
import shlex

import pytest

from edge_roofline.cli import build_parser
from test.test_layers import MODULES, REPO, internal_edges
from test.test_readme_commands import LAUNCH_ARGUMENTS

ARG = "\x00"  # an f-string field
ROS_FLAGS = {"--ros-args", "--params-file"}
NODE_MODULES = {m for m in MODULES if m.startswith("edge_roofline.nodes.") and "def main(" in MODULES[m].read_text()}
COMMAND_MODULES = {m for m in MODULES if m.startswith("edge_roofline.commands.") and not m.endswith("__init__")
                   and "def add_arguments(" in MODULES[m].read_text()}
COMMAND = re.compile(r"edge-roofline ([^\s`();,]+)((?: +[^`();,]+?)?)(?=[`();,]|$| [a-z]+ (?:or|and|to) )")
BARE_FLAG = re.compile(r"(?<![\w-])(--[a-z][\w-]*)")
ASSIGNMENT = re.compile(r"(-p )?(?<![\w_])([a-z][a-z0-9_]*):=")
DOC = re.compile(r"docs/[\w-]+\.md")


def messages(module: str) -> list[tuple[int, str]]:
    tree = ast.parse(MODULES[module].read_text())
    skip = set()
    for node in ast.walk(tree):
        body = getattr(node, "body", None)
        if isinstance(node, (ast.Module, ast.ClassDef, ast.FunctionDef, ast.AsyncFunctionDef)) and body \
                and isinstance(body[0], ast.Expr) and isinstance(body[0].value, ast.Constant):
            skip.add(id(body[0].value))  # a docstring is not printed
        if isinstance(node, ast.JoinedStr):
            skip.update(id(v) for v in node.values)  # parts of an f-string: read with it
    found = []
    for node in ast.walk(tree):
        if isinstance(node, ast.JoinedStr):
            text = "".join(v.value if isinstance(v, ast.Constant) else ARG for v in node.values)
        elif isinstance(node, ast.Constant) and isinstance(node.value, str) and id(node) not in skip:
            text = node.value
        else:
            continue
        if " " in text and "\n" not in text:
            found.append((node.lineno, text))
    return found


def _reachers() -> dict[str, set[str]]:
    """module -> the node and command modules that reach it (imports, function-local ones too,
    and modules named in strings, as the factories load their implementations)."""
    graph = {m: set() for m in MODULES}
    for module, target, _ in internal_edges():
        if target in MODULES:
            graph[module].add(target)
    for module, path in MODULES.items():
        graph[module] |= {t for t in re.findall(r"edge_roofline(?:\.\w+)+", path.read_text()) if t in MODULES}
    reached: dict[str, set[str]] = {m: set() for m in MODULES}
    for entry in NODE_MODULES | COMMAND_MODULES:
        todo, seen = [entry], set()
        while todo:
            m = todo.pop()
            if m not in seen:
                seen.add(m)
                reached[m].add(entry)
                todo += graph[m]
    return reached


REACHERS = _reachers()
SUBPARSERS = next(a for a in build_parser()._actions if a.dest == "command").choices
ALL_PARAMETERS = {name: set(importlib.import_module(m).PARAMETERS) for name, m in
                  ((m.rsplit(".", 1)[1], m) for m in NODE_MODULES)
                  if hasattr(importlib.import_module(m), "PARAMETERS")}


def command_problems(text: str) -> tuple[list[str], list[tuple[int, int]]]:
    """Problems with the ``edge-roofline ...`` commands in ``text``, and their spans."""
    problems, spans = [], []
    top = {s for a in build_parser()._actions for s in a.option_strings}
    for match in COMMAND.finditer(text):
        spans.append(match.span())
        sub, rest = match.group(1), match.group(2)
        if sub.startswith("-"):
            if sub not in top:
                problems.append(f"`edge-roofline {sub}`: the CLI has no top-level option {sub} (it has {sorted(top)})")
            continue
        if ARG in sub or sub.endswith(":"):  # "edge-roofline {cmd}: error", a page title
            continue
        if sub not in SUBPARSERS:
            problems.append(f"`edge-roofline {sub}`: no such subcommand (known: {sorted(SUBPARSERS)})")
            continue
        options = SUBPARSERS[sub]._option_string_actions
        words = shlex.split(rest.replace("'", "")) if rest.strip() else []
        for i, word in enumerate(words):
            flag = word.split("=", 1)[0]
            if not flag.startswith("--"):
                continue
            if flag not in options:
                problems.append(f"`edge-roofline {sub} {flag}`: {sub} has no option {flag}")
                continue
            choices = options[flag].choices
            value = word.split("=", 1)[1] if "=" in word else (words[i + 1] if i + 1 < len(words) else "")
            if choices and value and ARG not in value and value.isidentifier() and value not in choices:
                problems.append(f"`edge-roofline {sub} {flag} {value}`: not one of {list(choices)}")
    return problems, spans


def hint_problems(module: str, text: str) -> list[str]:
    problems, spans = command_problems(text)
    reachers = REACHERS[module]
    nodes = {m for m in reachers if m in NODE_MODULES}
    commands = {m for m in reachers if m in COMMAND_MODULES}
    for match in BARE_FLAG.finditer(text):
        flag = match.group(1)
        if flag in ROS_FLAGS or any(a <= match.start() < b for a, b in spans):
            continue
        if nodes or module in NODE_MODULES:
            problems.append(f"{flag} where a node prints it ({sorted(n.rsplit('.', 1)[1] for n in nodes)}): a "
                            f"node has parameters (-p NAME:=VALUE), not flags; or name the command: "
                            f"`edge-roofline SUB {flag}`")
            continue
        names = {m.rsplit(".", 1)[1].replace("_", "-") for m in commands}
        if not any(flag in SUBPARSERS[n]._option_string_actions for n in names if n in SUBPARSERS):
            problems.append(f"{flag} is an option of none of the commands printing this ({sorted(names)})")
    own = module.rsplit(".", 1)[1] if module in NODE_MODULES else None
    for match in ASSIGNMENT.finditer(text):
        name = match.group(2)
        allowed = ALL_PARAMETERS.get(own) if own in ALL_PARAMETERS else set().union(*ALL_PARAMETERS.values())
        if name not in allowed and (match.group(1) or name not in LAUNCH_ARGUMENTS):
            problems.append(f"{name}:= is a parameter of no node{' ' + own if own else ''} "
                            f"(nor a launch argument)")
    problems += [f"{doc} does not exist" for doc in DOC.findall(text) if not (REPO / doc).exists()]
    return problems


HINTS = [(module, line, text) for module in sorted(MODULES) for line, text in messages(module)
         if COMMAND.search(text) or BARE_FLAG.search(text) or ASSIGNMENT.search(text) or DOC.search(text)]


def test_there_are_hints_to_check():
    assert len(HINTS) >= 30
    assert REACHERS["edge_roofline.backends.tensorrt_backend"] & NODE_MODULES  # found through BACKENDS' strings


@pytest.mark.parametrize("module,line,text", HINTS, ids=[f"{m.split('.', 1)[1]}:{n}" for m, n, _ in HINTS])
def test_every_printed_hint_exists(module, line, text):
    problems = hint_problems(module, text)
    assert not problems, f"{MODULES[module].relative_to(REPO)}:{line}: {text.replace(ARG, '{...}')!r}: " + \
        "; ".join(problems)


@pytest.mark.parametrize("module,text", [
    ("edge_roofline.platforms.jetson.identify", "use the NVML or CPU platform (edge-roofline --platform nvml|cpu)"),
    ("edge_roofline.backends.tensorrt_backend", "elsewhere use --backend ort or virtual"),
    ("edge_roofline.nodes.inference", "set -p modle:=zoo:tiny_cnn"),
    ("edge_roofline.commands.profile", "run `edge-roofline profile MODEL --backend onnx`"),
    ("edge_roofline.commands.profile", "run `edge-roofline sweeep MODEL`"),
    ("edge_roofline.commands.profile", "see docs/no_such_page.md"),
    ("edge_roofline.characterise.store", "pass --no-such-flag to continue"),
])
def test_the_checks_can_fail(module, text):
    assert hint_problems(module, text)
