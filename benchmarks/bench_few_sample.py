"""Few-sample characterisation on the virtual AGX Orin (SIMULATION): for each model, a full
96-point grid sweep, then the governor's predictor fitted on K points chosen by
``characterise.plan.choose_few``; prints latency and power MAPE against the full sweep (on the
points not fitted on) and the sweep wall time, on the catalogue physics and on boards whose
physics are perturbed by up to 30 %. Goals: latency MAPE <= 10 %, power MAPE <= 5 %.

    PYTHONPATH=. .venv/bin/python benchmarks/bench_few_sample.py [--budget 12] [--models ...]
"""

from __future__ import annotations

import argparse
import io
import sys
import tempfile
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

from edge_roofline.models import zoo  # noqa: E402
from edge_roofline.characterise import predict  # noqa: E402
from edge_roofline.characterise.plan import choose_few, sweep_points  # noqa: E402
from edge_roofline.characterise.store import Store  # noqa: E402
from edge_roofline.characterise.sweep import Sweep, SweepSettings, virtual_rig  # noqa: E402

DEVICE = "agx_orin_64gb"
# Defaults of a real sweep except the energy window (0.5 s of simulated time per point).
SETTINGS = SweepSettings(runs=200, warmup=20, settle_s=1.0, idle_s=1.0, min_window_s=0.5)


def run_case(model_name: str, model, perturbation: float, seed: int, budget: int) -> dict:
    rig = virtual_rig(DEVICE, "fp16", perturbation=perturbation, seed=seed)
    rig.backend.load(model)
    cost, device = rig.backend.cost, rig.platform.device
    with tempfile.TemporaryDirectory() as out, Store(out) as store:
        points = sweep_points(rig.platform, "grid")
        sim_start = rig.clock.now_s()
        t0 = time.perf_counter()
        Sweep(rig.platform, rig.backend, store, cost, clock=rig.clock, settings=SETTINGS, threaded_sampling=False,
              precision="fp16", progress_stream=io.StringIO()).run(points)
        wall_s = time.perf_counter() - t0
        sim_s = rig.clock.now_s() - sim_start
        measured = store.results(cost.model, "fp16")
        few = {p.name for p in choose_few(points, device, budget)}
        predictor = predict.fit_predictor(predict.reference_analysis(cost, device), device,
                                          [r for r in measured if r.name in few])
        acc = predict.accuracy(predict.predict_points(predictor, cost.model, "fp16", points, sorted(few)), measured)
    rig.close()
    return {"model": model_name, "perturbation": perturbation, "acc": acc, "wall_s": wall_s, "sim_s": sim_s,
            "points": len(points)}


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--models", nargs="+", default=["resnet50", "mobilenetv2", "yolo_tiny", "transformer", "lstm"])
    parser.add_argument("--budget", type=int, default=12)
    parser.add_argument("--seeds", type=int, nargs="+", default=[1, 2, 3], help="perturbed boards")
    args = parser.parse_args()
    print(f"SIMULATION: virtual {DEVICE}, 96-point grid, fp16, few-sample budget K={args.budget}; "
          f"goals latency MAPE <= 10 %, power MAPE <= 5 %")
    header = (f"{'model':<12} {'physics':<14} {'lat MAPE %':>10} {'lat max %':>9} {'pow MAPE %':>10} "
              f"{'pow max %':>9} {'goals':>6} {'sweep wall s':>12} {'sim s':>7}")
    print(header)
    print("-" * len(header))
    for name in args.models:
        model = zoo.build(name)
        cases = [(0.0, 0)] + [(0.3, s) for s in args.seeds]
        for perturbation, seed in cases:
            r = run_case(name, model, perturbation, seed, args.budget)
            a = r["acc"]
            ok = a.latency_mape_pct <= 10 and a.power_mape_pct <= 5
            physics = "catalogue" if not perturbation else f"30% seed {seed}"
            print(f"{name:<12} {physics:<14} {a.latency_mape_pct:>10.1f} {a.latency_max_pct:>9.1f} "
                  f"{a.power_mape_pct:>10.1f} {a.power_max_pct:>9.1f} {'met' if ok else 'MISSED':>6} "
                  f"{r['wall_s']:>12.2f} {r['sim_s']:>7.0f}", flush=True)
    print(f"(sim s: simulated device time of the sweep = what a real board would take at these settings: "
          f"settle {SETTINGS.settle_s} s + idle {SETTINGS.idle_s} s + warmup + max(runs, {SETTINGS.min_window_s} s) "
          f"per point)")
    return 0


if __name__ == "__main__":
    sys.exit(main())
