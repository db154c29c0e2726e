"""Pure logic of the TensorRT backend, testable without a GPU: the engine cache key and
sidecar, engine compatibility errors, parsing of engine-inspector / trtexec JSON, fused-layer
-> ONNX node mapping and profiler aggregation.

Layer names: TensorRT joins the ONNX node names a fused layer covers with " + "
("Conv_0 + Relu_1"), wraps pointwise fusions as "PWN(...)", and adds layers that exist only in
the runtime ("Reformatting CopyNode for Input Tensor 0 to Conv_0"), which cover no node.
Engines built with DETAILED verbosity (TRT 8.6+) also list the sources in ``Metadata`` as
"[ONNX Layer: NAME]" entries separated by U+001E; those are used when present. Myelin regions
appear as "{ForeignNode[FIRST...LAST]}" and take the nodes from FIRST to LAST that no other
layer claims.

Engine compatibility: a serialized engine loads only with the TensorRT version (and GPU
architecture) that built it. Engines this backend builds carry a JSON sidecar saying what
built them, checked before deserializing; for other engines, what TensorRT logs on a failed
deserialize tells a version mismatch from a corrupt file.
"""

from __future__ import annotations

import hashlib
import json
import re
from typing import Any, Iterable, Mapping

from edge_roofline.backends.base import EngineVersionError, LayerInfo, ModelLoadError

_METADATA_NODE = re.compile(r"\[ONNX Layer: ([^\]]+)\]")
_SPLIT = re.compile(r"\s\+\s|[(){}\[\],]")
_FOREIGN_RANGE = re.compile(r"ForeignNode\[(.+?)\.\.\.(.+?)\]")
# TensorRT's log on an engine from another version. TRT 8.x / 10.x: "Serialization assertion
# stdVersionRead == kSERIALIZATION_VERSION failed.Version tag does not match. Note: Current
# Version: 237, Serialized Engine Version: 239". Older: "The engine plan file is not
# compatible with this version of TensorRT, expecting library version 8.0.0 got 8.0.1".
_VERSION_MISMATCH = re.compile(
    r"Version tag does not match.*?Current Version: (\d+), Serialized Engine Version: (\d+)"
    r"|expecting library version ([\d.]+) got ([\d.]+)", re.S)
REBUILD_HINT = ("rebuild it on this device from the ONNX model (load the .onnx: the engine "
                "cache builds it once), or use the TensorRT version that built it")


# ---- engine cache and compatibility ---------------------------------------------------

def engine_cache_key(onnx_bytes: bytes, trt_version: str, device: str, flags: Mapping[str, Any],
                     compute_capability: tuple[int, int] | None = None) -> str:
    """A file-name-safe key: model content hash + TensorRT version + device name and compute
    capability + build flags, so a restart reuses the engine and any change rebuilds it."""
    h = hashlib.sha256(onnx_bytes)
    h.update(json.dumps({"trt": trt_version, "device": device, "flags": dict(flags),
                         "sm": list(compute_capability) if compute_capability else None},
                        sort_keys=True).encode())
    return f"{h.hexdigest()[:24]}-trt{trt_version}"


def engine_metadata(trt_version: str, device: str, compute_capability: tuple[int, int],
                    flags: Mapping[str, Any], onnx_bytes: bytes) -> dict:
    """The sidecar written next to a built engine (``<engine>.json``)."""
    return {"tensorrt_version": trt_version, "device": device,
            "compute_capability": list(compute_capability), "flags": dict(flags),
            "onnx_sha256": hashlib.sha256(onnx_bytes).hexdigest()}


def check_engine_metadata(meta: Mapping[str, Any], trt_version: str,
                          compute_capability: tuple[int, int], where: str, precision: str | None = None) -> None:
    """Raise EngineVersionError when the sidecar says the engine was built by another
    TensorRT version or for another GPU architecture, ModelLoadError when at another
    ``precision`` than the one asked for (an engine's precision is fixed when it is built)."""
    built = str(meta.get("tensorrt_version", ""))
    if built and built != trt_version:
        raise EngineVersionError(f"engine {where} was built with TensorRT {built}, this is "
                                 f"TensorRT {trt_version}: {REBUILD_HINT}")
    built_sm = tuple(meta.get("compute_capability") or ())
    if built_sm and built_sm != tuple(compute_capability):
        raise EngineVersionError(
            f"engine {where} was built for compute capability {'.'.join(map(str, built_sm))} "
            f"({meta.get('device', '?')}), this GPU has "
            f"{'.'.join(map(str, compute_capability))}: {REBUILD_HINT}")
    built_precision = (meta.get("flags") or {}).get("precision")
    if precision and built_precision and built_precision != precision:
        raise ModelLoadError(f"engine {where} was built at {built_precision} (its sidecar says), not at precision "
                             f"{precision}: set precision to {built_precision}, or load the ONNX model to build it at "
                             f"{precision}")


def deserialize_failure(messages: Iterable[str], trt_version: str, where: str) -> ModelLoadError:
    """The error for a failed ``deserialize_cuda_engine``, from what TensorRT logged."""
    log = "\n".join(messages)
    m = _VERSION_MISMATCH.search(log)
    if m:
        detail = (f"serialization version {m.group(2)}, this runtime reads {m.group(1)}"
                  if m.group(1) else f"built by TensorRT {m.group(4)}, expected {m.group(3)}")
        return EngineVersionError(f"engine {where} comes from another TensorRT version "
                                  f"({detail}; this is TensorRT {trt_version}): {REBUILD_HINT}")
    # The first message is the cause; the last is the generic "deserialization failed".
    first = log.strip().splitlines()[0] if log.strip() else "TensorRT logged nothing"
    return ModelLoadError(f"engine {where} is corrupt or not a TensorRT engine ({first})")


# ---- layers -> ONNX nodes -------------------------------------------------------------

def is_reformat(layer: Mapping[str, Any]) -> bool:
    name = str(layer.get("Name", ""))
    return layer.get("LayerType") == "Reformat" or name.startswith("Reformatting CopyNode")


def onnx_nodes_of(layer: Mapping[str, Any], known_nodes: Iterable[str]) -> tuple[str, ...]:
    """ONNX nodes an inspector layer names (Metadata, else its name), in order; reformat
    layers cover none."""
    if is_reformat(layer):
        return ()
    known = set(known_nodes)
    metadata = str(layer.get("Metadata", ""))
    found = [m.strip() for m in _METADATA_NODE.findall(metadata)]
    if not found:
        name = str(layer.get("Name", ""))
        found = [name] if name in known else [t.strip() for t in _SPLIT.split(name)]
    return tuple(dict.fromkeys(n for n in found if n in known))


def _foreign_range(name: str, ordered_nodes: list[str], claimed: set[str]) -> tuple[str, ...]:
    """Nodes of "{ForeignNode[FIRST...LAST]}" in graph order. FIRST may be a weight rather
    than a node; then the range starts at the beginning. Claimed nodes are skipped: a Myelin
    region covers what no other layer does."""
    m = _FOREIGN_RANGE.search(name)
    if not m or m.group(2) not in ordered_nodes:
        return ()
    first, last = m.group(1), m.group(2)
    start = ordered_nodes.index(first) if first in ordered_nodes else 0
    return tuple(n for n in ordered_nodes[start:ordered_nodes.index(last) + 1] if n not in claimed)


def parse_layer_information(info: str | Mapping[str, Any], known_nodes: Iterable[str],
                            precision: str = "fp32") -> list[LayerInfo]:
    """Layers from ``get_engine_information(JSON)`` or trtexec ``--exportLayerInfo``
    (``known_nodes`` in graph order). A node claimed by two layers stays with the first, so
    each node is attributed at most once; Myelin ranges are resolved last."""
    data = json.loads(info) if isinstance(info, str) else info
    layers = [{"Name": l} if isinstance(l, str) else l  # below DETAILED: names only
              for l in (data["Layers"] if isinstance(data, Mapping) else data)]
    known, claimed, nodes_of = list(known_nodes), set(), []
    for layer in layers:
        nodes = tuple(n for n in onnx_nodes_of(layer, known) if n not in claimed)
        claimed.update(nodes)
        nodes_of.append(nodes)
    for i, layer in enumerate(layers):
        if not nodes_of[i] and not is_reformat(layer):
            nodes_of[i] = _foreign_range(str(layer.get("Name", "")), known, claimed)
            claimed.update(nodes_of[i])
    return [LayerInfo(str(layer["Name"]), str(layer.get("LayerType", "")), nodes, precision,
                      str(layer.get("TacticName", "")),
                      {k: layer[k] for k in ("Inputs", "Outputs") if k in layer})
            for layer, nodes in zip(layers, nodes_of)]


# ---- timing ---------------------------------------------------------------------------

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
