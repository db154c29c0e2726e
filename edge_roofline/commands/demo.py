"""edge-roofline demo: the suite on a virtual AGX Orin 64GB (SIMULATION) with the governor
active: a synthetic camera, inference on a small model with the virtual backend (times and
power from the virtual board's physics), the power monitor, the governor, a live console
summary and Foxglove on ws://127.0.0.1:8765 (``--record FILE``: an MCAP recording too). Ctrl-C
stops the governor first, which puts back the virtual board's original mode and caps.

``--host-cpu``: the same suite on this machine's CPU instead (ONNX Runtime, measured CPU roofs,
no governor: a host CPU has no catalogued operating points).

``--device KEY``: the same demo on another virtual Jetson (e.g. ``agx_thor_t5000``, ``make demo
DEVICE=agx_thor_t5000``): the demo's parameter file with every node pointed at that device."""

NAME = "demo"
HELP = "run the demo: a virtual Jetson (--device; AGX Orin) with the governor, rooflines, power, console, Foxglove"
DEMO_CONFIG = "demo_virtual_agx_orin.yaml"
DEMO_DEVICE = "agx_orin_64gb"  # the device DEMO_CONFIG names
HOST_CPU_CONFIG = "demo_host_cpu.yaml"


def add_arguments(parser) -> None:
    from edge_roofline.commands._args import SECONDS
    from edge_roofline.commands.up import add_suite_arguments
    parser.add_argument("--duration", type=SECONDS, default=0.0, help="stop after this many seconds (0: until Ctrl-C)")
    parser.add_argument("--no-foxglove", action="store_true", help="don't start the Foxglove server")
    parser.add_argument("--host-cpu", action="store_true",
                        help="run on this machine's CPU (ONNX Runtime, measured roofs, no governor)")
    from edge_roofline.virtual.params import CALIBRATION
    parser.add_argument("--device", default=DEMO_DEVICE, choices=sorted(CALIBRATION),
                        help="the virtual Jetson to run on (default: %(default)s; e.g. agx_thor_t5000)")
    add_suite_arguments(parser)


def device_config(device: str, directory) -> str:
    """The demo's parameter file with every node on the virtual ``device`` (its own tree under
    /tmp/edge_roofline), written into ``directory``; the path."""
    from pathlib import Path

    import yaml

    from edge_roofline.paths import config_file
    params = yaml.safe_load(config_file(DEMO_CONFIG).read_text())
    for node in params.values():
        values = node["ros__parameters"]
        if str(values.get("platform", "")).startswith("virtual:"):
            values["platform"] = f"virtual:{device}"
        if "sysfs_root" in values:
            values["sysfs_root"] = f"/tmp/edge_roofline/demo_virtual_{device}"
        if "device" in values:
            values["device"] = device
    path = Path(directory) / f"demo_virtual_{device}.yaml"
    path.write_text(f"# `edge-roofline demo --device {device}`: {DEMO_CONFIG} on a virtual {device} (SIMULATION)\n"
                    + yaml.safe_dump(params, sort_keys=False))
    return str(path)


def run(args) -> int:
    from edge_roofline.suite.run import run_suite
    from edge_roofline.commands.up import suite_overrides
    extras = ["synthetic_camera", "console"] + ([] if args.no_foxglove else ["foxglove_bridge"])

    def start(config: str) -> int:
        return run_suite(config, extras=extras, record=args.record, duration_s=args.duration,
                         overrides=suite_overrides(args))

    if args.host_cpu or args.device == DEMO_DEVICE:
        return start(HOST_CPU_CONFIG if args.host_cpu else DEMO_CONFIG)  # no governor on the host CPU
    import tempfile
    with tempfile.TemporaryDirectory(prefix="edge_roofline_demo_") as directory:
        return start(device_config(args.device, directory))
