"""config/foxglove_layout.json: current with scripts/foxglove_layout.py (built with Foxglove's
own layout classes), and every topic and field it plots is one the suite's nodes publish."""

import importlib.util
import json
import re
from pathlib import Path

from edge_roofline.ros import topics
from edge_roofline.ros.schema import message_class

REPO = Path(__file__).resolve().parents[2]
LAYOUT = REPO / "config" / "foxglove_layout.json"
TOPIC_KEYS = {"value", "topicPath", "imageTopic"}


def load_script():
    spec = importlib.util.spec_from_file_location("foxglove_layout", REPO / "scripts" / "foxglove_layout.py")
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


def referenced_paths(node) -> list[str]:
    if isinstance(node, dict):
        found = [v for k, v in node.items() if k in TOPIC_KEYS and isinstance(v, str) and v.startswith("/")]
        return found + [p for v in node.values() for p in referenced_paths(v)]
    if isinstance(node, list):
        return [p for v in node for p in referenced_paths(v)]
    return []


def split_path(message_path: str) -> tuple[str, list[str]]:
    """'/power/telemetry.rails[:].power_w' -> ('power/telemetry', ['rails', 'power_w'])."""
    topic, _, fields = message_path.lstrip("/").partition(".")
    return topic, [re.sub(r"\[.*?\]$", "", f) for f in fields.split(".") if f]


def field_type(msg_class, field: str) -> str:
    types = msg_class.get_fields_and_field_types()
    assert field in types, f"{msg_class.__name__} has no field {field!r}; it has {sorted(types)}"
    return types[field]


def test_layout_file_is_current():
    assert LAYOUT.read_text() == load_script().render(), "regenerate: python scripts/foxglove_layout.py"


def test_every_plotted_topic_and_field_is_published():
    layout = json.loads(LAYOUT.read_text())
    paths = referenced_paths(layout["content"])
    assert len(paths) >= 10
    publishers = "\n".join(p.read_text() for p in (REPO / "edge_roofline" / "nodes").glob("*.py"))
    constants = {value: name for name, value in vars(topics).items() if isinstance(value, str) and name.isupper()}
    seen_topics = set()
    for message_path in paths:
        topic, fields = split_path(message_path)
        assert topic in topics.TYPES, f"{message_path}: {topic} is not one of the suite's topics"
        assert re.search(rf"create_publisher\(\w+, topics\.{constants[topic]}\b", publishers), \
            f"{topic}: no node publishes it"
        seen_topics.add(topic)
        msg_class = message_class(topics.TYPES[topic])
        for field in fields:
            kind = field_type(msg_class, field)
            nested = re.fullmatch(r"(?:sequence<)?(\w+/\w+)>?", kind)
            msg_class = message_class(nested.group(1)) if nested else None
            if msg_class is None:
                assert field == fields[-1], f"{message_path}: {field} is a {kind}, not a message"
    # the panels the layout promises: latency vs target, power, energy, point, layers, chart
    assert {topics.GOVERNOR_STATE, topics.INFERENCE_STATS, topics.POWER_TELEMETRY, topics.ROOFLINE_REPORT,
            topics.ROOFLINE_CHART} <= seen_topics


def test_a_wrong_field_is_caught():
    msg_class = message_class(topics.TYPES[topics.GOVERNOR_STATE])
    try:
        field_type(msg_class, "latency_target")
    except AssertionError as exc:
        assert "no field 'latency_target'" in str(exc)
    else:
        raise AssertionError("a misspelt field passed")
