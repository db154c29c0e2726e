"""edge-roofline recording FILE.mcap: summarise and chart a recorded session offline."""

NAME = "recording"
HELP = "analyse an MCAP recording of the suite: latency, power, energy per inference, roofline chart"


def add_arguments(parser) -> None:
    from edge_roofline.commands._args import chart_file
    parser.add_argument("mcap", help="MCAP file recorded by foxglove_bridge (mcap_path:=FILE) or rosbag2")
    parser.add_argument("--plot", default="", type=chart_file, help="roofline chart of the last report (.png/.svg)")
    parser.add_argument("--power-plot", default="", type=chart_file, help="power over time (.png/.svg)")


def run(args) -> int:
    from edge_roofline.ros.recording import read_recording

    summary = read_recording(args.mcap)
    print("\n".join(summary.lines()))
    if args.plot:
        if summary.last_report is None:
            print("no RooflineReport in the recording: no roofline chart")
            return 1
        from edge_roofline.roofline.charts import roofline_chart
        from edge_roofline.ros.analysis import roofline_analysis_from_msg
        print(f"roofline chart: {roofline_chart(roofline_analysis_from_msg(summary.last_report), args.plot)}")
    if args.power_plot:
        from edge_roofline.viz.timeline import power_chart
        print(f"power chart: {power_chart(summary.power_series, args.power_plot, simulated=summary.simulated)}")
    return 0
