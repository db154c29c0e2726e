"""One-shot end-to-end check of the TensorRT backend on a real GPU: build a zoo model's
engine (with its sidecar), load it as a prebuilt engine, reload it from the cache without
rebuilding, run and profile it from a second thread (as the inference node's worker does: the
backend must make its CUDA context current there), check that the layer -> ONNX node mapping
covers every node once, close it from that thread, and compare outputs with ONNX Runtime. Exits
non-zero on the first failure.

    python scripts/trt_smoke.py [--model tiny_cnn] [--precision fp32|fp16] [--cache DIR]
"""

import argparse
import sys
import tempfile
import threading
from pathlib import Path

import numpy as np

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

from edge_roofline.models import zoo  # noqa: E402
from edge_roofline.backends import create_backend  # noqa: E402
from edge_roofline.backends.base import BackendError  # noqa: E402


def check(ok: bool, what: str) -> None:
    print(f"{'ok  ' if ok else 'FAIL'} {what}")
    if not ok:
        sys.exit(1)


def on_thread(fn):
    """fn() on a new thread, like the inference worker; its result, or its exception re-raised."""
    out = {}

    def target():
        try:
            out["value"] = fn()
        except BaseException as exc:  # noqa: BLE001 - re-raised on the caller's thread
            out["error"] = exc

    thread = threading.Thread(target=target, name="inference-worker")
    thread.start()
    thread.join()
    if "error" in out:
        raise out["error"]
    return out.get("value")


def main() -> int:
    ap = argparse.ArgumentParser()
    ap.add_argument("--model", default="tiny_cnn")
    ap.add_argument("--precision", default="fp16", choices=("fp32", "fp16"))
    ap.add_argument("--cache", default=None, help="engine cache dir (default: a temp dir)")
    args = ap.parse_args()
    model = zoo.build(args.model)
    cache = Path(args.cache or tempfile.mkdtemp(prefix="trt_smoke_"))
    opts = {"precision": args.precision, "cache_dir_path": cache}

    with create_backend("tensorrt", **opts) as trt_backend:
        trt_backend.load(model)
        engine_path = trt_backend.engine_path
        check(trt_backend.built and engine_path.exists() and engine_path.with_suffix(".json").exists(),
              f"built {engine_path} (+ sidecar)")
    with create_backend("tensorrt", mapping_onnx=model, **opts) as prebuilt:
        prebuilt.load(engine_path)
        check(any(l.onnx_nodes for l in prebuilt.describe_layers()),
              "prebuilt engine loads and maps to the ONNX given as mapping_onnx")
    trt_backend = create_backend("tensorrt", **opts)  # built on this thread ...
    trt_backend.load(model)
    check(not trt_backend.built, "second load is a cache hit (no rebuild)")
    feeds = trt_backend.dummy_feeds(seed=1)
    result = trt_backend.run(feeds)
    on_worker = on_thread(lambda: trt_backend.run(feeds))  # ... and run on another, as the node does
    err = float(np.max(np.abs(on_worker.outputs[next(iter(result.outputs))].astype(np.float32)
                              - result.outputs[next(iter(result.outputs))].astype(np.float32))))
    check(err == 0.0, f"run from a second thread gives the same outputs (max abs diff {err:.2e})")
    profile = on_thread(lambda: trt_backend.profile(feeds, runs=10))
    check(bool(profile.layer_times_s), f"profiled from the second thread ({len(profile.layer_times_s)} layers timed)")
    on_thread(trt_backend.close)  # raises if the buffers cannot be freed there
    owners = profile.node_to_layer()  # raises if a node is covered twice
    nodes = [n.name for n in model.graph.node]
    missing = [n for n in nodes if n not in owners]
    print(f"     {len(profile.layer_info)} layers, {len(owners)}/{len(nodes)} ONNX nodes mapped, "
          f"layer sum {profile.layer_time_sum_s * 1e3:.3f} ms of {profile.total_time_s * 1e3:.3f} ms")
    check(set(profile.layer_times_s) <= {l.name for l in profile.layer_info},
          "every timed layer is described by the inspector")
    # Nodes TensorRT removes entirely (Flatten/Reshape no-ops) legitimately have no layer.
    check(len(missing) <= len(nodes) // 4, f"mapping coverage (unmapped: {missing})")
    with create_backend("ort") as ort_backend:
        ort_backend.load(model)
        expected = ort_backend.run(feeds).outputs
    tol = 1e-2 if args.precision == "fp16" else 1e-4
    for name, want in expected.items():
        err = float(np.max(np.abs(result.outputs[name].astype(np.float32) - want)))
        check(err <= tol * max(1.0, float(np.max(np.abs(want)))), f"output {name} vs ORT: max abs err {err:.2e}")
    return 0


if __name__ == "__main__":
    try:
        sys.exit(main())
    except BackendError as exc:  # no TensorRT/pycuda, build or load failure
        print(f"FAIL {exc}")
        sys.exit(2)
