"""One implausible sample is a glitch, not a fault (issue 23: a PowerTelemetry with avg=nan about
1 s after an unrelated subscriber started sent the governor to fallback for 4 s). A fault is
``implausible_samples`` readings within ``implausible_window_s``; fewer are counted and named."""

import math

import pytest

from edge_roofline.governor.config import ConfigError, GovernorConfig

from .fake_law import drive, law_power_w
from .test_governor import make


def glitch_power(clock, at_s: list[float]):
    """The law's power, NaN in the one sample taken at each time in ``at_s`` (samples 0.1 s apart)."""
    def power(point, duty, scale):
        t = clock.now_s()
        return math.nan if any(abs(t - a) < 0.05 for a in at_s) else law_power_w(point, duty, scale)
    return power


def test_single_nan_power_samples_do_not_fall_back(tmp_path):
    gov, platform, clock = make(tmp_path)
    drive(gov, platform, clock, 30.0)
    moved = platform.current
    assert moved != platform.found
    t = clock.now_s()
    decisions = drive(gov, platform, clock, 5.0, power_law=glitch_power(clock, [t + 0.5, t + 2.5]))
    assert not any(d.fallback_active for d in decisions), [d.reason for d in decisions if d.fallback_active]
    assert gov.safety.glitches == 2 and gov.safety.last_glitch == "power nan W"
    assert platform.current != platform.found  # not sent to the safe point


def test_a_nan_that_persists_is_a_fault(tmp_path):
    gov, platform, clock = make(tmp_path)
    drive(gov, platform, clock, 30.0)
    decisions = drive(gov, platform, clock, 1.0, power_law=lambda point, duty, scale: math.nan)
    first = next(i for i, d in enumerate(decisions) if d.fallback_active)
    assert first == gov.config.safety.implausible_samples - 1  # power at 10 Hz: the third sample
    assert "implausible measurement: power nan W" in decisions[first].reason
    assert platform.current == platform.found


def test_a_single_nan_latency_is_a_glitch(tmp_path):
    gov, platform, clock = make(tmp_path)
    drive(gov, platform, clock, 30.0)
    start = clock.now_s()
    decisions = drive(gov, platform, clock, 3.0,
                      latency_of=lambda t, lat: math.nan if start + 0.5 <= t < start + 0.52 else lat)
    assert not any(d.fallback_active for d in decisions) and gov.safety.glitches == 1
    assert gov.safety.last_glitch == "latency nan s"


def test_the_rule_is_configured_and_checked():
    config = GovernorConfig.from_dict({"safety": {"implausible_samples": 1}})
    assert config.safety.implausible_samples == 1  # every implausible sample a fault, as before
    with pytest.raises(ConfigError, match="implausible_samples must be >= 1"):
        GovernorConfig.from_dict({"safety": {"implausible_samples": 0}})


def test_power_readings_that_keep_coming_implausible_are_named_not_called_silence():
    """A missing rail sends NaN power on every message: the fallback said 'no power sample' as if
    the topic were silent; the readings come, and the reason names what they are."""
    from edge_roofline.governor.config import SafetyConfig
    from edge_roofline.governor.safety import SafetyMonitor

    monitor = SafetyMonitor(SafetyConfig(), start_s=0.0)
    monitor.note_power(0.0, None)
    for k in range(1, 16):
        monitor.note_implausible(k * 0.1, "power nan W from VDD_IN")
    verdict = monitor.verdict(1.5)
    assert not verdict.ok and verdict.reason.startswith("stale telemetry: no power sample for 1.50 s")
    assert verdict.reason.endswith("; readings come, each implausible: power nan W from VDD_IN")
    silent = SafetyMonitor(SafetyConfig(), start_s=0.0)
    assert silent.verdict(1.5).reason == "stale telemetry: no power sample for 1.50 s (> 1.0 s)"
