"""``edge-roofline analyze MODEL.onnx``: per-layer FLOPs, bytes and roofline bounds of an ONNX
model on a Jetson operating point, as a table, JSON and charts. A language model's decoder
(a KV cache) is also reported per phase: a prefill of ``--prompt`` tokens and a decode step at
each ``--context``, all from the one graph (``roofline/decoder.py``)."""

from __future__ import annotations

import argparse

from edge_roofline.roofline.costs import WEIGHT_PRECISIONS
from edge_roofline.commands._args import chart_file, count, output_file

DEFAULT_PROMPT = 128

NAME = "analyze"
HELP = "per-layer roofline analysis of an ONNX model on a device and operating point"


def add_arguments(parser: argparse.ArgumentParser) -> None:
    parser.add_argument("model", help="ONNX model file or zoo:NAME")
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
    parser.add_argument("--weight-precision", choices=WEIGHT_PRECISIONS,
                        help="weight-only precision (e.g. int4 weights, --precision fp16 "
                             "activations); default: --precision")
    parser.add_argument("--batch", type=int, default=1, help="fills symbolic leading input dims")
    parser.add_argument("--context", metavar="N,N,...", type=_lengths,
                        help="decoders: decode steps at these context lengths (tokens in the "
                             f"KV cache; default: the prompt length, {DEFAULT_PROMPT})")
    parser.add_argument("--prompt", metavar="N", type=int,
                        help=f"decoders: prefill of N prompt tokens (default {DEFAULT_PROMPT})")
    parser.add_argument("--input", metavar="NAME=DIMS", action="append", default=[],
                        help="input shape, e.g. images=1x3x640x640 (repeatable)")
    parser.add_argument("--cache-aware", action="store_true",
                        help="add L2/L1 bandwidth terms with estimated per-level bytes")
    parser.add_argument("--top", type=count(0), default=0,
                        help="print only the N slowest layers (default: all)")
    parser.add_argument("--json", metavar="FILE", type=output_file, help="write the analysis as JSON")
    parser.add_argument("--plot", metavar="FILE", type=chart_file, help="roofline chart (.png or .svg)")
    parser.add_argument("--time-plot", metavar="FILE", type=chart_file, help="time roofline chart (.png or .svg)")
    parser.add_argument("--layers-plot", metavar="FILE", type=chart_file, help="per-layer time bars (.png or .svg)")
    parser.add_argument("--phase-plot", metavar="FILE", type=chart_file,
                        help="decoders: prefill and decode steps on the roofline (.png or .svg)")


def _lengths(text: str) -> list[int]:
    try:
        values = [int(v) for v in text.split(",") if v.strip()]
    except ValueError:
        values = []
    if not values or min(values) < 0:
        raise argparse.ArgumentTypeError(f"{text!r}: expected context lengths like 128,512,2048")
    return values


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
    from edge_roofline.models.source import load_model_source
    from edge_roofline.roofline.ceilings import max_clock_preset, preset_ceilings
    from edge_roofline.roofline.costs import analyze_model, load_onnx
    from edge_roofline.roofline.decoder import DecoderError, decoder_signature
    from edge_roofline.roofline.devices import get_device
    from edge_roofline.roofline.model import analyze_roofline

    inputs = dict(parse_input_shape(t) for t in args.input)
    device = get_device(args.device)
    point = args.operating_point or max_clock_preset(device).name
    peak_precision = "fp16" if args.precision == "mixed" else args.precision
    ceilings = [preset_ceilings(device, _preset_key(p), peak_precision, engine=args.engine)
                for p in [point, *args.compare]]
    if args.all_precisions:
        ceilings += [preset_ceilings(device, _preset_key(point), p, engine=args.engine)
                     for p in device.precisions if p != peak_precision]
    # Loaded once (weights dropped: costs need shapes) for the decoder check and the analyses.
    model, name = load_onnx(load_model_source(args.model))
    model.graph.name = name
    phases = []
    if decoder_signature(model) is not None:
        per_step = _decoder_phases(model, args, inputs, ceilings, args.cache_aware)
        analyses = [p.analysis for p in per_step[0]]  # the headline step at every point
        phases = [at_points[0] for at_points in per_step]  # every step at the operating point
        shapes = phases[0].step.cost.input_shapes
    else:
        if args.context is not None or args.prompt is not None or args.phase_plot:
            raise DecoderError(f"{args.model}: --context, --prompt and --phase-plot need a decoder "
                               "with a KV cache (past_* inputs or present_* outputs)")
        cost = analyze_model(model, precision=args.precision, batch=args.batch,
                             input_shapes=inputs or None, weight_precision=args.weight_precision)
        analyses = [analyze_roofline(cost, c, cache_aware=args.cache_aware) for c in ceilings]
        shapes = cost.input_shapes
    weights = f", weights {args.weight_precision}" if args.weight_precision else ""
    print(f"{analyses[0].model} on {device.name}, {point}, {args.engine} {args.precision}{weights}, "
          f"batch {args.batch}, inputs {shapes}")
    if phases:
        print(f"layers of the {phases[0].label} step:")
    print(_format_table(analyses[0], args.top))
    if phases:
        print(_format_phases(phases))
    _write_outputs(args, analyses, phases, device, point)
    return 0


def _decoder_phases(model, args, inputs, ceilings, cache_aware: bool) -> list[list]:
    """Per step asked for, its PhaseBound at each operating point: the prefill and a decode step
    per context (a graph exported at fixed lengths: its own step), the headline step (the first
    decode step, else the prefill) first."""
    from edge_roofline.roofline.decoder import DecoderCostModel
    from edge_roofline.roofline.phases import bound_phase

    costs = DecoderCostModel(model, precision=args.precision, weight_precision=args.weight_precision,
                             batch=args.batch, input_shapes=inputs or None)
    sig = costs.signature
    fixed_new, fixed_past = sig.fixed_length("new"), sig.fixed_length("past")
    if args.prompt is None and args.context is None and fixed_new is not None:
        steps = [costs.step(fixed_new, fixed_past or 0)]  # exported at fixed lengths: as it stands
    else:
        prompt = DEFAULT_PROMPT if args.prompt is None else args.prompt
        contexts = args.context if args.context is not None else ([prompt] if sig.has_kv_cache else [])
        steps = [costs.step(1, c) for c in contexts] + [costs.step(prompt, 0)]
    return [[bound_phase(s, c, cache_aware=cache_aware) for c in ceilings] for s in steps]


def _format_phases(phases) -> str:
    head = (f"{'phase':<8} {'new':>5} {'context':>7} {'GFLOP':>9} {'weights MB':>10} {'KV MB':>8} "
            f"{'total MB':>9} {'FLOP/B':>7} {'bound':<7} {'roof ms':>9} {'attain ms':>9} "
            f"{'ms/token':>9} {'tokens/s':>9}")
    rows = [f"phases ({phases[0].analysis.ceilings.label}, ridge {phases[0].ridge_point:.1f} FLOP/B):",
            head, "-" * len(head)]
    for p in phases:
        rows.append(f"{p.phase:<8} {p.new_tokens:>5} {p.context:>7} {p.flops / 1e9:>9.4f} "
                    f"{p.weight_bytes / 1e6:>10.3f} {p.kv_cache_bytes / 1e6:>8.3f} {p.bytes / 1e6:>9.3f} "
                    f"{p.arithmetic_intensity:>7.2f} {p.bound:<7} {p.roofline_time_s * 1e3:>9.4f} "
                    f"{p.attainable_time_s * 1e3:>9.4f} {p.time_per_token_s * 1e3:>9.4f} "
                    f"{p.tokens_per_s:>9.1f}")
    rows.append("bound: the step's intensity against the ridge; roof: max(W/F, Q/B) of the step as "
                "one fused unit; attain: per unfused layer, with its fixed overhead")
    return "\n".join(rows)


def _write_outputs(args, analyses, phases, device, point) -> None:
    import json

    from edge_roofline.roofline import charts
    from edge_roofline.roofline.model import to_json_dict
    from edge_roofline.roofline.phases import phase_to_json

    if args.json:
        doc = to_json_dict(analyses[0], device=device.key,
                           operating_point=device.preset(_preset_key(point)).name)
        doc["weight_precision"] = args.weight_precision or args.precision
        if phases:
            doc["phase"] = phases[0].phase
            doc["phases"] = [phase_to_json(p) for p in phases]
        with open(args.json, "w") as f:
            json.dump(doc, f, indent=2)
        print(f"wrote {args.json}")
    for path, draw in ((args.plot, charts.roofline_chart), (args.time_plot, charts.time_roofline_chart)):
        if path:
            print(f"wrote {draw(analyses, path)}")
    if args.layers_plot:
        print(f"wrote {charts.layer_time_chart(analyses[0], args.layers_plot)}")
    if args.phase_plot:
        compare = [a.ceilings for a in analyses[1:]]
        print(f"wrote {charts.phase_roofline_chart(phases, args.phase_plot, compare=compare)}")


def _preset_key(name: str) -> int | str:
    return int(name) if name.isdigit() else name
