"""The house (docs/architecture.md) as a test: every import of every module, function-local
ones included, runs down the layers; nothing but nodes/ touches rclpy or our messages; the
governor outside eval/ never sees the virtual Jetson; no import circle; every import names a
module that exists in this tree (an installed copy of the package cannot hide a stale path)."""

from __future__ import annotations

import ast
from pathlib import Path

REPO = Path(__file__).resolve().parent.parent
PACKAGE = REPO / "edge_roofline"

# The layers of docs/architecture.md, bottom first. A room imports its own modules and rooms in
# lower layers, never one beside or above it. A module's room is its entry in MODULE_ROOMS, else
# the room of the longest package in PACKAGE_ROOMS holding it. A package face holding a factory
# sits above the implementations it creates (platforms/__init__.py: the virtual Jetson's too).
LAYERS = [
    {"base"},                         # edge_roofline/__init__.py, clock.py, paths.py
    {"roofline", "models"},
    {"platforms", "ros"},             # ros/: ROS-facing but rclpy-free
    {"telemetry", "virtual"},
    {"platforms.face", "backends"},   # create_platform, create_backend (and the virtual backend)
    {"inference", "governor"},
    {"governor.eval"},                # the governor closed-loop on the virtual Jetson
    {"characterise", "viz", "suite"},
    {"commands"},
    {"nodes"},
    {"cli"},
]
MODULE_ROOMS = {
    "edge_roofline": "base", "edge_roofline.clock": "base", "edge_roofline.paths": "base",
    "edge_roofline.cli": "cli", "edge_roofline.platforms": "platforms.face",
}
PACKAGE_ROOMS = {
    "edge_roofline.governor.eval": "governor.eval",
    **{f"edge_roofline.{name}": name for name in (
        "roofline", "models", "platforms", "ros", "telemetry", "virtual", "backends", "inference", "governor",
        "characterise", "viz", "suite", "commands", "nodes")},
}
ROOT_MODULES = {"__init__.py", "cli.py", "clock.py", "paths.py"}
# Generated message packages and the ROS client library: only nodes/ imports them.
ROS_ONLY = ("rclpy", "rcl_interfaces", "builtin_interfaces", "std_msgs", "sensor_msgs", "diagnostic_msgs",
            "std_srvs", "edge_roofline.msg", "edge_roofline.srv")
GENERATED = ("edge_roofline.msg", "edge_roofline.srv")  # built into the ROS prefix, not in the tree
# "No file over about 400 lines except data tables" (issue 16); devices.py is the catalogue.
MAX_LINES = 420
DATA_TABLES = {"roofline/devices.py"}


def module_name(path: Path) -> str:
    parts = path.relative_to(REPO).with_suffix("").parts
    return ".".join(parts[:-1] if parts[-1] == "__init__" else parts)


MODULES = {module_name(p): p for p in sorted(PACKAGE.rglob("*.py"))}


def room(module: str) -> str:
    if module in MODULE_ROOMS:
        return MODULE_ROOMS[module]
    for package in sorted(PACKAGE_ROOMS, key=len, reverse=True):
        if module == package or module.startswith(package + "."):
            return PACKAGE_ROOMS[package]
    raise AssertionError(f"{module} belongs to no room; add its folder to PACKAGE_ROOMS and docs/architecture.md")


def level(name: str) -> int:
    return next(i for i, layer in enumerate(LAYERS) if name in layer)


def imports(module: str) -> list[tuple[str, int]]:
    """(imported module, line) for every import in ``module``, function-local ones included;
    ``from pkg import name`` counts as pkg.name where that is a module of this tree."""
    path = MODULES[module]
    package = module if path.name == "__init__.py" else module.rpartition(".")[0]
    found = []
    for node in ast.walk(ast.parse(path.read_text(), str(path))):
        if isinstance(node, ast.Import):
            found += [(alias.name, node.lineno) for alias in node.names]
        elif isinstance(node, ast.ImportFrom):
            base = node.module or ""
            if node.level:
                anchor = package.split(".")[:len(package.split(".")) - node.level + 1]
                base = ".".join(anchor + ([node.module] if node.module else []))
            for alias in node.names:
                sub = f"{base}.{alias.name}"
                found.append((sub if sub in MODULES or sub.startswith(GENERATED) else base, node.lineno))
    return found


def internal_edges():
    for module in MODULES:
        for target, line in imports(module):
            if target.startswith("edge_roofline") and not target.startswith(GENERATED):
                yield module, target, line


def test_every_module_is_in_a_room_and_every_room_in_a_layer():
    rooms = set(MODULE_ROOMS.values()) | set(PACKAGE_ROOMS.values())
    assert rooms == set().union(*LAYERS)
    assert all(room(m) in rooms for m in MODULES)
    assert sorted(p.name for p in PACKAGE.glob("*.py")) == sorted(ROOT_MODULES)


def test_every_import_names_a_module_of_this_tree():
    stale = [f"{MODULES[m].relative_to(REPO)}:{line} imports {t}" for m, t, line in internal_edges()
             if t not in MODULES]
    assert not stale, "\n".join(stale)


def test_imports_run_down_the_layers():
    upward = []
    for module, target, line in internal_edges():
        src, dst = room(module), room(target)
        if src != dst and level(dst) >= level(src):
            upward.append(f"{MODULES[module].relative_to(REPO)}:{line} ({src}) imports {target} ({dst})")
    assert not upward, "\n".join(upward)


def test_only_nodes_touch_rclpy_and_messages():
    found = [f"{MODULES[m].relative_to(REPO)}:{line} imports {t}" for m in MODULES if room(m) != "nodes"
             for t, line in imports(m) if t.startswith(ROS_ONLY)]
    assert not found, "\n".join(found)


def test_only_governor_eval_reaches_the_virtual_jetson():
    found = [f"{MODULES[m].relative_to(REPO)}:{line} imports {t}" for m, t, line in internal_edges()
             if room(m) == "governor" and room(t) == "virtual"]
    assert not found, "\n".join(found)


def test_no_import_circle():
    graph: dict[str, set[str]] = {m: set() for m in MODULES}
    for module, target, _ in internal_edges():
        if target in MODULES and target != module:
            graph[module].add(target)
    done: set[str] = set()

    def visit(node: str, path: list[str]) -> None:
        if node in path:
            raise AssertionError("import circle: " + " -> ".join(path[path.index(node):] + [node]))
        if node in done:
            return
        for nxt in sorted(graph[node]):
            visit(nxt, path + [node])
        done.add(node)

    for module in sorted(graph):
        visit(module, [])


def test_no_god_files():
    long = [f"{p.relative_to(PACKAGE)}: {n} lines" for p in PACKAGE.rglob("*.py")
            if (n := len(p.read_text().splitlines())) > MAX_LINES and str(p.relative_to(PACKAGE)) not in DATA_TABLES]
    assert not long, "split along a real seam (docs/architecture.md):\n" + "\n".join(long)


def test_tests_mirror_the_package():
    folders = {p.parent.relative_to(REPO / "test") for p in (REPO / "test").rglob("test_*.py")} - {Path(".")}
    unmirrored = sorted(str(f) for f in folders if not (PACKAGE / f).is_dir())
    assert not unmirrored, f"test folders without a package folder: {unmirrored}"
