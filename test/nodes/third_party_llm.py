"""A stand-in for a language-model node we did not write (a plain rclpy script): it takes
GenerationRequests, "prefills" for a fixed time, then emits one token per fixed gap, each carrying
the request's header, on two topics: GeneratedToken (with done on the last) and, as a vendor type
that has nothing but a header, sensor_msgs/CompressedImage (the token's text in ``format``). Every
``drop_every``-th request gets no token at all.

    python third_party_llm.py REQUEST_TOPIC TOKEN_TOPIC HEADER_ONLY_TOPIC TTFT_S GAP_S DROP_EVERY
"""

import sys
import time

from pathlib import Path

import rclpy
from sensor_msgs.msg import CompressedImage

sys.path.insert(0, str(Path(__file__).resolve().parent))  # run as a script: its sibling stand-in
from third_party_detector import spin  # noqa: E402

from edge_roofline.msg import GeneratedToken, GenerationRequest  # noqa: E402


def main() -> None:
    request_topic, token_topic, bare_topic = sys.argv[1:4]
    ttft_s, gap_s, drop_every = float(sys.argv[4]), float(sys.argv[5]), int(sys.argv[6])
    rclpy.init()
    node = rclpy.create_node("vendor_llm")
    tokens = node.create_publisher(GeneratedToken, token_topic, 100)
    bare = node.create_publisher(CompressedImage, bare_topic, 100)
    count = [0]

    def on_request(msg: GenerationRequest) -> None:
        count[0] += 1
        if drop_every and count[0] % drop_every == 0:
            return
        time.sleep(ttft_s)
        n = msg.max_new_tokens or 8
        for i in range(n):
            if i:
                time.sleep(gap_s)
            last = i == n - 1
            tokens.publish(GeneratedToken(header=msg.header, request_id=msg.request_id, index=i, token_id=65 + i,
                                          text=chr(65 + i), done=last, stop_reason="length" if last else ""))
            bare.publish(CompressedImage(header=msg.header, format=chr(65 + i)))

    node.create_subscription(GenerationRequest, request_topic, on_request, 10)
    spin(node)


if __name__ == "__main__":
    main()
