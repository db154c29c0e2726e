"""ROS time in seconds, one way for every form a time arrives in."""

from __future__ import annotations

NS_PER_S = 1_000_000_000


def stamp_s(stamp) -> float:
    """Seconds of a builtin_interfaces/Time message (``sec``, ``nanosec``), an rclpy Time
    (``nanoseconds``) or integer nanoseconds (an MCAP log time). Every form goes through integer
    nanoseconds, so one instant gives the same float whichever form it came in (a message stamp
    and the node clock are compared)."""
    if isinstance(stamp, int):
        ns = stamp
    elif hasattr(stamp, "nanoseconds"):
        ns = stamp.nanoseconds
    else:
        ns = stamp.sec * NS_PER_S + stamp.nanosec
    return ns * 1e-9
