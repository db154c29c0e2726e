"""edge_roofline: per-layer roofline telemetry, power telemetry and an energy-aware governor
for DNN inference on NVIDIA Jetson, as ROS 2 nodes over a pure-Python core.

Only ``edge_roofline.nodes`` imports rclpy; everything else runs without ROS.
"""

import importlib
import pkgutil

# The generated message modules (edge_roofline.msg / .srv) are installed into the ROS prefix
# (the venv's site-packages or a colcon install space). Extending the package path lets a
# source checkout (tests, `python -m edge_roofline...`) use them without a reinstall.
__path__ = pkgutil.extend_path(__path__, __name__)

__version__ = "0.1.0"


def load_implementation(module: str, name: str, error: type[Exception]):
    """``module.name``, imported on demand: the one idiom of the package faces' factories
    (``create_backend``, ``create_platform``), so an install without one implementation's
    dependencies still creates the others, and a missing one raises ``error`` saying so."""
    try:
        return getattr(importlib.import_module(module), name)
    except ImportError as exc:
        raise error(f"{name} is not available in this install ({exc})") from exc
