"""edge-roofline up: start the suite's nodes with one parameter file (the same plan and
arguments as `ros2 launch edge_roofline edge_roofline.launch.py`), without the ROS launch tools."""

NAME = "up"
HELP = "start the suite's nodes (as ros2 launch would) and stop them cleanly on Ctrl-C"


def add_suite_arguments(parser) -> None:
    """The launch file's arguments (edge_roofline.suite.spec.ARGUMENTS, and record) as options."""
    from edge_roofline.commands._args import output_file
    from edge_roofline.suite.spec import ARGUMENTS
    for arg, (_, _, kind, help_text) in ARGUMENTS.items():
        parser.add_argument(f"--{arg.replace('_', '-')}", dest=arg, type=kind, default=None,
                            help=f"{help_text}; default: the parameter file's")
    parser.add_argument("--record", default="", metavar="FILE", type=output_file,
                        help="record every topic the Foxglove bridge forwards to this MCAP file "
                             "(read it with edge-roofline recording FILE, Foxglove or any MCAP reader)")


def suite_overrides(args) -> dict[str, dict]:
    from edge_roofline.suite.spec import ARGUMENTS, argument_overrides
    return argument_overrides({arg: getattr(args, arg) for arg in ARGUMENTS})


def add_arguments(parser) -> None:
    from edge_roofline.commands._args import SECONDS
    from edge_roofline.suite.spec import EXTRAS
    parser.add_argument("--config", default="virtual_agx_orin.yaml",
                        help="ROS 2 parameter file (a path, or a name in config/); default: %(default)s")
    parser.add_argument("--with", dest="extras", default="",
                        help=f"comma-separated extra nodes: {', '.join(s.name for s in EXTRAS)} "
                             "(foxglove_bridge: a Foxglove server, not started unless named)")
    parser.add_argument("--duration", type=SECONDS, default=0.0, help="stop after this many seconds (0: until Ctrl-C)")
    parser.add_argument("--log-dir", default="", help="write each node's output here (default: a temp dir)")
    add_suite_arguments(parser)


def run(args) -> int:
    from edge_roofline.suite.run import run_suite
    from edge_roofline.suite.spec import extra_nodes
    extras = [spec.name for spec in extra_nodes(args.extras)]  # an unknown name: one line, before anything starts
    return run_suite(args.config, extras=extras, record=args.record, duration_s=args.duration,
                     log_dir=args.log_dir or None, overrides=suite_overrides(args))
