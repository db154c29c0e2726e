"""``edge-roofline profile MODEL.onnx|zoo:NAME --backend ort|tensorrt|virtual``: run the model,
measure per-layer times and join them to the roofline (achieved FLOP/s and bytes/s, % of the
roof, bound per ONNX node)."""

from __future__ import annotations

import argparse
from edge_roofline.commands._args import add_calibration_cache, calibration_options, chart_file, count, output_file

NAME = "profile"
HELP = "measured per-layer times of a model joined to its roofline"


def add_arguments(parser: argparse.ArgumentParser) -> None:
    parser.add_argument("model", help="ONNX model file or zoo:NAME (e.g. zoo:resnet18), or a prebuilt TensorRT "
                                      "engine (.engine/.plan) with --backend tensorrt and --onnx-model")
    parser.add_argument("--onnx-model", metavar="FILE", default=None,
                        help="with an engine as model: the ONNX file (or zoo:NAME) it was built from, read for the "
                             "cost model and the mapping of the engine's layers to ONNX nodes")
    parser.add_argument("--backend", choices=("ort", "tensorrt", "virtual"), default="ort")
    parser.add_argument("--device", default=None,
                        help="device catalogue key for the ceilings (default: the host CPU's "
                             "measured ceilings for ort, agx_orin_64gb otherwise)")
    parser.add_argument("--precision", choices=("fp32", "fp16", "int8"), default=None,
                        help="default: fp32 for ort, fp16 for tensorrt and virtual (an engine: the precision "
                             "it was built at; refused if its sidecar says another)")
    add_calibration_cache(parser)
    parser.add_argument("--runs", type=count(1), default=10, help="profiled runs to average")
    parser.add_argument("--json", metavar="FILE", type=output_file, help="write analyze's JSON plus measured times")
    parser.add_argument("--plot", metavar="FILE", type=chart_file, help="roofline chart (.png or .svg)")


def _graph_and_source(args):
    """The ONNX graph the roofline is drawn from and what the backend loads: the model itself, or
    for a prebuilt engine the ONNX model it was built from (the engine holds TensorRT's layers)."""
    from edge_roofline.models.source import is_engine, load_model, load_model_source

    if not is_engine(args.model):
        if args.onnx_model:
            raise ValueError(f"--onnx-model is read only with a TensorRT engine as model ({args.model} is not one): "
                             "leave it out")
        model = load_model(args.model)
        return model, model
    if args.backend != "tensorrt":
        raise ValueError(f"{args.model} is a TensorRT engine: give --backend tensorrt, or the ONNX model it was "
                         "built from as model")
    if not args.onnx_model:
        raise ValueError(f"{args.model} is a TensorRT engine, with no ONNX graph for the cost model and the layer "
                         "mapping: give --onnx-model FILE (the ONNX model it was built from)")
    return load_model(args.onnx_model), load_model_source(args.model)


def _ceilings(args, precision: str):
    from edge_roofline.roofline.ceilings import max_clock_preset, preset_ceilings
    from edge_roofline.roofline.devices import get_device

    if args.device is None and args.backend == "ort":
        from edge_roofline.inference.ceilings import host_cpu_ceilings
        return host_cpu_ceilings()(), None, "host CPU"
    device = get_device(args.device or "agx_orin_64gb")
    preset = max_clock_preset(device)
    engine = "cpu" if args.backend == "ort" else "gpu"
    return preset_ceilings(device, preset.name, precision, engine=engine), device.key, preset.name


def format_table(analysis) -> str:
    width = max([len(l.name) for l in analysis.layers] + [5])
    head = (f"{'layer':<{width}}  {'op':<14} {'meas us':>9} {'roof us':>9} {'GFLOP/s':>9} "
            f"{'GB/s':>8} {'% roof':>7} {'bound':<8}")
    rows = [head, "-" * len(head)]
    for l in analysis.layers:
        if l.measured_time_s is None:
            measured = achieved = bandwidth = roof = "-"
        else:
            measured = f"{l.measured_time_s * 1e6:.2f}"
            achieved = f"{(l.achieved_flops or 0) / 1e9:.2f}"
            bandwidth = f"{(l.achieved_bandwidth_bps or 0) / 1e9:.2f}"
            roof = f"{100 * l.efficiency:.1f}" if l.efficiency is not None else "-"
            roof = ">100" if l.above_roof else roof  # faster than the roof: the reason follows
        rows.append(f"{l.name:<{width}}  {l.op_type:<14} {measured:>9} "
                    f"{l.attainable_time_s * 1e6:>9.2f} {achieved:>9} {bandwidth:>8} {roof:>7} {l.bound:<8}"
                    f"{'  ' + l.above_roof if l.above_roof else ''}".rstrip())
    rows.append("-" * len(head))
    measured_s = analysis.measured_time_s or 0.0
    attainable = f"attainable {analysis.attainable_time_s * 1e3:.3f} ms"
    if measured_s and measured_s < analysis.attainable_time_s:  # not an efficiency over 100 %: name why
        above = sum(1 for l in analysis.layers if l.above_roof)
        fused = sum(1 for l in analysis.layers if l.measured_time_s == 0.0 and l.attainable_time_s > 0)
        rows.append(f"measured {measured_s * 1e3:.3f} ms per run, under the roofline's sum ({attainable}): "
                    f"{above} layers ran faster than their roof (reason above), {fused} ran fused into "
                    f"another's kernel (0 us) while the roofline counts them")
    elif measured_s:
        rows.append(f"measured {measured_s * 1e3:.3f} ms per run, {attainable} "
                    f"({100 * analysis.attainable_time_s / measured_s:.1f}% of the roof)")
    else:
        rows.append(attainable)
    return "\n".join(rows)


def run(args: argparse.Namespace) -> int:
    import json

    from edge_roofline.backends import create_backend
    from edge_roofline.inference.profile_join import join_profile
    from edge_roofline.models.source import is_engine
    from edge_roofline.roofline.costs import analyze_model
    from edge_roofline.roofline.devices import get_device
    from edge_roofline.roofline.model import to_json_dict

    precision = args.precision or ("fp32" if args.backend == "ort" else "fp16")
    prebuilt = is_engine(args.model)  # built already: no calibration cache is read
    options = ({"precision": precision} if args.backend != "ort" else {}) | calibration_options(
        args.backend, precision, args.calibration_cache, built=prebuilt)
    graph, model = _graph_and_source(args)
    if prebuilt:  # its layers are mapped to the ONNX nodes it was built from
        options["mapping_onnx"] = graph
    cost = analyze_model(graph, precision=precision)
    ceilings, device, point = _ceilings(args, precision)
    if args.backend == "virtual":  # the board runs at the operating point of the ceilings
        from edge_roofline.virtual.board import VirtualBoard
        options["board"] = VirtualBoard(device, mode_id=get_device(device).preset(point).mode_id)
    with create_backend(args.backend, **options) as backend:
        backend.load(model)
        profile = backend.profile(backend.dummy_feeds(), runs=args.runs)
    analysis = join_profile(cost, profile, ceilings)
    simulated = " (SIMULATION: times from the virtual Jetson's physics)" if args.backend == "virtual" else ""
    print(f"{cost.model} on {args.backend}{simulated} ({profile.runs} runs), ceilings: {ceilings.label}, "
          f"DRAM {ceilings.dram_text()}")
    print(format_table(analysis))
    if args.json:
        with open(args.json, "w") as f:
            json.dump(to_json_dict(analysis, device=device, operating_point=point), f, indent=2)
        print(f"wrote {args.json}")
    if args.plot:
        from edge_roofline.roofline import charts
        print(f"wrote {charts.roofline_chart([analysis], args.plot)}")
    return 0
