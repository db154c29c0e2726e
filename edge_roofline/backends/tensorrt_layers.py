"""Pure logic of the TensorRT backend, testable without a GPU: the engine cache key, parsing
of engine-inspector / trtexec JSON, fused-layer -> ONNX node mapping and profiler
aggregation.

Layer names: TensorRT joins the ONNX node names a fused layer covers with " + "
("Conv_0 + Relu_1"), wraps pointwise fusions as "PWN(...)", and adds layers that exist only in
the runtime ("Reformatting CopyNode for Input Tensor 0 to Conv_0"), which cover no node.
Engines built with DETAILED verbosity (TRT 8.6+) also list the sources in ``Metadata`` as
"[ONNX Layer: NAME]" entries separated by U+001E; those are used when present.
"""

from __future__ import annotations

import hashlib
import json
import re
from typing import Any, Iterable, Mapping

from edge_roofline.backends.base import LayerInfo

_METADATA_NODE = re.compile(r"\[ONNX Layer: ([^\]]+)\]")
_SPLIT = re.compile(r"\s\+\s|[(){}\[\],]")


def engine_cache_key(onnx_bytes: bytes, trt_version: str, device: str, flags: Mapping[str, Any]) -> str:
    """A file-name-safe key: model content hash + TensorRT version + device + build flags,
    so a restart reuses the engine and any change rebuilds it."""
    h = hashlib.sha256(onnx_bytes)
    h.update(json.dumps({"trt": trt_version, "device": device, "flags": dict(flags)},
                        sort_keys=True).encode())
    return f"{h.hexdigest()[:24]}-trt{trt_version}"


def is_reformat(layer: Mapping[str, Any]) -> bool:
    name = str(layer.get("Name", ""))
    return layer.get("LayerType") == "Reformat" or name.startswith("Reformatting CopyNode")


def onnx_nodes_of(layer: Mapping[str, Any], known_nodes: Iterable[str]) -> tuple[str, ...]:
    """ONNX nodes an inspector layer covers, in order; reformat layers cover none."""
    if is_reformat(layer):
        return ()
    known = set(known_nodes)
    metadata = str(layer.get("Metadata", ""))
    found = [m.strip() for m in _METADATA_NODE.findall(metadata)]
    if not found:
        name = str(layer.get("Name", ""))
        found = [name] if name in known else [t.strip() for t in _SPLIT.split(name)]
    return tuple(dict.fromkeys(n for n in found if n in known))


def parse_layer_information(info: str | Mapping[str, Any], known_nodes: Iterable[str],
                            precision: str = "fp32") -> list[LayerInfo]:
    """Layers from ``get_engine_information(JSON)`` or trtexec ``--exportLayerInfo``; a node
    claimed by two layers stays with the first (each node is attributed exactly once)."""
    data = json.loads(info) if isinstance(info, str) else info
    layers = data["Layers"] if isinstance(data, Mapping) else data
    known, claimed, out = list(known_nodes), set(), []
    for layer in layers:
        if isinstance(layer, str):  # ProfilingVerbosity below DETAILED: names only
            layer = {"Name": layer}
        nodes = tuple(n for n in onnx_nodes_of(layer, known) if n not in claimed)
        claimed.update(nodes)
        out.append(LayerInfo(str(layer["Name"]), str(layer.get("LayerType", "")), nodes,
                             precision, str(layer.get("TacticName", "")),
                             {k: layer[k] for k in ("Inputs", "Outputs") if k in layer}))
    return out


def parse_trtexec_profile(profile: str | list) -> tuple[dict[str, float], int]:
    """trtexec ``--exportProfile`` JSON -> (average seconds per layer, run count)."""
    data = json.loads(profile) if isinstance(profile, str) else profile
    count = next((int(e["count"]) for e in data if "count" in e), 1)
    return {e["name"]: float(e["averageMs"]) * 1e-3 for e in data if "name" in e}, count


class LayerTimeAccumulator:
    """What an ``IProfiler.report_layer_time`` sink needs: sums per layer over runs."""

    def __init__(self) -> None:
        self.total_ms: dict[str, float] = {}
        self.reports: dict[str, int] = {}

    def add(self, layer_name: str, ms: float) -> None:
        self.total_ms[layer_name] = self.total_ms.get(layer_name, 0.0) + ms
        self.reports[layer_name] = self.reports.get(layer_name, 0) + 1

    def mean_times_s(self, runs: int) -> dict[str, float]:
        """Average seconds per run (a layer reported once per synchronous execution)."""
        return {name: ms * 1e-3 / runs for name, ms in self.total_ms.items()}
