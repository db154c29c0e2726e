"""Cost of one profiled run vs a normal run, and what the report cadence costs as the inference
pipeline schedules it (edge_roofline.inference.schedule: a report every N frames or T seconds, one
at start, after a switch and on an operating-point change, and the next never before the last
one's extra cost is within ``budget`` of the wall-clock time since it started).

Profiles are spaced by normal frames, as in service, so the background preparation of the
next ONNX Runtime profiling session overlaps served frames instead of being waited for.
Reported per profile: the caller's extra time (profile() + join_profile() minus one normal
run) and the background preparation (session from the optimized model + warm-up), which is
CPU work off the serving thread. ONNX Runtime on the host CPU; prints numbers, asserts nothing.

    python benchmarks/bench_profiling.py [--model zoo:NAME|FILE.onnx] [--frames N]
        [--rate-hz 30] [--every-frames 300] [--every-s 10] [--budget 0.02]
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
    ap.add_argument("--rate-hz", type=float, default=30.0, help="camera frame rate")
    ap.add_argument("--budget", type=float, default=0.02)
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
    triggers = [t for t in (args.every_s, args.every_frames / args.rate_hz if args.every_frames else 0) if t > 0]
    trigger_s = min(triggers) if triggers else float("inf")
    # The budget counts the background preparation too (inference/pipeline.py).
    interval_s = max(trigger_s, (extra_med + prep_med) / args.budget)
    print(f"{args.model}: run {run_med * 1e3:.3f} ms; profiled run + join adds "
          f"{extra_med * 1e3:.3f} ms on the serving thread ({(extra_med + run_med) / run_med:.1f}x "
          f"a run: one frame in {interval_s * args.rate_hz:.0f} waits that much longer); next profiling "
          f"session prepared in the background in {prep_med * 1e3:.2f} ms")
    print(f"at {args.rate_hz:g} Hz, every {args.every_frames} frames / {args.every_s:g} s, budget "
          f"{100 * args.budget:g}% of wall time: a report every {interval_s:.2f} s"
          f"{' (the budget spaces them)' if interval_s > trigger_s else ''}; the serving thread spends "
          f"{100 * extra_med / interval_s:.3f}% of wall time profiling, plus background CPU "
          f"{100 * prep_med / interval_s:.3f}%; shortest spacing the budget allows "
          f"{(extra_med + prep_med) / args.budget:.2f} s")
    return 0


if __name__ == "__main__":
    sys.exit(main())
