"""The stream API (issue 28): every call takes ``stream=`` with the same default, a stream can be
said to have left, and several targets change in one call without restarting every stream's
exploration; the model gate tells which frames are judged."""

import pytest

from edge_roofline.clock import SimClock
from edge_roofline.governor.config import DEFAULT_STREAM, ConfigError, GovernorConfig
from edge_roofline.governor.core import Governor
from edge_roofline.governor.model_follow import ModelGate

from .fake_law import LawPlatform
from .test_governor import analysis
from .test_multistream import drive, make


def test_every_call_takes_the_same_default_stream(tmp_path):
    # One named stream: the default names it; with several, the default is refused naming them.
    config = GovernorConfig.from_dict({"streams": [{"name": "det", "target_latency_ms": 20}],
                                       "state_path": str(tmp_path / "s.json")})
    gov = Governor(LawPlatform(), config, analysis(), SimClock(0.0))
    gov.observe_inference(0.005, 0.01)
    gov.set_target(30.0, 95.0)
    gov.set_model(analysis(), "toy")
    gov.stream_left()
    assert gov.streams["det"].config.target_latency_ms == 30.0 and not gov.streams["det"].active
    several, _, _ = make(tmp_path / "several")
    for call in (lambda: several.set_target(30.0, 95.0), lambda: several.observe_inference(0.01, 0.0),
                 lambda: several.stream_left(), lambda: several.set_model(analysis())):
        with pytest.raises(ConfigError, match="name the stream: one of det, seg"):
            call()
    assert DEFAULT_STREAM == "default"


def test_a_stream_that_left_is_out_of_the_constraint_set_at_once(tmp_path):
    gov, platform, clock = make(tmp_path)
    drive(gov, platform, clock, 10.0)
    gov.stream_left(stream="seg")
    decision = gov.step(clock.now_s())
    assert not next(s for s in decision.streams if s.name == "seg").active
    decisions = drive(gov, platform, clock, 0.5)  # its next inference brings it back
    assert next(s for s in decisions[-1].streams if s.name == "seg").active


def test_several_targets_in_one_call_keep_the_verdicts_they_leave_standing(tmp_path):
    gov, platform, clock = make(tmp_path)
    drive(gov, platform, clock, 20.0)
    met, measured = set(gov.findings.met), set(gov.findings.measured)
    assert met
    gov.set_targets({"det": (30.0, 95.0), "seg": (70.0, 95.0)})  # both looser: what met, meets
    assert met <= gov.findings.met and measured <= gov.findings.measured
    assert (gov.streams["det"].config.target_latency_ms, gov.streams["seg"].config.target_latency_ms) == (30.0, 70.0)
    gov.set_targets({"det": (20.0, 95.0), "seg": (80.0, 95.0)})  # one tighter, one looser: no verdict stands
    assert not gov.findings.met and measured <= gov.findings.measured


def test_the_model_gate():
    gate = ModelGate(patience_s=5.0)
    assert gate.judged("heavy", 0.0, 0.01)  # the first model reported
    assert not gate.judged("light", 1.0, 1.01)  # reported, not announced yet (its roofline is loading)
    gate.switched("light", 1.5)
    assert not gate.judged("heavy", 1.6, 1.7)  # the old model's frame, still in flight
    assert not gate.judged("light", 1.4, 1.7)  # started before the switch
    assert gate.judged("light", 1.6, 1.7)
    assert not gate.judged("other", 2.0, 2.1) and gate.judged("other", 7.2, 7.3)  # never announced: after patience
