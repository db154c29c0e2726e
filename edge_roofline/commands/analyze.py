"""``edge-roofline analyze MODEL.onnx``: per-layer FLOPs, bytes and roofline bounds of an ONNX
model on a Jetson operating point, as a table, JSON and charts."""

from __future__ import annotations

import argparse

NAME = "analyze"
HELP = "per-layer roofline analysis of an ONNX model on a device and operating point"


def add_arguments(parser: argparse.ArgumentParser) -> None:
    parser.add_argument("model", help="ONNX model file")
    parser.add_argument("--device", default="agx_orin_64gb",
                        help="device catalogue key or name (default: agx_orin_64gb)")
    parser.add_argument("--operating-point", metavar="NAME",
                        help="nvpmodel preset name or id (default: MAXN / the max-clock preset)")
    parser.add_argument("--compare", metavar="NAME", action="append", default=[],
                        help="also draw this preset's ceilings in the charts (repeatable)")
    parser.add_argument("--engine", choices=("gpu", "cpu", "dla"), default="gpu")
    parser.add_argument("--precision", choices=("fp32", "fp16", "int8", "fp8", "fp4", "mixed"), default="fp32",
                        help="tensor precision for bytes and peak (mixed: tensors' own types, "
                             "fp16 peak; fp8/fp4 on devices whose Tensor Cores have them: Thor)")
    parser.add_argument("--all-precisions", action="store_true",
                        help="also draw the roofs of every other precision the device has (fp32 ... fp4)")
    parser.add_argument("--batch", type=int, default=1, help="fills symbolic leading input dims")
    parser.add_argument("--input", metavar="NAME=DIMS", action="append", default=[],
                        help="input shape, e.g. images=1x3x640x640 (repeatable)")
    parser.add_argument("--cache-aware", action="store_true",
                        help="add L2/L1 bandwidth terms with estimated per-level bytes")
    parser.add_argument("--top", type=int, default=0,
                        help="print only the N slowest layers (default: all)")
    parser.add_argument("--json", metavar="FILE", help="write the analysis as JSON")
    parser.add_argument("--plot", metavar="FILE", help="roofline chart (.png or .svg)")
    parser.add_argument("--time-plot", metavar="FILE", help="time roofline chart (.png or .svg)")
    parser.add_argument("--layers-plot", metavar="FILE", help="per-layer time bars (.png or .svg)")


def parse_input_shape(text: str) -> tuple[str, tuple[int, ...]]:
    """``NAME=1x3x224x224`` or ``NAME=1,3,224,224`` -> (NAME, dims)."""
    name, sep, dims = text.rpartition("=")
    try:
        shape = tuple(int(d) for d in dims.replace(",", "x").split("x") if d)
    except ValueError:
        shape = ()
    if not sep or not name or not shape:
        raise ValueError(f"--input {text!r}: expected NAME=D0xD1x... (e.g. images=1x3x224x224)")
    return name, shape


def _format_table(analysis, top: int) -> str:
    layers = list(analysis.layers)
    if top:
        keep = {id(l) for l in sorted(layers, key=lambda l: l.attainable_time_s, reverse=True)[:top]}
        layers = [l for l in layers if id(l) in keep]
    total_s = analysis.attainable_time_s or 1.0
    width = max([len(l.name) for l in layers] + [5])
    head = (f"{'layer':<{width}}  {'op':<18} {'MFLOP':>10} {'MB':>9} {'FLOP/B':>8} "
            f"{'bound':<8} {'time us':>9} {'share':>6}")
    rows = [head, "-" * len(head)]
    for l in layers:
        op = l.op_type if l.known else f"{l.op_type}?"
        rows.append(f"{l.name:<{width}}  {op:<18} {l.flops / 1e6:>10.3f} {l.bytes / 1e6:>9.3f} "
                    f"{l.arithmetic_intensity:>8.1f} {l.bound:<8} {l.attainable_time_s * 1e6:>9.2f} "
                    f"{100 * l.attainable_time_s / total_s:>5.1f}%")
    by_bound = analysis.time_by_bound()
    rows.append("-" * len(head))
    rows.append(f"total: {len(analysis.layers)} layers, {analysis.total_flops / 1e9:.3f} GFLOP "
                f"({analysis.total_macs / 1e9:.3f} GMAC), {analysis.total_bytes / 1e6:.1f} MB, "
                f"intensity {analysis.total_flops / max(analysis.total_bytes, 1):.1f} FLOP/B, "
                f"attainable {analysis.attainable_time_s * 1e3:.3f} ms")
    rows.append("time by bound: " + ", ".join(
        f"{b} {t * 1e3:.3f} ms ({100 * t / total_s:.0f}%)" for b, t in by_bound.items()))
    c = analysis.ceilings
    rows.append(f"ceilings ({c.source}): {c.label}: peak {c.peak_flops / 1e12:.3f} TFLOP/s, DRAM "
                f"{c.dram_text()}, ridge {'>= ' if c.dram_unresolved else ''}{c.ridge_point:.1f} FLOP/B, "
                f"overhead {c.layer_overhead_s * 1e6:.1f} us/layer")
    if analysis.unknown_ops:
        rows.append("unknown ops (FLOPs not modelled, marked '?'): " + ", ".join(analysis.unknown_ops))
    return "\n".join(rows)


def run(args: argparse.Namespace) -> int:
    import json

    from edge_roofline.roofline import charts
    from edge_roofline.roofline.ceilings import max_clock_preset, preset_ceilings
    from edge_roofline.roofline.costs import analyze_model
    from edge_roofline.roofline.devices import get_device
    from edge_roofline.roofline.model import analyze_roofline, to_json_dict

    inputs = dict(parse_input_shape(t) for t in args.input)
    device = get_device(args.device)
    point = args.operating_point or max_clock_preset(device).name
    peak_precision = "fp16" if args.precision == "mixed" else args.precision
    ceilings = [preset_ceilings(device, _preset_key(p), peak_precision, engine=args.engine)
                for p in [point, *args.compare]]
    if args.all_precisions:
        ceilings += [preset_ceilings(device, _preset_key(point), p, engine=args.engine)
                     for p in device.precisions if p != peak_precision]
    cost = analyze_model(args.model, precision=args.precision, batch=args.batch, input_shapes=inputs or None)
    analyses = [analyze_roofline(cost, c, cache_aware=args.cache_aware) for c in ceilings]
    print(f"{cost.model} on {device.name}, {point}, {args.engine} {args.precision}, batch "
          f"{args.batch}, inputs {cost.input_shapes}")
    print(_format_table(analyses[0], args.top))
    if args.json:
        with open(args.json, "w") as f:
            json.dump(to_json_dict(analyses[0], device=device.key,
                                   operating_point=device.preset(_preset_key(point)).name), f, indent=2)
        print(f"wrote {args.json}")
    for path, draw in ((args.plot, charts.roofline_chart), (args.time_plot, charts.time_roofline_chart)):
        if path:
            print(f"wrote {draw(analyses, path)}")
    if args.layers_plot:
        print(f"wrote {charts.layer_time_chart(analyses[0], args.layers_plot)}")
    return 0


def _preset_key(name: str) -> int | str:
    return int(name) if name.isdigit() else name
