"""The stamp pairing behind the latency_probe node: latency from the observer's clock, drops
when an output never comes, outputs that match nothing, and message types resolved by name."""

import pytest

from edge_roofline.telemetry.latency_probe import MessageTypeError, StampPairer, stamped_message_class


def test_pairs_outputs_to_inputs_by_stamp_out_of_order():
    pairer = StampPairer(timeout_s=1.0)
    pairer.input_seen(100, now_s=0.00)
    pairer.input_seen(200, now_s=0.03)
    assert pairer.output_seen(200, now_s=0.05) == pytest.approx(0.02)  # answered out of order
    assert pairer.output_seen(100, now_s=0.08) == pytest.approx(0.08)
    assert pairer.counters.paired == 2 and pairer.counters.dropped == 0


def test_inputs_without_output_count_as_dropped_once():
    pairer = StampPairer(timeout_s=0.5)
    for k in range(5):
        pairer.input_seen(k, now_s=k * 0.1)
    for k in (0, 2, 4):
        assert pairer.output_seen(k, now_s=k * 0.1 + 0.05) is not None
    assert pairer.expire(now_s=0.45) == 0  # 1 and 3 still within their timeout
    assert pairer.expire(now_s=1.0) == 2
    assert pairer.expire(now_s=5.0) == 0
    assert pairer.counters.dropped == 2 and pairer.counters.paired == 3


def test_late_and_unknown_outputs_are_not_latencies():
    pairer = StampPairer(timeout_s=0.2)
    pairer.input_seen(1, now_s=0.0)
    assert pairer.output_seen(1, now_s=0.5) is None  # too late: a drop for the robot as well
    assert pairer.output_seen(99, now_s=0.6) is None  # never seen on the input
    c = pairer.counters
    assert (c.dropped, c.unmatched_outputs, c.paired) == (1, 2, 0)


def test_duplicate_stamps_and_bounded_memory():
    pairer = StampPairer(timeout_s=10.0, max_pending=3)
    pairer.input_seen(1, 0.0)
    pairer.input_seen(1, 0.1)
    assert pairer.counters.duplicate_inputs == 1 and pairer.counters.inputs == 1
    for k in range(2, 5):
        pairer.input_seen(k, 0.2)
    assert pairer.counters.dropped == 1  # the oldest pending input could no longer be paired
    assert pairer.output_seen(1, 0.3) is None


def test_message_types_resolve_by_name_and_need_a_header():
    from sensor_msgs.msg import Image
    assert stamped_message_class("sensor_msgs/msg/Image") is Image
    assert stamped_message_class("sensor_msgs/Image") is Image
    with pytest.raises(MessageTypeError, match="no std_msgs/Header"):
        stamped_message_class("std_msgs/msg/String")
    with pytest.raises(MessageTypeError, match="not installed"):
        stamped_message_class("no_such_pkg/msg/Thing")
    with pytest.raises(MessageTypeError, match="form pkg/msg/Type"):
        stamped_message_class("Image")
