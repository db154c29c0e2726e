"""The governor off a Jetson (issue 23): modes off and advise run where the platform named cannot
start, govern nothing and say so on every step; mode active cannot, and says what to set in one
line. The tree under sysfs_root is empty, so the Jetson platform cannot start on any machine."""

import pytest

from edge_roofline.clock import SimClock
from edge_roofline.governor.config import ConfigError
from edge_roofline.governor.runtime import GovernorRuntime
from edge_roofline.platforms.base import PlatformInitError
from test.governor.test_runtime import params


def off_jetson(tmp_path, **extra):
    (tmp_path / "not_a_jetson").mkdir(exist_ok=True)
    return {**params(tmp_path), "platform": "jetson", "sysfs_root": str(tmp_path / "not_a_jetson"), **extra}


@pytest.mark.parametrize("mode", ["advise", "off"])
def test_off_and_advise_run_off_a_jetson_and_say_they_govern_nothing(tmp_path, mode):
    logs = []
    runtime = GovernorRuntime(off_jetson(tmp_path, mode=mode), SimClock(0.0), log=logs.append)
    try:
        assert runtime.unavailable.startswith("platform 'jetson' unavailable (not a Jetson: no ")
        assert "has one operating point" in runtime.unavailable
        told = [line for line in logs if line.startswith("governing nothing: platform 'jetson' unavailable")]
        assert len(told) == 1 and "\n" not in told[0], logs
        runtime.observe_stats("default", "zoo:tiny_cnn", 0.005, 1.0)
        runtime.governor.observe_power(float("nan"), 1.0, None, "cpu (no power sensor)")
        decision = runtime.step(1.1)
        if mode == "off":
            assert (decision.state, decision.reason) == ("disabled", "mode off")
        else:
            assert decision.state == "unavailable" and not decision.applied and not decision.fallback_active
            assert decision.reason.startswith("nothing to govern: platform 'jetson' unavailable")
        assert runtime.glitch_lines() == []  # no power sensor here is no glitch
        assert runtime.set_enabled(True)[0]
    finally:
        assert runtime.close() is True
    assert not (tmp_path / "state.json").exists()  # nothing was changed, so nothing recorded


def test_active_off_a_jetson_refuses_in_one_line_naming_what_to_set(tmp_path):
    with pytest.raises(PlatformInitError) as err:
        GovernorRuntime(off_jetson(tmp_path, mode="active"), SimClock(0.0))
    message = str(err.value)
    assert message.startswith("not a Jetson: ") and "\n" not in message
    assert "mode active needs a platform whose operating point it can change" in message
    assert "-p mode:=advise" in message and "-p platform:=nvml" in message


def test_the_cpu_platform_has_nothing_to_govern(tmp_path):
    runtime = GovernorRuntime({**params(tmp_path), "platform": "cpu", "mode": "advise"}, SimClock(0.0),
                              log=list().append)
    try:
        assert runtime.unavailable.startswith("the cpu platform (") and runtime.step(1.0).state == "unavailable"
    finally:
        runtime.close()
    with pytest.raises(ConfigError, match="mode active: the cpu platform .* has one operating point"):
        GovernorRuntime({**params(tmp_path), "platform": "cpu", "mode": "active"}, SimClock(0.0))


def test_a_glitch_is_told_once_per_burst(tmp_path, monkeypatch):
    import sys
    from test.platforms.test_nvml_platform import fake_pynvml
    monkeypatch.setitem(sys.modules, "pynvml", fake_pynvml())
    runtime = GovernorRuntime(params(tmp_path), SimClock(0.0), log=list().append)
    try:
        runtime.governor.observe_power(float("nan"), 0.5, None, "nvml")
        assert runtime.glitch_lines() == ["ignored 1 implausible reading(s), the last: power nan W from nvml "
                                          "(a fault is 3 within 1 s)"]
        assert runtime.glitch_lines() == []
    finally:
        runtime.close()
