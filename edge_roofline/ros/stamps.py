"""ROS time in seconds, one way for every form a time arrives in."""

from __future__ import annotations

NS_PER_S = 1_000_000_000


def stamp_ns(stamp) -> int:
    """Integer nanoseconds of a builtin_interfaces/Time message (``sec``, ``nanosec``), an rclpy
    Time (``nanoseconds``) or integer nanoseconds already (an MCAP log time): exact, so a
    stamp can key a lookup (the latency probe pairs outputs with inputs by it)."""
    if isinstance(stamp, int):
        return stamp
    if hasattr(stamp, "nanoseconds"):
        return stamp.nanoseconds
    return int(stamp.sec) * NS_PER_S + int(stamp.nanosec)


def stamp_s(stamp) -> float:
    """Seconds of any form ``stamp_ns`` takes. Every form goes through integer nanoseconds, so
    one instant gives the same float whichever form it came in (a message stamp and the node
    clock are compared)."""
    return stamp_ns(stamp) * 1e-9
