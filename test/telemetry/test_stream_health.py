"""StreamHealth's frequency and timestamp statuses (diagnostic_updater's semantics) on
explicit times."""

import pytest

from edge_roofline.telemetry.diagnostics import ERROR, OK, WARN
from edge_roofline.telemetry.stream_health import StreamHealth


def run(health, start_s, end_s, rate_hz, delay_s=0.01):
    """Ticks at rate_hz from start_s to end_s (exclusive), each stamped delay_s earlier."""
    n = round((end_s - start_s) * rate_hz)
    for i in range(n):
        t = start_s + i / rate_hz
        health.tick(t, t - delay_s)


def levels(statuses):
    return {s.name.rsplit(" ", 1)[1]: (s.level, s.message) for s in statuses}


def test_steady_stream_is_ok_and_a_stall_goes_error_then_recovers():
    health = StreamHealth("x: power/telemetry", 0.0, min_rate_hz=20.0, window_size=5)
    for second in range(5):
        run(health, second, second + 1, 20.0)
        got = levels(health.statuses(second + 1.0))
    assert got == {"frequency": (OK, "Desired frequency met"), "timestamp": (OK, "Timestamps are reasonable.")}
    # The stream stops: the timestamp status says so at once, the frequency one once the
    # 5-period window holds no event.
    got = levels(health.statuses(6.0))
    assert got["timestamp"] == (WARN, "No data since last update.")
    assert got["frequency"] == (WARN, "Frequency too low.")  # 80 events in 5 s: 16 Hz < 18 Hz
    for second in range(7, 11):
        got = levels(health.statuses(float(second)))
    assert got["frequency"] == (ERROR, "No events recorded.")
    run(health, 10.0, 11.0, 20.0)
    assert levels(health.statuses(11.0))["timestamp"][0] == OK


def test_frequency_bounds_and_values():
    health = StreamHealth("x: s", 0.0, min_rate_hz=10.0, max_rate_hz=10.0, tolerance=0.1, window_size=1)
    run(health, 0.0, 1.0, 30.0)
    frequency, _ = health.statuses(1.0)
    assert (frequency.level, frequency.message) == (WARN, "Frequency too high.")
    assert frequency.values["Events in window"] == "30"
    assert float(frequency.values["Actual frequency (Hz)"]) == pytest.approx(30.0)
    assert frequency.values["Maximum acceptable frequency (Hz)"] == "11.000"
    run(health, 1.0, 2.0, 5.0)
    assert health.statuses(2.0)[0].message == "Frequency too low."


def test_without_an_expected_rate_only_silence_is_an_error():
    health = StreamHealth("x: inference/stats", 0.0, window_size=2)
    run(health, 0.0, 1.0, 1.0)  # one frame a second is fine when no rate is expected
    assert health.statuses(1.0)[0].level == OK
    assert health.statuses(2.0)[0].level == OK  # the window still holds that frame
    assert health.statuses(3.0)[0].level == ERROR


def test_timestamps_too_old_in_future_or_zero_are_errors():
    health = StreamHealth("x: s", 0.0, min_delay_s=-1.0, max_delay_s=5.0)
    health.tick(10.0, 2.0)
    timestamp = health.statuses(10.0)[1]
    assert (timestamp.level, timestamp.message) == (ERROR, "Timestamps too far in past seen.")
    assert timestamp.values["Latest timestamp delay (s)"] == "8.000"
    health.tick(11.0, 13.0)
    assert health.statuses(11.0)[1].message == "Timestamps too far in future seen."
    health.tick(12.0, 0.0)
    assert health.statuses(12.0)[1].message == "Zero timestamp seen."
    health.tick(13.0, 12.5)
    assert health.statuses(13.0)[1].level == OK  # each period judges its own messages
