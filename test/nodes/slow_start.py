"""Nodes whose start is interrupted (test_node_signals): with ``-p wait:=true`` it says when it
is inside __init__ and waits, as loading a big model does; with ``-p wrapped:=true`` the signal
lands in an import that wraps it in an ImportError (onnxruntime's native module does: "ImportError:
initialization failed"); with ``-p native_import:=true`` it lands in the import of onnx (as the
inference node's model load does) after onnx's C++ module was initialised, before its import is
done; without any, it sends itself SIGINT from inside rclpy's own Node.__init__ (where a Ctrl-C
lands when sent as soon as the node shows in the ROS graph)."""

import importlib.machinery
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
        if "native_import:=true" in sys.argv:
            super().__init__("slow_start")
            self._interrupt_after_native_init("onnx.onnx_cpp2py_export")
            import onnx  # noqa: F401
        original = rclpy.node.ParameterService

        def interrupted(node):
            os.kill(os.getpid(), signal.SIGINT)
            time.sleep(0.5)  # the handler runs here, inside rclpy's Node.__init__
            return original(node)
        rclpy.node.ParameterService = interrupted
        super().__init__("slow_start")

    @staticmethod
    def _interrupt_after_native_init(name: str) -> None:
        loader = importlib.machinery.ExtensionFileLoader
        create = loader.create_module

        def interrupted(self, spec):
            module = create(self, spec)  # the extension's own initialisation (pybind11: its types registered)
            if spec.name == name:
                os.kill(os.getpid(), signal.SIGINT)
                time.sleep(0.5)  # the handler runs here, inside the import
            return module
        loader.create_module = interrupted


if __name__ == "__main__":
    sys.exit(run_node(SlowStart, sys.argv))
