"""edge_roofline: per-layer roofline telemetry, power telemetry and an energy-aware governor
for DNN inference on NVIDIA Jetson, as ROS 2 nodes over a pure-Python core.

Only ``edge_roofline.nodes`` imports rclpy; everything else runs without ROS.
"""

import pkgutil

# The generated message modules (edge_roofline.msg / .srv) are installed into the ROS prefix
# (the venv's site-packages or a colcon install space). Extending the package path lets a
# source checkout (tests, `python -m edge_roofline...`) use them without a reinstall.
__path__ = pkgutil.extend_path(__path__, __name__)

__version__ = "0.1.0"
