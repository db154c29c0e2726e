"""``ros2msg`` schema text for a message type (the .msg definition followed by every type it
uses), as Foxglove and MCAP readers expect it for CDR-encoded ROS 2 messages.

The .msg files are read from the ROS prefixes' ``share/<pkg>/msg`` (ament index), so the
schema is exactly what the running system was built with.
"""

from __future__ import annotations

import os
import re
import sys
from functools import lru_cache
from pathlib import Path

PRIMITIVES = {"bool", "byte", "char", "float32", "float64", "int8", "uint8", "int16", "uint16",
              "int32", "uint32", "int64", "uint64", "string", "wstring"}
SEPARATOR = "=" * 80
_FIELD = re.compile(r"^\s*([A-Za-z0-9_/]+)(?:\[[^\]]*\])?(?:<=\d+)?\s+([A-Za-z0-9_]+)")


def _prefixes() -> list[Path]:
    paths = [Path(p) for p in os.environ.get("AMENT_PREFIX_PATH", "").split(os.pathsep) if p]
    return paths + [Path(sys.prefix)]


@lru_cache(maxsize=None)
def msg_definition(type_name: str) -> str:
    """Text of ``pkg/msg/Type`` (or ``pkg/Type``) from the first prefix that has it."""
    pkg, _, name = type_name.replace("/msg/", "/").partition("/")
    for prefix in _prefixes():
        path = prefix / "share" / pkg / "msg" / f"{name}.msg"
        if path.is_file():
            return path.read_text()
    raise FileNotFoundError(f"message definition {type_name} not found under {[str(p) for p in _prefixes()]}"
                            f"/share/{pkg}/msg; is the package installed in this ROS prefix?")


def _dependencies(type_name: str) -> list[str]:
    pkg = type_name.split("/")[0]
    deps = []
    for line in msg_definition(type_name).splitlines():
        line = line.split("#", 1)[0]
        match = _FIELD.match(line)
        if not match or match.group(1) in PRIMITIVES:
            continue  # blank, comment, or a primitive field / constant (constants are primitives)
        field_type = match.group(1)
        if "/" not in field_type:
            field_type = "std_msgs/Header" if field_type == "Header" else f"{pkg}/{field_type}"
        deps.append(field_type.replace("/msg/", "/"))
    return deps


def schema_text(type_name: str) -> str:
    """Definition of ``type_name`` followed by each dependency once (depth first)."""
    root = type_name.replace("/msg/", "/")
    seen, order, stack = {root}, [], list(reversed(_dependencies(root)))
    while stack:
        dep = stack.pop()
        if dep in seen:
            continue
        seen.add(dep)
        order.append(dep)
        stack.extend(reversed(_dependencies(dep)))
    parts = [msg_definition(root).rstrip("\n")]
    for dep in order:
        parts.append(f"{SEPARATOR}\nMSG: {dep}\n{msg_definition(dep).rstrip(chr(10))}")
    return "\n".join(parts) + "\n"


def type_name_of(msg_class) -> str:
    """``edge_roofline/msg/PowerTelemetry`` for a generated message class."""
    module = msg_class.__module__.split(".")
    return f"{module[0]}/msg/{msg_class.__name__}"


def message_class(type_name: str):
    """The generated Python class for ``pkg/msg/Type`` (or ``pkg/Type``, ``pkg.msg.Type``), as
    rosidl_runtime_py.utilities.get_message resolves it (that package has no PyPI wheel)."""
    import importlib
    parts = type_name.replace(".", "/").split("/")
    if len(parts) == 2:
        parts = [parts[0], "msg", parts[1]]
    if len(parts) != 3 or parts[1] != "msg" or not all(parts):
        raise ValueError(f"message type {type_name!r} is not of the form pkg/msg/Type (e.g. sensor_msgs/msg/Image)")
    try:
        return getattr(importlib.import_module(f"{parts[0]}.msg"), parts[2])
    except (ImportError, AttributeError) as exc:
        raise ValueError(f"message type {type_name!r} is not installed here ({exc}); install its interface "
                         f"package or source its workspace") from None
