"""``edge-roofline sweep MODEL --platform jetson|nvml|virtual:DEVICE``: measure latency and
energy per inference at every operating point (or at ``--budget K`` of them and predict the
rest), store results in ``--out DIR`` (resumable), then write the HTML report, charts and the
operating-point table (see docs/characterise.md)."""

from __future__ import annotations

import argparse
import os
import signal
import sys
from pathlib import Path

from edge_roofline.commands._args import POSITIVE_MS, add_calibration_cache, calibration_options

NAME = "sweep"
HELP = "characterise a model over a device's operating points (latency, energy, Pareto front)"


def add_arguments(parser: argparse.ArgumentParser) -> None:
    from edge_roofline.characterise.sweep import SweepSettings

    d = SweepSettings()
    parser.add_argument("models", nargs="+", metavar="MODEL",
                        help="ONNX file or zoo:NAME; several share the points (3+ give energy-roofline fits)")
    parser.add_argument("--platform", required=True,
                        help="jetson | nvml | virtual:DEVICE (simulated time, e.g. virtual:agx_orin_64gb)")
    parser.add_argument("--points", default="grid",
                        help="grid (the governor's 96-point caps grid), presets, all, "
                             "or a JSON/YAML file of points (default: grid)")
    parser.add_argument("--runs", type=int, default=d.runs, help=f"measured inferences per point (default {d.runs})")
    parser.add_argument("--warmup", type=int, default=d.warmup,
                        help=f"warm-up inferences per point (default {d.warmup})")
    parser.add_argument("--settle-s", type=float, default=d.settle_s,
                        help=f"wait after applying a point (default {d.settle_s})")
    parser.add_argument("--idle-s", type=float, default=d.idle_s,
                        help=f"idle power window per point, 0 to skip (default {d.idle_s})")
    parser.add_argument("--min-window-s", type=float, default=d.min_window_s,
                        help=f"shortest energy window per point (default {d.min_window_s})")
    parser.add_argument("--layer-runs", type=int, default=0,
                        help="profiled runs per point for per-layer times (default 0: none)")
    parser.add_argument("--out", default="sweep_out", help="results directory (default sweep_out)")
    parser.add_argument("--budget", type=int, default=None,
                        help="few-sample mode: measure K points spanning the clock space (10-15) "
                             "and predict the rest")
    parser.add_argument("--precision", choices=("fp32", "fp16", "int8"), default="fp16")
    add_calibration_cache(parser)
    parser.add_argument("--resume", action="store_true",
                        help="continue a sweep in --out: finished points are not measured again")
    parser.add_argument("--backend", choices=("tensorrt", "ort"), default="tensorrt",
                        help="inference backend on a real device (default tensorrt)")
    parser.add_argument("--sysfs-root", default="/", help="sysfs root of a Jetson (default /)")
    parser.add_argument("--virtual-mode", default=None,
                        help="nvpmodel preset a virtual board starts in (default: its MAXN)")
    parser.add_argument("--perturbation", type=float, default=0.0,
                        help="virtual board: scale its physics randomly by up to this fraction")
    parser.add_argument("--seed", type=int, default=0, help="virtual board seed")
    parser.add_argument("--targets-ms", type=POSITIVE_MS, nargs="*", default=None,
                        help="latency targets for the energy-optimal table (default: spread over the range)")
    parser.add_argument("--no-report", action="store_true", help="skip the HTML report")


def _terminate(signum, frame) -> None:
    raise KeyboardInterrupt  # a kill restores the device like Ctrl-C does


def _calibration(args) -> dict:
    """The TensorRT backend's calibration cache: one model's int8 scales (by its tensors' names), so
    an int8 TensorRT sweep of several models cannot share one; the virtual board reads none."""
    backend = "virtual" if args.platform.startswith("virtual") else args.backend
    if backend == "tensorrt" and args.precision == "int8" and len(args.models) > 1:
        raise ValueError("--backend tensorrt builds each model at int8 from that model's calibration cache: sweep "
                         "them one at a time, each with its --calibration-cache FILE (the same --out gathers them)")
    return calibration_options(backend, args.precision, args.calibration_cache)


def _recorded(calibration: dict) -> dict:
    """The calibration cache in the sweep's settings, which --resume must match: the file it
    resolves to and what it holds (its path as typed would refuse the same file named another
    way, and take one rewritten in place)."""
    if not calibration:
        return {}
    from edge_roofline.backends.tensorrt_backend import calibration_sha256

    path = Path(calibration["calibration_cache"]).resolve()
    return {"calibration_cache": str(path), "calibration_sha256": calibration_sha256(path)}


def _make_rig(args, calibration: dict):
    from edge_roofline.characterise.sweep import device_rig, virtual_rig

    kind, _, device = args.platform.partition(":")
    if kind == "virtual":
        if not device:
            raise ValueError("--platform virtual needs a device: virtual:agx_orin_64gb")
        return virtual_rig(device, args.precision, mode=args.virtual_mode, seed=args.seed,
                           perturbation=args.perturbation)
    if kind not in ("jetson", "nvml"):
        raise ValueError(f"--platform {args.platform!r}: use jetson, nvml or virtual:DEVICE")
    return device_rig(args.platform, args.backend, args.precision, sysfs_root=args.sysfs_root, **calibration)


def _sweep_model(args, source: str, store, settings, calibration: dict) -> None:
    from edge_roofline.characterise import predict
    from edge_roofline.characterise.plan import choose_few, sweep_points
    from edge_roofline.characterise.sweep import Sweep
    from edge_roofline.models.source import load_model
    from edge_roofline.roofline.costs import analyze_model
    from edge_roofline.roofline.devices import get_device

    rig = _make_rig(args, calibration)
    sim = "SIMULATION: " if rig.simulated else ""
    try:
        model = load_model(source)
        rig.backend.load(model)
        cost = getattr(rig.backend, "cost", None) or analyze_model(model, precision=args.precision)
        points = sweep_points(rig.platform, args.points)
        device = get_device(rig.device_key) if rig.device_key else None
        if args.budget is not None:
            if device is None:
                raise ValueError("--budget needs a device in the catalogue (a Jetson); this platform "
                                 "is not: run a full sweep instead")
            todo = choose_few(points, device, args.budget)
        else:
            todo = points
        sweep = Sweep(rig.platform, rig.backend, store, cost, clock=rig.clock,
                      settings=settings, threaded_sampling=rig.threaded_sampling, precision=args.precision,
                      extra_settings={"model_source": source} | _recorded(calibration))
        summary = sweep.run(todo, resume=args.resume)
        print(f"{sim}{cost.model}: {summary.measured} points measured, {summary.failed} failed, "
              f"{summary.skipped} done before; {summary.wall_s:.1f} s; restored {summary.original_point}")
        if summary.failures:
            first = summary.failures[0]
            report = f"`edge-roofline report {args.out}`" if args.no_report else f"the report of {args.out}"
            print(f"{sim}{cost.model}: failed points: {', '.join(r.name for r in summary.failures)} (first error: "
                  f"{first.error}; {report} lists each error; --resume tries them again)", file=sys.stderr)
        if args.budget is not None:
            measured = store.results(cost.model, args.precision)
            chosen = {p.name for p in todo}
            fitted = [r for r in measured if r.ok and r.name in chosen]
            predictor = predict.fit_predictor(predict.reference_analysis(cost, device), device, fitted)
            predictions = predict.predict_points(predictor, cost.model, args.precision, points,
                                                 [r.name for r in fitted])
            store.put_predictions(predictions)
            acc = predict.accuracy(predictions, measured)
            print(f"{sim}few-sample: fitted on {len(fitted)} points, predicted {len(points)}"
                  + (f"; vs {acc.points} measured points: latency MAPE {acc.latency_mape_pct:.1f}%, "
                     f"power MAPE {acc.power_mape_pct:.1f}%" if acc else
                     " (no full sweep in --out to score against)"))
    finally:
        rig.close()


def run(args: argparse.Namespace) -> int:
    from edge_roofline.characterise import report
    from edge_roofline.characterise.store import DB_NAME, Store
    from edge_roofline.characterise.sweep import SweepSettings

    calibration = _calibration(args)  # refused before --out is made
    settings = SweepSettings(runs=args.runs, warmup=args.warmup, settle_s=args.settle_s, idle_s=args.idle_s,
                             min_window_s=args.min_window_s, layer_runs=args.layer_runs)
    previous = signal.signal(signal.SIGTERM, _terminate)
    new_dir, new_db = not os.path.exists(args.out), not os.path.exists(os.path.join(args.out, DB_NAME))
    try:
        with Store(args.out) as store:
            try:
                for source in args.models:
                    _sweep_model(args, source, store, settings, calibration)
            except BaseException:
                if new_db and not store.sweeps():  # refused before any model began: no empty --out left behind
                    store.path.unlink()
                    if new_dir:
                        store.dir.rmdir()
                raise
            simulated = store.simulated
        if not args.no_report:
            path = report.render(args.out, args.targets_ms)
            print(f"wrote {path}{' (SIMULATION)' if simulated else ''}")
    finally:
        signal.signal(signal.SIGTERM, previous)
    return 0
