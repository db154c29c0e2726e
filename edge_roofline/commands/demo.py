"""edge-roofline demo: the suite on a virtual AGX Orin with a synthetic camera, a live console
summary and Foxglove on ws://127.0.0.1:8765."""

NAME = "demo"
HELP = "run the demo: virtual AGX Orin, synthetic camera, inference, power monitor, governor, console, Foxglove"
DEMO_CONFIG = "demo_host_cpu.yaml"


def add_arguments(parser) -> None:
    parser.add_argument("--duration", type=float, default=0.0, help="stop after this many seconds (0: until Ctrl-C)")
    parser.add_argument("--no-foxglove", action="store_true", help="don't start the Foxglove server")


def run(args) -> int:
    from edge_roofline.bringup import run_suite
    extras = ["synthetic_camera", "console"] + ([] if args.no_foxglove else ["foxglove_bridge"])
    return run_suite(DEMO_CONFIG, extras=extras, duration_s=args.duration)
