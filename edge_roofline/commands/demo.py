"""edge-roofline demo: the suite on a virtual AGX Orin 64GB (SIMULATION) with the governor
active: a synthetic camera, inference on a small model with the virtual backend (times and
power from the virtual board's physics), the power monitor, the governor, a live console
summary and Foxglove on ws://127.0.0.1:8765 (``--record FILE``: an MCAP recording too). Ctrl-C
stops the governor first, which puts back the virtual board's original mode and caps.

``--host-cpu``: the same suite on this machine's CPU instead (ONNX Runtime, measured CPU roofs,
no governor: a host CPU has no catalogued operating points)."""

NAME = "demo"
HELP = "run the demo: virtual AGX Orin with the governor, live rooflines, power, console, Foxglove"
DEMO_CONFIG = "demo_virtual_agx_orin.yaml"
HOST_CPU_CONFIG = "demo_host_cpu.yaml"


def add_arguments(parser) -> None:
    from edge_roofline.commands.up import add_suite_arguments
    parser.add_argument("--duration", type=float, default=0.0, help="stop after this many seconds (0: until Ctrl-C)")
    parser.add_argument("--no-foxglove", action="store_true", help="don't start the Foxglove server")
    parser.add_argument("--host-cpu", action="store_true",
                        help="run on this machine's CPU (ONNX Runtime, measured roofs, no governor)")
    add_suite_arguments(parser)


def run(args) -> int:
    from edge_roofline.suite.run import run_suite
    from edge_roofline.commands.up import suite_overrides
    extras = ["synthetic_camera", "console"] + ([] if args.no_foxglove else ["foxglove_bridge"])
    return run_suite(HOST_CPU_CONFIG if args.host_cpu else DEMO_CONFIG, extras=extras, record=args.record,
                     duration_s=args.duration, overrides=suite_overrides(args))  # no governor on the host CPU
