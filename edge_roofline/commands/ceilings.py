"""``edge-roofline ceilings``: measure this machine's empirical ceilings (ERT-style sweep) and
cache them, or print a catalogue device's spec ceilings per preset."""

from __future__ import annotations

import argparse
import sys
from edge_roofline.commands._args import count

NAME = "ceilings"
HELP = "measure this machine's roofline ceilings (CPU, or --gpu), or print a device's spec ceilings"


def add_arguments(parser: argparse.ArgumentParser) -> None:
    parser.add_argument("--full", action="store_true",
                        help="the full sweep (more sizes and FLOPs per element; ~a minute) "
                             "instead of the quick one (seconds)")
    parser.add_argument("--gpu", action="store_true", help="measure the NVIDIA GPU (needs pycuda)")
    parser.add_argument("--precision", choices=("fp32", "fp16", "fp64"), default="fp32",
                        help="GPU kernel precision (the CPU measures fp32)")
    parser.add_argument("--threads", type=count(1), help="CPU threads (default: all)")
    parser.add_argument("--cache-dir", help="ceilings cache (default: ~/.cache/edge_roofline/ceilings)")
    parser.add_argument("--cached", action="store_true", help="print cached ceilings, do not measure")
    parser.add_argument("--points", action="store_true", help="also print every sweep point")
    parser.add_argument("--device", help="print the spec ceilings of this catalogue device instead")
    parser.add_argument("--operating-point", metavar="NAME", help="with --device: only this preset")


def _describe(c) -> str:
    def gbps(v):
        return f"{v / 1e9:.1f} GB/s" if v else "unresolved"
    return (f"{c.label}\n  peak {c.peak_flops / 1e9:.1f} GFLOP/s, DRAM {c.dram_text()}, "
            f"L2 {gbps(c.l2_bandwidth_bps)}, L1 {gbps(c.l1_bandwidth_bps)}, ridge "
            f"{'>= ' if c.dram_unresolved else ''}{c.ridge_point:.2f} FLOP/B, "
            f"overhead {c.layer_overhead_s * 1e6:.2f} us/layer ({c.source})")


def _print_spec(args) -> int:
    from edge_roofline.roofline.ceilings import CeilingsError, preset_ceilings
    from edge_roofline.roofline.devices import PRECISIONS, get_device

    device = get_device(args.device)
    presets = [device.preset(args.operating_point)] if args.operating_point else device.presets
    for p in presets:
        for engine in ("gpu", "cpu", "dla"):
            for precision in PRECISIONS:
                try:
                    print(_describe(preset_ceilings(device, p.name, precision, engine=engine)))
                except CeilingsError:
                    continue  # e.g. no DLA, or fp32 on the DLA
    return 0


def run(args: argparse.Namespace) -> int:
    from edge_roofline.roofline import ert, ert_gpu
    from edge_roofline.roofline.ceilings import CeilingsCache

    if args.device:
        return _print_spec(args)
    cache = CeilingsCache(args.cache_dir)
    engine, precision = ("gpu", args.precision) if args.gpu else ("cpu", "fp32")
    if args.cached:
        key, point = ert_gpu.gpu_identity() if args.gpu else ert.cpu_identity()
        found = cache.get(key, point, engine, precision)
        if found is None:
            raise FileNotFoundError(f"no cached {engine} {precision} ceilings in {cache.path(key, point)}; measure "
                                    f"them first: edge-roofline ceilings{' --gpu' if args.gpu else ''} "
                                    f"(without --cached)")
        print(_describe(found))
        if found.dram_warning:
            print(f"warning: {found.dram_warning}", file=sys.stderr)
        return 0
    result = (ert_gpu.measure_gpu_ceilings(precision, quick=not args.full) if args.gpu
              else ert.measure_cpu_ceilings(quick=not args.full, threads=args.threads))
    if args.points:
        print(f"{'working set':>12} {'FLOP/elem':>9} {'GB/s':>8} {'GFLOP/s':>9}")
        for p in result.points:
            print(f"{p.working_set_bytes / 1024:>10.0f} K {p.flops_per_element:>9} "
                  f"{p.bandwidth_bps / 1e9:>8.1f} {p.flops_per_s / 1e9:>9.2f}")
    print(_describe(result.ceilings))
    print("caches used to bin the sweep: " + ", ".join(
        f"{level} {size / 1024:.0f} KiB" for level, size in result.cache_bytes.items())
          + f"; largest working set {max(p.working_set_bytes for p in result.points) / 2 ** 20:.0f} MiB")
    print(f"cached in {cache.put(result.device_key, result.operating_point, result.ceilings)}")
    return 0
