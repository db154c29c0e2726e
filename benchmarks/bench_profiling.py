"""Cost of one profiled run vs a normal run, and the amortised overhead of sampled profiling
as the inference pipeline does it (edge_roofline.inference.pipeline: a profile every 300 frames or 10 s,
and only once the previous profile's extra cost is <= 0.5% of the inference time served since).

Profiles are spaced by normal frames, as in service, so the background preparation of the
next ONNX Runtime profiling session overlaps served frames instead of being waited for.
Reported per profile: the caller's extra time (profile() + join_profile() minus one normal
run) and the background preparation (session from the optimized model + warm-up), which is
CPU work off the serving thread. ONNX Runtime on the host CPU; prints numbers, asserts nothing.

    python benchmarks/bench_profiling.py [--model zoo:NAME|FILE.onnx] [--frames N]
        [--every-frames 300] [--every-s 10] [--budget 0.005]
"""

import argparse
import statistics
import sys
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

from edge_roofline.backends import create_backend  # noqa: E402
from edge_roofline.inference.profile_join import join_profile  # noqa: E402
from edge_roofline.models.source import load_model  # noqa: E402
from edge_roofline.roofline.ceilings import spec_ceilings  # noqa: E402
from edge_roofline.roofline.costs import analyze_model  # noqa: E402


def main() -> int:
    ap = argparse.ArgumentParser()
    ap.add_argument("--model", default="zoo:tiny_cnn")
    ap.add_argument("--frames", type=int, default=200, help="normal frames between profiles")
    ap.add_argument("--profiles", type=int, default=5)
    ap.add_argument("--every-frames", type=int, default=300)
    ap.add_argument("--every-s", type=float, default=10.0)
    ap.add_argument("--budget", type=float, default=0.005)
    args = ap.parse_args()
    model = load_model(args.model)
    cost = analyze_model(model)
    ceilings = spec_ceilings("agx_orin_64gb", "fp32")
    run_s, extra_s, prepare_s = [], [], []
    with create_backend("ort") as backend:
        backend.load(model)
        feeds = backend.dummy_feeds()
        for _ in range(10):
            backend.run(feeds)
        join_profile(cost, backend.profile(feeds), ceilings)  # first: optimizes + groups once
        for _ in range(args.profiles):
            for _ in range(args.frames):
                start = time.perf_counter()
                backend.run(feeds)
                run_s.append(time.perf_counter() - start)
            prepare_s.append(backend.profiler_prepare_s)  # the session about to be used
            start = time.perf_counter()
            join_profile(cost, backend.profile(feeds), ceilings)
            extra_s.append(time.perf_counter() - start - statistics.median(run_s))
    run_med, extra_med, prep_med = (statistics.median(v) for v in (run_s, extra_s, prepare_s))
    frames_trigger = min(args.every_frames, max(1.0, args.every_s / run_med))
    frames_budget = extra_med / (args.budget * run_med)  # the budget gate's wait
    frames_per_profile = max(frames_trigger, frames_budget)

    def pct(cost_s: float) -> float:
        return 100 * cost_s / (frames_per_profile * run_med)

    print(f"{args.model}: run {run_med * 1e3:.3f} ms; profiled run + join adds "
          f"{extra_med * 1e3:.3f} ms on the serving thread ({(extra_med + run_med) / run_med:.1f}x "
          f"a run); next profiling session prepared in the background in {prep_med * 1e3:.2f} ms")
    print(f"trigger every {args.every_frames} frames / {args.every_s:g} s -> every "
          f"{frames_trigger:.0f} frames: {100 * extra_med / (frames_trigger * run_med):.3f}% "
          f"of mean latency")
    print(f"with the {100 * args.budget:g}% budget gate: one profile per {frames_per_profile:.0f} "
          f"frames ({frames_per_profile * run_med:.2f} s): serving thread {pct(extra_med):.3f}%, "
          f"plus background CPU {pct(prep_med):.3f}%")
    return 0


if __name__ == "__main__":
    sys.exit(main())
