"""JetPack 7 (Jetson AGX Thor, and Orin on 7.2) is Ubuntu 24.04 with Python 3.12 and ROS 2 Jazzy
from apt; Humble on JetPack 6 is Python 3.10; this venv is 3.11. Two checks:

- statically, the code imports nothing Python 3.12 removed (distutils, imp, asyncore, ...) nor a
  name it removed (test_python310.py keeps 3.11+ additions out, for 3.10);
- where a 3.12 or 3.10 interpreter exists on this machine (``EDGE_ROOFLINE_PYTHON312`` /
  ``EDGE_ROOFLINE_PYTHON310``, ``python3.12`` / ``python3.10`` on PATH, or pyenv's versions),
  every source file is compiled by it: its own grammar, not an emulation. Without one the test
  skips and says so.

docs/packaging.md says what else ran on 3.12 here and what never ran.
"""

from __future__ import annotations

import ast
import glob
import os
import shutil
import subprocess
from pathlib import Path

import pytest

REPO = Path(__file__).resolve().parent.parent
SOURCES = sorted([*(REPO / "edge_roofline").rglob("*.py"), *(REPO / "launch").glob("*.py"), REPO / "setup.py",
                  *(REPO / "scripts").glob("*.py")])
REMOVED_IN_312 = {"distutils", "imp", "asynchat", "asyncore", "smtpd"}
REMOVED_NAMES_312 = {("configparser", "SafeConfigParser"), ("configparser", "readfp"), ("ssl", "wrap_socket"),
                     ("ssl", "match_hostname"), ("pkgutil", "ImpImporter"), ("pkgutil", "ImpLoader"),
                     ("locale", "format"), ("unittest", "findTestCases"), ("unittest", "makeSuite"),
                     ("unittest", "getTestCaseNames"), ("gzip", "GzipFile.filename")}


def problems_for_312(source: str) -> list[str]:
    tree = ast.parse(source)
    # setuptools re-provides distutils once imported (its _distutils_hack): setup.py relies on that.
    setuptools_first = False
    found = []
    for node in ast.walk(tree):
        if isinstance(node, (ast.Import, ast.ImportFrom)):
            names = [a.name for a in node.names] if isinstance(node, ast.Import) else [node.module or ""]
            for name in names:
                top = name.split(".")[0]
                if top == "setuptools":
                    setuptools_first = True
                elif top in REMOVED_IN_312 and not (top == "distutils" and setuptools_first):
                    found.append(f"line {node.lineno}: import {name} (removed in Python 3.12)")
            if isinstance(node, ast.ImportFrom) and node.module:
                found += [f"line {node.lineno}: from {node.module} import {a.name} (removed in 3.12)"
                          for a in node.names if (node.module, a.name) in REMOVED_NAMES_312]
        elif isinstance(node, ast.Attribute) and isinstance(node.value, ast.Name):
            if (node.value.id, node.attr) in REMOVED_NAMES_312:
                found.append(f"line {node.lineno}: {node.value.id}.{node.attr} (removed in 3.12)")
    return found


def test_checker_sees_removed_312_code():
    assert problems_for_312("import imp\n")
    assert problems_for_312("import asyncore\n")
    assert problems_for_312("import ssl\nssl.wrap_socket(None)\n")
    assert problems_for_312("from configparser import SafeConfigParser\n")
    assert not problems_for_312("import setuptools\nfrom distutils.command.install_data import install_data\n")
    assert problems_for_312("from distutils.core import setup\n")


@pytest.mark.parametrize("path", SOURCES, ids=lambda p: str(p.relative_to(REPO)))
def test_source_uses_nothing_python312_removed(path):
    assert not problems_for_312(path.read_text()), problems_for_312(path.read_text())


def interpreter(version: str) -> str | None:
    """A python``version`` on this machine, or None."""
    env = os.environ.get(f"EDGE_ROOFLINE_PYTHON{version.replace('.', '')}")
    candidates = [env] if env else []
    candidates += [shutil.which(f"python{version}")]
    candidates += sorted(glob.glob(os.path.expanduser(f"~/.pyenv/versions/{version}.*/bin/python{version}")))
    for candidate in filter(None, candidates):
        try:
            out = subprocess.run([candidate, "-c", "import sys; print('%d.%d' % sys.version_info[:2])"],
                                 capture_output=True, text=True, timeout=30)
        except (OSError, subprocess.TimeoutExpired):
            continue
        if out.returncode == 0 and out.stdout.strip() == version:
            return candidate
    return None


@pytest.mark.parametrize("version", ["3.12", "3.10"])
def test_every_source_compiles_with_that_interpreter(version):
    python = interpreter(version)
    if python is None:
        pytest.skip(f"no Python {version} interpreter on this machine (set EDGE_ROOFLINE_PYTHON"
                    f"{version.replace('.', '')}); only the static checks ran")
    script = ("import sys\nbad = []\nfor path in sys.argv[1:]:\n    try:\n"
              "        compile(open(path, encoding='utf-8').read(), path, 'exec')\n"
              "    except SyntaxError as exc:\n        bad.append(f'{path}:{exc.lineno}: {exc.msg}')\n"
              "print('\\n'.join(bad))\nsys.exit(1 if bad else 0)\n")
    done = subprocess.run([python, "-W", "error::SyntaxWarning", "-c", script, *map(str, SOURCES)],
                          capture_output=True, text=True, timeout=300)
    assert done.returncode == 0, f"Python {version} ({python}) rejects:\n{done.stdout}{done.stderr}"
