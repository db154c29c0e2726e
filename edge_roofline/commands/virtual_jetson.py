"""``edge-roofline virtual-jetson --device NAME --root DIR``: a live virtual Jetson (SIMULATION).
Writes the board's sysfs tree, nvpmodel emulation and tegrastats-compatible state under DIR and
keeps them live (clocks, loads, rails, temperatures) until Ctrl-C or ``--duration``. Point the
suite at it with ``platform: virtual:NAME`` and ``sysfs_root: DIR``."""

NAME = "virtual-jetson"
HELP = "run a live virtual Jetson (SIMULATION): sysfs tree + nvpmodel emulation + physics under --root"


def add_arguments(parser) -> None:
    from edge_roofline.commands._args import SECONDS, finite
    from edge_roofline.virtual.params import CALIBRATION
    parser.add_argument("--device", default="agx_orin_64gb", choices=sorted(CALIBRATION))
    parser.add_argument("--root", help="directory to render the tree into (created)")
    parser.add_argument("--mode", type=int, default=None, help="nvpmodel mode at start (default: the board's default)")
    parser.add_argument("--seed", type=int, default=0)
    parser.add_argument("--perturbation", type=float, default=0.0,
                        help="scale physics coefficients randomly by up to this fraction "
                             "(a board unlike the catalogue)")
    from edge_roofline.virtual.actuation import PRESETS
    parser.add_argument("--physics", default="realistic", choices=sorted(PRESETS),
                        help="actuation and disturbances: settle times, EMC stall, preset change cost, "
                             "outlier bursts, sensor lag (docs/virtual_jetson.md; default: %(default)s)")
    parser.add_argument("--gpu-load", type=float, default=0.0, help="background GPU load 0..1 from another process")
    parser.add_argument("--tick", type=finite(0.0, above=True), default=0.02,
                        help="physics step in seconds (default: %(default)s)")
    parser.add_argument("--duration", type=SECONDS, default=0.0, help="stop after this many seconds (0: until Ctrl-C)")
    parser.add_argument("--calibration", action="store_true",
                        help="print the calibration table (virtual vs published figures) and exit")


def run(args) -> int:
    import sys
    import time

    if args.calibration:
        from edge_roofline.virtual.calibrate import calibration_table, format_table
        print(format_table(calibration_table()))
        return 0
    if not args.root:
        raise ValueError("--root DIR is required (where the tree is written)")
    from edge_roofline.suite.signals import StartInterrupted, StopSignals, ignore_stop_signals
    try:  # ros2 launch runs it beside the nodes: a Ctrl-C while it starts is a clean stop, as theirs
        from edge_roofline.virtual.actuation import PRESETS
        from edge_roofline.virtual.live import LiveVirtualJetson, set_background_load
        # Under ros2 launch Ctrl-C arrives twice (terminal and launch): it only asks the loop to end.
        # (In this try: one held out of the imports is raised at the line after them, cli.console_main.)
        stop = StopSignals().install()
    except StartInterrupted as exc:
        print(f"edge-roofline virtual-jetson: stopped by {exc} while starting", file=sys.stderr)
        return 0
    jetson = LiveVirtualJetson(args.root, args.device, mode_id=args.mode, seed=args.seed,
                               perturbation=args.perturbation, tick_s=args.tick, actuation=PRESETS[args.physics])
    try:
        set_background_load(args.root, gpu_load=args.gpu_load)
        jetson.start()
        print(f"virtual {jetson.device.name} (SIMULATION, {args.physics} actuation) live at {args.root}; "
              f"nvpmodel: {args.root}/usr/bin/nvpmodel; Ctrl-C to stop", flush=True)
        end = time.monotonic() + args.duration if args.duration > 0 else None
        while not stop.requested and (end is None or time.monotonic() < end):
            time.sleep(0.05)
    finally:
        jetson.stop()
        ignore_stop_signals()
    return 0
