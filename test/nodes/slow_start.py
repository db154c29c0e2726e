"""A node whose start takes as long as loading a big model (test_node_signals): it says when it
is inside __init__, then waits."""

import sys
import time

from rclpy.node import Node

from edge_roofline.nodes.common import run_node


class SlowStart(Node):
    def __init__(self) -> None:
        super().__init__("slow_start")
        print("loading", flush=True)
        time.sleep(60)


if __name__ == "__main__":
    sys.exit(run_node(SlowStart, sys.argv))
