"""edge_roofline: per-layer roofline telemetry, power telemetry and an energy-aware governor
for DNN inference on NVIDIA Jetson, as ROS 2 nodes over a pure-Python core.

Only ``edge_roofline.nodes`` imports rclpy; everything else runs without ROS.
"""

__version__ = "0.1.0"
