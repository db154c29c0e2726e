"""A stand-in for a serving node we did not write (a plain rclpy script, nothing of ours): it
takes images, "infers" for a fixed delay, and publishes a result carrying the input's header, as
Isaac ROS and most detector nodes do. Every ``drop_every``-th input gets no result.

    python third_party_detector.py IN_TOPIC OUT_TOPIC DELAY_S DROP_EVERY
"""

import sys
import time

import rclpy
from rclpy.executors import ExternalShutdownException
from sensor_msgs.msg import CompressedImage, Image


def main() -> None:
    in_topic, out_topic, delay_s, drop_every = sys.argv[1], sys.argv[2], float(sys.argv[3]), int(sys.argv[4])
    rclpy.init()
    node = rclpy.create_node("vendor_detector")
    pub = node.create_publisher(CompressedImage, out_topic, 10)
    count = [0]

    def on_image(msg: Image) -> None:
        count[0] += 1
        time.sleep(delay_s)
        if drop_every and count[0] % drop_every == 0:
            return
        pub.publish(CompressedImage(header=msg.header, format="detections"))

    node.create_subscription(Image, in_topic, on_image, 10)
    spin(node)


def spin(node) -> None:
    """Until Ctrl-C, then a clean shutdown (the stand-ins' main loop)."""
    try:
        rclpy.spin(node)
    except (KeyboardInterrupt, ExternalShutdownException):
        pass
    finally:
        node.destroy_node()
        rclpy.try_shutdown()


if __name__ == "__main__":
    main()
