"""ros/stamps.py: one instant gives one float in seconds, whether it comes as a message stamp,
an rclpy Time or integer nanoseconds (the governor compares power stamps with its node clock)."""

import pytest
from builtin_interfaces.msg import Time as TimeMsg
from rclpy.time import Time

from edge_roofline.ros.stamps import NS_PER_S, stamp_ns, stamp_s

# An epoch instant where sec + nanosec * 1e-9 (the hand-written copies this replaced) and
# nanoseconds * 1e-9 round to different floats.
NS = 1_700_000_000_123_456_789


def test_every_form_of_one_instant_gives_the_same_seconds():
    sec, nanosec = divmod(NS, NS_PER_S)
    forms = [stamp_s(TimeMsg(sec=sec, nanosec=nanosec)), stamp_s(Time(nanoseconds=NS)), stamp_s(NS)]
    assert forms == [forms[0]] * 3
    assert forms[0] == pytest.approx(1_700_000_000.123456789, abs=1e-6)
    assert sec + nanosec * 1e-9 != forms[0]  # why one helper: the old formula disagreed here


def test_a_stamp_is_exact_in_nanoseconds():  # the latency probe pairs outputs to inputs by it
    assert stamp_ns(TimeMsg(sec=2, nanosec=5)) == 2_000_000_005 == stamp_ns(Time(nanoseconds=2_000_000_005))
