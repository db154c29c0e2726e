"""Latency of a node we did not write, measured from its topics alone.

A node that keeps its input's ``header.stamp`` on its output (Isaac ROS, most detector nodes do)
lets an observer pair each output with the input it answers: the latency is the time between
seeing the input and seeing its output, both on the observer's clock, so no clock has to agree
with the serving node's. An input whose output never comes within ``timeout_s`` is a drop: the
serving node skipped or lost it. ROS-free: the ``latency_probe`` node feeds it stamps.
"""

from __future__ import annotations

import collections
from dataclasses import dataclass

from edge_roofline.ros.schema import message_class


class MessageTypeError(ValueError):
    """A type name that does not resolve to a ROS message with a std_msgs/Header ``header``."""


def stamped_message_class(type_name: str):
    """The message class of ``type_name``, which must carry a std_msgs/Header ``header`` (the
    pairing key); MessageTypeError names what is wrong."""
    try:
        cls = message_class(type_name)
    except ValueError as exc:
        raise MessageTypeError(str(exc)) from None
    if cls.get_fields_and_field_types().get("header") != "std_msgs/Header":
        raise MessageTypeError(f"{type_name} has no std_msgs/Header 'header' field: its messages cannot be "
                               f"paired by stamp; probe a topic whose messages carry the input's header")
    return cls


@dataclass
class ProbeCounters:
    inputs: int = 0  # distinct input stamps seen
    paired: int = 0  # outputs matched to a pending input
    dropped: int = 0  # inputs with no output within the timeout
    unmatched_outputs: int = 0  # outputs whose stamp was never seen on the input (or came too late)
    duplicate_inputs: int = 0  # inputs repeating a pending stamp (cannot be told apart)


class StampPairer:
    """Pairs outputs to inputs by stamp; inputs wait at most ``timeout_s`` for their output."""

    def __init__(self, timeout_s: float = 1.0, max_pending: int = 10_000) -> None:
        if timeout_s <= 0:
            raise ValueError(f"timeout_s must be > 0, got {timeout_s}")
        self.timeout_s = timeout_s
        self.max_pending = max_pending
        self.counters = ProbeCounters()
        self._pending: collections.OrderedDict[int, float] = collections.OrderedDict()  # stamp -> seen at

    def input_seen(self, key: int, now_s: float) -> None:
        self.expire(now_s)
        if key in self._pending:
            self.counters.duplicate_inputs += 1
            return
        self.counters.inputs += 1
        self._pending[key] = now_s
        if len(self._pending) > self.max_pending:  # bounded memory: the oldest can no longer be paired
            self._pending.popitem(last=False)
            self.counters.dropped += 1

    def output_seen(self, key: int, now_s: float) -> float | None:
        """The latency of the input ``key`` answers, or None for an output with no pending input."""
        seen_s = self._pending.pop(key, None)
        if seen_s is None or now_s - seen_s > self.timeout_s:
            self.counters.unmatched_outputs += 1
            if seen_s is not None:  # came after its timeout: it was a drop for the robot too
                self.counters.dropped += 1
            return None
        self.counters.paired += 1
        return now_s - seen_s

    def expire(self, now_s: float) -> int:
        """Inputs older than the timeout become drops; returns how many did now."""
        expired = 0
        while self._pending:
            key, seen_s = next(iter(self._pending.items()))
            if now_s - seen_s <= self.timeout_s:
                break
            self._pending.popitem(last=False)
            expired += 1
        self.counters.dropped += expired
        return expired
