"""Energy over a request's span from a power monitor's cumulative counter: interpolated between
messages, answered once the telemetry covers the span's end, NaN with the reason (never 0 J) where
no power is measured; and spans waiting for it."""

import math
from dataclasses import dataclass

import pytest

from edge_roofline.telemetry.energy_meter import NO_TELEMETRY, AwaitingEnergy, EnergyMeter, EnergyReading


def meter_at(watts: float, until_s: float = 1.0, period_s: float = 0.05) -> EnergyMeter:
    meter = EnergyMeter()
    for i in range(int(until_s / period_s) + 1):
        meter.add(100.0 + i * period_s, watts * i * period_s, "virtual (SIMULATION)")
    return meter


def test_a_span_inside_one_window_gets_its_share_of_the_window():
    meter = meter_at(20.0)
    assert meter.energy_between(100.31, 100.33).energy_j == pytest.approx(20.0 * 0.02)
    assert meter.energy_between(100.1, 100.6).energy_j == pytest.approx(10.0)
    assert meter.energy_between(100.5, 100.5).energy_j == 0.0


def test_a_span_not_yet_covered_waits_then_says_why():
    meter = meter_at(20.0)
    assert meter.energy_between(100.9, 101.2) is None
    late = meter.energy_between(100.9, 101.2, final=True)
    assert math.isnan(late.energy_j) and "stopped before the request ended" in late.note
    meter.add(101.25, 25.0, "virtual (SIMULATION)")
    assert meter.energy_between(100.9, 101.2).energy_j == pytest.approx(20.0 * 0.1 + 5.0 * 0.2 / 0.25)


def test_no_power_is_nan_with_the_reason_never_zero():
    empty = EnergyMeter()
    assert empty.energy_between(1.0, 2.0) is None
    none = empty.energy_between(1.0, 2.0, final=True)
    assert math.isnan(none.energy_j) and none.note == NO_TELEMETRY
    cpu = EnergyMeter()
    cpu.add(1.0, math.nan, "cpu")
    cpu.add(1.1, math.nan, "cpu")
    reading = cpu.energy_between(1.0, 5.0)  # known at once: this source never measures power
    assert math.isnan(reading.energy_j) and "(cpu) measures no power" in reading.note
    before = meter_at(20.0).energy_between(99.0, 100.5)
    assert math.isnan(before.energy_j) and "began after the request started" in before.note
    restarted = meter_at(20.0)
    restarted.add(101.1, 0.5, "virtual (SIMULATION)")
    assert "restarted" in restarted.energy_between(100.9, 101.1).note


@dataclass(frozen=True)
class _End:
    span_wall_s: tuple
    energy: EnergyReading | None = None


def test_spans_wait_for_the_telemetry_then_leave_in_order():
    meter = meter_at(10.0)
    awaiting = AwaitingEnergy(meter, wait_s=0.5)
    awaiting.add(_End((100.2, 100.4)))
    awaiting.add(_End((100.9, 101.3)))
    ready = awaiting.ready(now_wall_s=101.31)
    assert [e.energy.energy_j for e in ready] == [pytest.approx(2.0)] and len(awaiting) == 1
    assert awaiting.ready(now_wall_s=101.5) == [] and len(awaiting) == 1
    (late,) = awaiting.ready(now_wall_s=101.81)
    assert math.isnan(late.energy.energy_j) and late.energy.note and len(awaiting) == 0
