"""Nodes whose start is interrupted (test_node_signals): with ``-p wait:=true`` it says when it
is inside __init__ and waits, as loading a big model does; with ``-p wrapped:=true`` the signal
lands in an import that wraps it in an ImportError (onnxruntime's native module does: "ImportError:
initialization failed"); without either, it sends itself SIGINT from inside rclpy's own
Node.__init__ (where a Ctrl-C lands when sent as soon as the node shows in the ROS graph)."""

import os
import signal
import sys
import time

import rclpy.node
from rclpy.node import Node

from edge_roofline.nodes.common import run_node


class SlowStart(Node):
    def __init__(self) -> None:
        if "wait:=true" in sys.argv:
            super().__init__("slow_start")
            print("loading", flush=True)
            time.sleep(60)
        if "wrapped:=true" in sys.argv:
            super().__init__("slow_start")
            try:
                os.kill(os.getpid(), signal.SIGINT)
                time.sleep(0.5)  # the handler runs here, as inside a native module's initialisation
            except BaseException as exc:
                raise ImportError("initialization failed") from exc
        original = rclpy.node.ParameterService

        def interrupted(node):
            os.kill(os.getpid(), signal.SIGINT)
            time.sleep(0.5)  # the handler runs here, inside rclpy's Node.__init__
            return original(node)
        rclpy.node.ParameterService = interrupted
        super().__init__("slow_start")


if __name__ == "__main__":
    sys.exit(run_node(SlowStart, sys.argv))
