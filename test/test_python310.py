"""Humble on JetPack 6 runs Python 3.10 (Ubuntu 22.04); this machine has only 3.11. Best effort
without a 3.10 interpreter: the code parses with 3.10's grammar, and imports no standard-library
module or name that arrived in 3.11 or later."""

import ast
from pathlib import Path

import pytest

REPO = Path(__file__).resolve().parent.parent
SOURCES = sorted([*(REPO / "edge_roofline").rglob("*.py"), *(REPO / "launch").glob("*.py"), REPO / "setup.py"])
# Standard library added in 3.11+ that code in this package might reach for.
NEW_MODULES = {"tomllib", "wsgiref.types"}
NEW_NAMES = {("datetime", "UTC"), ("enum", "StrEnum"), ("enum", "verify"), ("typing", "Self"),
             ("typing", "LiteralString"), ("typing", "Never"), ("typing", "assert_never"),
             ("typing", "reveal_type"), ("typing", "Required"), ("typing", "NotRequired"),
             ("typing", "override"), ("asyncio", "TaskGroup"), ("asyncio", "timeout"),
             ("hashlib", "file_digest"), ("operator", "call")}


def problems_in(source: str) -> list[str]:
    try:
        tree = ast.parse(source, feature_version=(3, 10))
    except SyntaxError as exc:
        return [f"line {exc.lineno}: not Python 3.10 syntax: {exc.msg}"]
    found = []
    for node in ast.walk(tree):
        if isinstance(node, ast.Import):
            found += [f"line {node.lineno}: import {a.name}" for a in node.names if a.name in NEW_MODULES]
        elif isinstance(node, ast.ImportFrom) and node.module:
            if node.module in NEW_MODULES:
                found.append(f"line {node.lineno}: from {node.module} import")
            found += [f"line {node.lineno}: from {node.module} import {a.name}" for a in node.names
                      if (node.module, a.name) in NEW_NAMES]
        elif isinstance(node, ast.Attribute) and isinstance(node.value, ast.Name):
            if (node.value.id, node.attr) in NEW_NAMES:
                found.append(f"line {node.lineno}: {node.value.id}.{node.attr}")
        elif isinstance(node, ast.TryStar):
            found.append(f"line {node.lineno}: except*")
    return found


def test_checker_sees_311_code():
    assert problems_in("import tomllib\n")
    assert problems_in("from typing import Self\n")
    assert problems_in("import datetime\nnow = datetime.datetime.now(datetime.UTC)\n")
    assert problems_in("try:\n    pass\nexcept* ValueError:\n    pass\n")
    assert not problems_in("from __future__ import annotations\nx: int | None = None\n")


@pytest.mark.parametrize("path", SOURCES, ids=lambda p: str(p.relative_to(REPO)))
def test_source_is_python310_compatible(path):
    assert not problems_in(path.read_text()), problems_in(path.read_text())
