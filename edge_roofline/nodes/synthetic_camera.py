"""synthetic_camera: publishes a moving test pattern as sensor_msgs/Image, for the demo and
for trying the inference node without a camera."""

from __future__ import annotations

import sys

from rclpy.node import Node
from sensor_msgs.msg import Image

from edge_roofline.nodes.common import declare_parameters, run_node
from edge_roofline.inference.synthetic import frame

PARAMETERS = {
    "rate_hz": (30.0, "frames per second"),
    "width": (640, "image width in pixels"),
    "height": (480, "image height in pixels"),
    "encoding": ("rgb8", "rgb8 | bgr8 | mono8 | rgba8 | bgra8 | mono16 | rgb16 ..."),
    "frame_id": ("camera", "frame_id of the published images"),
    "topic": ("image", "output topic"),
    "distinct_frames": (30, "frames rendered once and cycled (keeps the camera's own cost low)"),
}


class SyntheticCamera(Node):
    def __init__(self) -> None:
        super().__init__("synthetic_camera")
        p = declare_parameters(self, PARAMETERS)
        if p["width"] <= 0 or p["height"] <= 0 or p["distinct_frames"] <= 0:
            raise ValueError("synthetic_camera: width, height and distinct_frames must be > 0")
        self.encoding, self.frame_id = p["encoding"], p["frame_id"]
        try:
            self.frames = [frame(i, p["width"], p["height"], self.encoding) for i in range(p["distinct_frames"])]
        except MemoryError:
            raise ValueError(f"synthetic_camera: {p['distinct_frames']} frames of {p['width']}x{p['height']} "
                             f"{self.encoding} do not fit in this machine's memory: lower width and height, or "
                             f"distinct_frames") from None
        self.count = 0
        self.pub = self.create_publisher(Image, p["topic"], 5)
        self.create_timer(1.0 / p["rate_hz"], self.publish)

    def publish(self) -> None:
        pixels = self.frames[self.count % len(self.frames)]
        msg = Image(height=pixels.shape[0], width=pixels.shape[1], encoding=self.encoding,
                    is_bigendian=0, step=pixels.shape[1] * pixels.shape[2] * pixels.itemsize)
        msg.header.stamp = self.get_clock().now().to_msg()
        msg.header.frame_id = self.frame_id
        msg.data = pixels.tobytes()
        self.pub.publish(msg)
        self.count += 1


def main(argv: list[str] | None = None) -> int:
    return run_node(SyntheticCamera, argv)


if __name__ == "__main__":
    sys.exit(main(sys.argv))
