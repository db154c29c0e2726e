"""The governor node's parameters, rclpy-free (the suite checks parameter files against them
without starting ROS): every GovernorConfig setting (edge_roofline.governor.settings), then
what only the node has (the platform it opens, the model's cost, its step rate).

docs/nodes.md's governor table is generated from them: ``python -m
edge_roofline.governor.node_parameters`` rewrites it; a test fails while it differs."""

from __future__ import annotations

import sys
from pathlib import Path
from typing import Any, Mapping

from edge_roofline.governor.config import ConfigError, GovernorConfig
from edge_roofline.governor.settings import config_dict, markdown_table, parameter_table

NODE_ONLY = {
    "platform": ("jetson", "jetson, virtual:DEVICE or nvml (outside the catalogue: points learned by measuring); "
                           "one that cannot start: modes off and advise govern nothing and say so, active exits 2"),
    "sysfs_root": ("/", "sysfs root (a live virtual Jetson's root)"),
    "nvpmodel_cmd": ("nvpmodel", "nvpmodel executable (real boards)"),
    "device": ("", "catalogue device (empty: from the platform)"),
    "model": ("", "ONNX path or zoo:NAME whose roofline the predictor uses, whatever the stream reports "
                  "(empty: follow the model the stream publishes in InferenceStats.model_id); with streams, "
                  "each stream's own model key"),
    "precision": ("fp16", "precision of the model's cost (fp32, fp16 or int8)"),
    "engine": ("gpu", "engine the model runs on: gpu, cpu or dla"),
    "safe_point": ("", "fallback point name (empty: the point found at start)"),
    "step_rate_hz": (10.0, "decisions per second (plus one at each inference over its target at a point not "
                           "known to miss)"),
}

PARAMETERS = {**parameter_table(GovernorConfig), **NODE_ONLY}


def node_config(p: Mapping[str, Any]) -> GovernorConfig:
    """The node's parameters (every one of PARAMETERS, by name) as a GovernorConfig, or ConfigError for
    all that can be refused without the board: what GovernorConfig refuses, and a flat ``model``
    with ``streams`` (which stream would it describe?). The node starts from it, and the suite runs
    it on a parameter file and its arguments before it starts the board and the other nodes."""
    data = config_dict(GovernorConfig, p)
    if data["streams"] and p["model"]:
        raise ConfigError(f"model {p['model']!r} names no stream: with streams, give the stream its own "
                          f"model key (e.g. {{name: {data['streams'][0].name}, model: {p['model']}, ...}})")
    return GovernorConfig.from_dict(data)


DOCS = Path(__file__).resolve().parents[2] / "docs" / "nodes.md"
COMMAND = "python -m edge_roofline.governor.node_parameters"
BEGIN = f"<!-- governor parameters: generated from GovernorConfig by `{COMMAND}`; do not edit -->"
END = "<!-- end of the generated governor parameters -->"


def docs_section() -> str:
    return f"{BEGIN}\n\n{markdown_table(PARAMETERS)}\n\n{END}"


def documented_section(text: str) -> str:
    """What ``text`` (docs/nodes.md) holds between the markers ("" without them)."""
    if BEGIN not in text or END not in text:
        return ""
    return text[text.index(BEGIN):text.index(END) + len(END)]


def write_docs(path: Path = DOCS) -> bool:
    """Put the generated table in ``path``; whether it changed."""
    text = path.read_text()
    old = documented_section(text)
    if not old:
        raise SystemExit(f"{path} has no generated governor table (the markers {BEGIN!r} ... {END!r})")
    new = text.replace(old, docs_section())
    path.write_text(new)
    return new != text


def main() -> int:
    if not DOCS.is_file():
        print(f"no {DOCS}: run it from a source checkout (the repository root)", file=sys.stderr)
        return 2
    print(f"{DOCS}: {'rewritten' if write_docs() else 'already up to date'}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
