"""Inference node overhead per frame vs calling the backend directly (640x480 rgb8 frames,
zoo tiny_cnn on ONNX Runtime), and the cost of per-layer profiling.

Prints numbers; asserts nothing. Goals: node overhead < 0.5 ms per frame; amortised profiling
overhead at default settings (one profiled run every 300 frames or 10 s) < 1% of mean latency.

    python benchmarks/bench_inference.py [--frames N] [--model zoo:NAME]
"""

import argparse
import statistics
import sys
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

from edge_roofline.nodes import convert  # noqa: E402
from edge_roofline.inference.preprocess import image_to_array, preprocess  # noqa: E402
from edge_roofline.roofline.ceilings import spec_ceilings  # noqa: E402
from edge_roofline.inference.pipeline import Frame, InferenceConfig, InferencePipeline  # noqa: E402
from edge_roofline.inference.synthetic import frame  # noqa: E402


def median_ms(samples):
    return 1e3 * statistics.median(samples)


def main() -> int:
    ap = argparse.ArgumentParser()
    ap.add_argument("--frames", type=int, default=300)
    ap.add_argument("--model", default="zoo:tiny_cnn")
    args = ap.parse_args()
    ceilings = spec_ceilings("agx_orin_64gb", "fp32", engine="cpu")
    pipe = InferencePipeline(InferenceConfig(model=args.model, profile_every_frames=0, profile_every_s=0),
                             lambda: ceilings)
    backend, pre_cfg = pipe.loaded.backend, pipe.loaded.preprocess
    pixels = frame(0, 640, 480, "rgb8")
    data = pixels.tobytes()
    image = Frame(arrival_s=0.0, encoding="rgb8", width=640, height=480, step=640 * 3, data=data)
    feeds = pipe.loaded.feeds(image)
    pipe.submit(image)
    pipe.process_next()  # the first frame is profiled; time the fast path after it

    direct, pre_only, node = [], [], []
    for _ in range(args.frames):
        t0 = time.perf_counter()
        backend.run(feeds)
        direct.append(time.perf_counter() - t0)
        t0 = time.perf_counter()
        array, order = image_to_array("rgb8", 640, 480, 640 * 3, data)
        preprocess(array, order, pre_cfg)
        pre_only.append(time.perf_counter() - t0)
        t0 = time.perf_counter()
        pipe.submit(Frame(arrival_s=pipe.clock.now_s(), encoding="rgb8", width=640, height=480, step=640 * 3,
                          data=data))
        result = pipe.process_next()
        stats = convert.inference_stats_msg(result)
        convert.tensor_array_msg(result.outputs, stats.header)
        node.append(time.perf_counter() - t0)

    profiled = []
    for _ in range(5):
        t0 = time.perf_counter()
        backend.profile(feeds)
        profiled.append(time.perf_counter() - t0)
    extra_s = statistics.median(profiled) - statistics.median(direct)
    # The pipeline's rule (inference/schedule.py): every 300 frames or 10 s, but never before the
    # extra cost of the last profiled run is within profile_budget_fraction of the wall-clock time.
    budget = pipe.config.profile_budget_fraction
    interval_s = max(min(300 / 30.0, 10.0), extra_s / budget)  # at a 30 Hz camera
    print(f"model {args.model}, {args.frames} frames of 640x480 rgb8 (median per frame)")
    print(f"  backend.run directly               {median_ms(direct):8.3f} ms")
    print(f"  decode + resize + normalise        {median_ms(pre_only):8.3f} ms  (work a direct caller does too)")
    print(f"  pipeline + stats/output messages   {median_ms(node):8.3f} ms")
    overhead_ms = median_ms(node) - median_ms(direct) - median_ms(pre_only)
    print(f"  node overhead beyond backend+preprocessing {overhead_ms:8.3f} ms  (goal < 0.5 ms)")
    print(f"  one profiled run                   {median_ms(profiled):8.3f} ms  "
          f"(+{1e3 * extra_s:.3f} ms vs a normal run)")
    print(f"  profiling at a 30 Hz camera        {100 * extra_s / interval_s:8.3f} % of wall time "
          f"(one profiled run every {interval_s:.1f} s; goal < 1%)")
    pipe.close()
    return 0


if __name__ == "__main__":
    sys.exit(main())
