"""``edge-roofline report DIR``: the self-contained HTML report of a sweep (charts embedded,
sortable tables, SIMULATION banner for virtual sweeps) plus charts and operating-point tables."""

from __future__ import annotations

import argparse
from edge_roofline.commands._args import POSITIVE_MS

NAME = "report"
HELP = "HTML report of a sweep directory (Pareto front, heatmaps, rooflines, tables)"


def add_arguments(parser: argparse.ArgumentParser) -> None:
    parser.add_argument("dir", help="a directory written by `edge-roofline sweep --out DIR`")
    parser.add_argument("--targets-ms", type=POSITIVE_MS, nargs="*", default=None,
                        help="latency targets for the energy-optimal table (default: spread over the range)")


def run(args: argparse.Namespace) -> int:
    from edge_roofline.characterise.report import render
    from edge_roofline.characterise.store import Store

    path = render(args.dir, args.targets_ms)
    with Store(args.dir) as store:
        print(f"wrote {path}{' (SIMULATION)' if store.simulated else ''}")
    return 0
