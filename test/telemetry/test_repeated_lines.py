"""Repeated log lines, rate-limited (issue 23: a governor in fallback logged 439 lines in 29 s)."""

from edge_roofline.telemetry.repeated_lines import RepeatedLines, kind_of


def test_lines_differing_only_in_numbers_are_one_kind():
    assert kind_of("fallback MAXN: stale telemetry: no power sample for 1.23 s (> 1.0 s)") == \
        kind_of("fallback MAXN: stale telemetry: no power sample for 4.5 s (> 1.0 s)")
    assert kind_of("implausible measurement: power nan W") == kind_of("implausible measurement: power -3 W")
    # Numbers inside names name things: another point, mode or rail is another line.
    assert kind_of("switching MAXN/c6-cpu576-gpu408-emc666: x") != kind_of("switching MAXN/c6-cpu576-gpu510-emc666: x")
    assert kind_of("holding MODE_30W: dwelling") != kind_of("holding MODE_50W: dwelling")


def test_a_line_repeated_ten_times_a_second_is_logged_once_per_interval():
    lines = RepeatedLines(interval_s=5.0)
    logged = [line for k in range(290) if (line := lines.admit(
        f"fallback MAXN: stale telemetry: no power sample for {1.0 + k * 0.1:.2f} s (> 1.0 s)", k * 0.1)) is not None]
    assert len(logged) == 6  # 29 s: at 0, 5, 10, 15, 20 and 25 s
    assert logged[0].endswith("1.00 s (> 1.0 s)")
    assert logged[1].endswith("(49 more like it in the last 5.0 s not logged)")
    assert lines.held_back == 290 - 6


def test_another_kind_of_line_is_logged_at_once():
    lines = RepeatedLines(interval_s=5.0)
    assert lines.admit("fallback MAXN: stale telemetry: no power sample for 1.1 s", 0.0) is not None
    assert lines.admit("fallback MAXN: recovering: checks passed for 0.10 s of 2.0 s", 0.1) is not None
    assert lines.admit("fallback MAXN: recovering: checks passed for 0.20 s of 2.0 s", 0.2) is None
    assert lines.admit("holding MAXN: dwelling", 2.5) == "holding MAXN: dwelling"
    # Flapping between two kinds is still each kind once per interval.
    assert lines.admit("fallback MAXN: stale telemetry: no power sample for 1.3 s", 2.6) is None


def test_kinds_are_bounded():
    lines = RepeatedLines(interval_s=5.0, max_kinds=3)
    for name in ("a", "b", "c", "d"):
        assert lines.admit(f"holding {name}", 0.0) is not None
    assert lines.admit("holding a", 0.1) is not None  # forgotten (the oldest), so told again
    assert lines.admit("holding d", 0.1) is None
