"""Cost of one profiled run (backend.profile + join_profile) vs a normal run, and the amortised
overhead at the pipeline's default settings (one profiled run every 300 frames or 10 s,
whichever comes first). ONNX Runtime on the host CPU; prints numbers, asserts nothing.

    python benchmarks/bench_profiling.py [--model zoo:NAME] [--runs N]
"""

import argparse
import statistics
import sys
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

from edge_roofline import zoo  # noqa: E402
from edge_roofline.backends.base import create_backend  # noqa: E402
from edge_roofline.profiling import join_profile  # noqa: E402
from edge_roofline.roofline.ceilings import spec_ceilings  # noqa: E402
from edge_roofline.roofline.costs import analyze_model  # noqa: E402

EVERY_FRAMES, EVERY_S = 300, 10.0


def main() -> int:
    ap = argparse.ArgumentParser()
    ap.add_argument("--model", default="zoo:tiny_cnn")
    ap.add_argument("--runs", type=int, default=50)
    args = ap.parse_args()
    model = zoo.build(args.model.removeprefix("zoo:"))
    cost = analyze_model(model)
    ceilings = spec_ceilings("agx_orin_64gb", "fp32")
    with create_backend("ort") as backend:
        backend.load(model)
        feeds = backend.dummy_feeds()
        for _ in range(5):
            backend.run(feeds)
        run_s = []
        for _ in range(args.runs):
            start = time.perf_counter()
            backend.run(feeds)
            run_s.append(time.perf_counter() - start)
        profiled_s = []
        for _ in range(max(3, args.runs // 10)):
            start = time.perf_counter()
            join_profile(cost, backend.profile(feeds), ceilings)
            profiled_s.append(time.perf_counter() - start)
    run_med, prof_med = statistics.median(run_s), statistics.median(profiled_s)
    extra_s = prof_med - run_med
    frames_per_profile = min(EVERY_FRAMES, max(1.0, EVERY_S / run_med))
    amortised = extra_s / frames_per_profile / run_med
    print(f"{args.model}: run {run_med * 1e3:.3f} ms, profiled run + join {prof_med * 1e3:.3f} ms "
          f"({prof_med / run_med:.1f}x)")
    print(f"amortised over one profile per {frames_per_profile:.0f} frames: "
          f"{100 * amortised:.3f}% of mean latency")
    return 0


if __name__ == "__main__":
    sys.exit(main())
