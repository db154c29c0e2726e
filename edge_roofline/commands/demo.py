"""edge-roofline demo: the suite on this machine: a synthetic camera, ONNX Runtime inference
with live per-layer rooflines against this CPU's measured roofs, the power monitor (which says
when the machine has no power sensor), a live console summary and Foxglove on
ws://127.0.0.1:8765. (The virtual-AGX-Orin demo with the governor needs the virtual Jetson and
governor issues, not landed yet.)"""

NAME = "demo"
HELP = "run the demo: synthetic camera, ORT inference with live rooflines, power monitor, console, Foxglove"
DEMO_CONFIG = "demo_host_cpu.yaml"


def add_arguments(parser) -> None:
    parser.add_argument("--duration", type=float, default=0.0, help="stop after this many seconds (0: until Ctrl-C)")
    parser.add_argument("--no-foxglove", action="store_true", help="don't start the Foxglove server")


def run(args) -> int:
    from edge_roofline.bringup import run_suite
    extras = ["synthetic_camera", "console"] + ([] if args.no_foxglove else ["foxglove_bridge"])
    return run_suite(DEMO_CONFIG, extras=extras, duration_s=args.duration)
