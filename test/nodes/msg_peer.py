"""Peer process for the message round-trip test.

``pub TYPE`` publishes a deterministically filled message until a subscriber has it;
``sub TYPE`` receives one and checks every field (recursively, arrays included) against the
same deterministic filling, printing OK or the first differing field.
"""

import sys
import time
import zlib

import numpy as np
import rclpy
from rclpy.executors import ExternalShutdownException
from rclpy.qos import DurabilityPolicy, QoSProfile, ReliabilityPolicy

import edge_roofline.msg as er_msg
from edge_roofline.ros.schema import message_class

QOS = QoSProfile(depth=1, durability=DurabilityPolicy.TRANSIENT_LOCAL,
                 reliability=ReliabilityPolicy.RELIABLE)
ARRAY_LEN = 3


def _seed(path: str) -> int:
    return zlib.crc32(path.encode())  # a distinct value per field path catches swapped fields


def _value(ros_type: str, path: str):
    s = _seed(path)
    if ros_type == "string":
        return f"v{s % 100000}"
    if ros_type == "boolean":
        return bool(s % 2)
    if ros_type in ("float", "double"):
        return float(s % 10000) / 8.0  # exact in float32
    if ros_type.startswith(("int", "uint", "octet", "byte")):
        return s % 100
    raise TypeError(f"no filler for {ros_type} at {path}")


def fill(msg, path=""):
    for field, ros_type in msg.get_fields_and_field_types().items():
        fpath = f"{path}.{field}"
        if ros_type.startswith("sequence<"):
            inner = ros_type[len("sequence<"):-1].split(",")[0]
            if "/" in inner:
                items = [fill(message_class(inner)(), f"{fpath}[{i}]") for i in range(ARRAY_LEN)]
            else:
                items = [_value(inner, f"{fpath}[{i}]") for i in range(ARRAY_LEN)]
            setattr(msg, field, items)
        elif "/" in ros_type:
            setattr(msg, field, fill(message_class(ros_type)(), fpath))
        else:
            setattr(msg, field, _value(ros_type, fpath))
    return msg


def compare(got, want, path=""):
    """First differing field path, or None."""
    for field in want.get_fields_and_field_types():
        g, w = getattr(got, field), getattr(want, field)
        fpath = f"{path}.{field}"
        if hasattr(w, "get_fields_and_field_types"):
            diff = compare(g, w, fpath)
        elif isinstance(w, (list, tuple, np.ndarray)) or hasattr(w, "tolist"):
            g_list, w_list = list(g), list(w)
            if len(g_list) != len(w_list) or len(w_list) != ARRAY_LEN:
                return f"{fpath} length {len(g_list)} != {len(w_list)}"
            diff = None
            for i, (gi, wi) in enumerate(zip(g_list, w_list)):
                diff = compare(gi, wi, f"{fpath}[{i}]") if hasattr(wi, "get_fields_and_field_types") \
                    else (None if gi == wi else f"{fpath}[{i}] {gi!r} != {wi!r}")
                if diff:
                    break
        else:
            diff = None if g == w else f"{fpath} {g!r} != {w!r}"
        if diff:
            return diff
    return None


def main(role: str, type_name: str) -> int:
    cls = getattr(er_msg, type_name)
    topic = f"roundtrip_{type_name}"
    rclpy.init()
    node = rclpy.create_node(f"roundtrip_{role}")
    want = fill(cls())
    result = {"code": 3}
    try:
        if role == "pub":
            pub = node.create_publisher(cls, topic, QOS)
            pub.publish(want)
            deadline = time.monotonic() + 30.0
            # Stay until the subscriber has matched and had time to fetch the latched sample.
            while rclpy.ok() and pub.get_subscription_count() == 0 and time.monotonic() < deadline:
                rclpy.spin_once(node, timeout_sec=0.05)
            end = time.monotonic() + 2.0
            while rclpy.ok() and pub.get_subscription_count() > 0 and time.monotonic() < end:
                rclpy.spin_once(node, timeout_sec=0.05)
            return 0
        def on_msg(msg):
            diff = compare(msg, want)
            print("OK" if diff is None else f"MISMATCH {diff}", flush=True)
            result["code"] = 0 if diff is None else 1
        node.create_subscription(cls, topic, on_msg, QOS)
        deadline = time.monotonic() + 30.0
        while rclpy.ok() and result["code"] == 3 and time.monotonic() < deadline:
            rclpy.spin_once(node, timeout_sec=0.05)
        if result["code"] == 3:
            print("TIMEOUT no message", flush=True)
        return result["code"]
    except (KeyboardInterrupt, ExternalShutdownException):
        return 2
    finally:
        node.destroy_node()
        rclpy.try_shutdown()


if __name__ == "__main__":
    sys.exit(main(sys.argv[1], sys.argv[2]))
