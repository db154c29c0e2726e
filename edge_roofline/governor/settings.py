"""Each governor setting is defined once, as a field of a config dataclass
(edge_roofline.governor.config): its name, type, default and meaning. The governor node's
parameters and their docs table are derived from those fields, so the three cannot drift.

A field becomes a node parameter of the same name; a field holding a config dataclass (``points``,
``safety``) is a section, and its fields are parameters named ``section.field`` (in a ROS
parameter file, nested: ``safety: {stale_telemetry_s: 0.5}``, as in the YAML config). A new
setting is one field: ``name_unit: float = setting(1.0, "what it does")``; a plain field with a
default works too, and the docs test asks for its meaning."""

from __future__ import annotations

from dataclasses import MISSING, Field, dataclass, field, fields, is_dataclass
from typing import Any, Callable, Mapping


def setting(default: Any, doc: str, *, node_default: Any = MISSING,
            parse: Callable[[Any], Any] | None = None, unparse: Callable[[Any], Any] | None = None) -> Any:
    """A config field with its meaning. ``node_default``: where the node starts otherwise (its
    own default, e.g. mode advise); ``parse``/``unparse``: for a value a ROS parameter cannot
    hold as such (a list of streams, a tuple of core counts), the parameter's value to the
    field's and back."""
    meta = {"doc": doc, "node_default": node_default, "parse": parse, "unparse": unparse}
    return field(default=default, metadata=meta)


@dataclass(frozen=True)
class Parameter:
    """One setting as the node declares it."""

    name: str  # dotted for a section's field: safety.stale_telemetry_s
    default: Any  # the node's (a ROS parameter value)
    doc: str
    parse: Callable[[Any], Any] | None = None
    unparse: Callable[[Any], Any] | None = None

    @property
    def path(self) -> tuple[str, ...]:
        return tuple(self.name.split("."))


def section_class(f: Field) -> type | None:
    """The config dataclass a field holds (``points: PointGridConfig = field(default_factory=...)``)."""
    factory = f.default_factory
    return factory if factory is not MISSING and isinstance(factory, type) and is_dataclass(factory) else None


def parameters(cls: type, prefix: str = "") -> tuple[Parameter, ...]:
    """Every setting of config dataclass ``cls`` and of its sections, in field order."""
    out: list[Parameter] = []
    for f in fields(cls):
        if (section := section_class(f)) is not None:
            out += parameters(section, f"{prefix}{f.name}.")
            continue
        meta = f.metadata
        default = f.default if meta.get("node_default", MISSING) is MISSING else meta["node_default"]
        if default is MISSING:
            raise TypeError(f"{cls.__name__}.{f.name} has no default: a setting needs one (setting(DEFAULT, DOC))")
        out.append(Parameter(prefix + f.name, default, meta.get("doc", ""), meta.get("parse"), meta.get("unparse")))
    return tuple(out)


def parameter_table(cls: type) -> dict[str, tuple[Any, str]]:
    """``{name: (default, doc)}``, the form nodes.common.declare_parameters takes."""
    return {p.name: (p.default, p.doc) for p in parameters(cls)}


def config_dict(cls: type, values: Mapping[str, Any]) -> dict:
    """The nested ``from_dict`` mapping of ``cls`` from the node's parameter values (by name)."""
    out: dict = {}
    for p in parameters(cls):
        value = values[p.name]
        *sections, key = p.path
        node = out
        for section in sections:
            node = node.setdefault(section, {})
        node[key] = p.parse(value) if p.parse else value
    return out


def parameter_values(config: Any, current: Mapping[str, Any] | None = None) -> dict[str, Any]:
    """``{name: value}`` of the settings in force in ``config``, as the node's parameters hold
    them. With ``current`` (the parameters' values now): only those that do not give the value in
    force (a streams file's path that still reads as the streams in force stays a path)."""
    out = {}
    for p in parameters(type(config)):
        value = config
        for key in p.path:
            value = getattr(value, key)
        if current is not None and (p.parse(current[p.name]) if p.parse else current[p.name]) == value:
            continue
        out[p.name] = p.unparse(value) if p.unparse else value
    return out


def _cell(text: str) -> str:
    return str(text).replace("|", "/").replace("\n", " ")


def markdown_table(table: Mapping[str, tuple[Any, str]]) -> str:
    """``| parameter | default | meaning |`` rows of ``{name: (default, doc)}``; a missing
    meaning is refused by name (a setting nobody can look up is not documented)."""
    undocumented = [name for name, (_, doc) in table.items() if not doc.strip()]
    if undocumented:
        raise ValueError(f"setting(s) without a meaning: {', '.join(undocumented)}; declare each as "
                         f"`name: type = setting(DEFAULT, \"what it does\")` in edge_roofline/governor/config.py")
    rows = [f"| `{name}` | `{default}` | {_cell(doc)} |" for name, (default, doc) in table.items()]
    return "\n".join(["| parameter | default | meaning |", "|---|---|---|", *rows])
