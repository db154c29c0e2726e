"""Probes of axes the measurements have not isolated (issue 28): while every measured point
shares one EMC clock, or the EMC clock moved only together with others, the model's memory term
is its prior; one step down that axis from a point measured to meet the targets is tried where
the model's uncertainty allows, and measured, it isolates the axis. A point that missed is not
explored again once its verdict expires."""

from dataclasses import replace

from edge_roofline.governor import selection
from edge_roofline.governor.points import effective_clocks
from edge_roofline.governor.policy import ChoiceSettings, Evidence, JointPrediction, StreamPrediction, choose
from edge_roofline.governor.rules import Dominance
from edge_roofline.governor.states import State
from edge_roofline.platforms.base import OperatingPoint

from .fake_law import DEVICE, drive, law_latency_s, law_power_w
from .test_governor import make
from .test_rules import grid, launch_bound_governor, launch_bound_latency_s

LIMIT_S = 0.010
CHOICE = dict(violations={}, settings=ChoiceSettings(hysteresis=0.03, explore=True, explore_min_rel_std=0.08))


def point(name: str, latency_ms: float, power_w: float, latency_std_ms: float = 0.05) -> JointPrediction:
    stream = StreamPrediction("default", latency_ms / 1e3, latency_std_ms / 1e3, 30.0, LIMIT_S, 1.0)
    return JointPrediction(OperatingPoint(name), (stream,), power_w, 0.01 * power_w)


def axes(name: str) -> tuple:
    c = effective_clocks(DEVICE, next(p for p in grid() if p.name == name))
    return c.cpu_freq_hz, c.gpu_freq_hz, c.emc_freq_hz, c.cpu_online_cores


def stepped(probes: set[str], start: str) -> set[int]:
    """The axes (CPU, GPU, EMC clock, cores) on which ``probes`` differ from ``start``."""
    return {k for name in probes for k in range(4) if axes(name)[k] != axes(start)[k]}


def test_probes_step_down_only_the_axes_no_two_measured_points_isolate():
    dominance = Dominance(DEVICE, grid())
    met = "MAXN/c6-cpu2202-gpu714-emc3199"
    cpu_pair = {met, "MAXN/c6-cpu1728-gpu714-emc3199"}  # differ in the CPU clock alone
    probes = dominance.probes({met}, cpu_pair)
    # GPU and EMC clocks (c6 is the fewest cores: no step down there), not the CPU clock
    assert stepped(probes, met) == {1, 2}, sorted(probes)
    assert all(axes(name)[k] <= axes(met)[k] for name in probes for k in range(4))
    # A point that moved the EMC clock together with the GPU's isolates neither.
    both = cpu_pair | {"MAXN/c6-cpu2202-gpu408-emc2133"}
    assert stepped(dominance.probes({met}, both), met) == {1, 2}
    # One EMC step measured alone isolates the EMC axis.
    isolated = cpu_pair | {"MAXN/c6-cpu2202-gpu714-emc2133"}
    assert stepped(dominance.probes({met}, isolated), met) == {1}
    # ... and with the point before, one GPU step (at 2133 MHz) isolates the GPU axis
    assert dominance.probes({met}, isolated | both) == set()
    assert dominance.probes(set(), cpu_pair) == set()  # only from points measured to meet


def test_a_probe_is_tried_within_the_uncertainty_the_likeliest_to_meet_first():
    best = point("best", 8.0, 10.0)
    wide = point("wide", 11.0, 9.0, latency_std_ms=1.0)  # 10 % over the limit, 2 sigma under it
    closer = point("closer", 10.5, 9.5, latency_std_ms=1.0)
    met = Evidence(met=frozenset({"best"}))

    def probing(*names: str, measured: frozenset[str] = frozenset()) -> Evidence:
        return replace(met, probes=frozenset(names), measured=measured)
    assert choose([best, wide, closer], best, evidence=met, **CHOICE).prediction is best  # not a probe: not tried
    choice = choose([best, wide, closer], best, evidence=probing("wide", "closer"), **CHOICE)
    assert choice.exploring and choice.prediction is closer and "not isolated" in choice.reason
    # measured already, beyond two standard deviations, or no saving: not tried
    assert choose([best, wide, closer], best, evidence=probing("wide", "closer", measured=frozenset({"closer"})),
                  **CHOICE).prediction is wide
    far = point("far", 13.0, 9.0, latency_std_ms=1.0)
    assert choose([best, far], best, evidence=probing("far"), **CHOICE).prediction is best
    dear = point("dear", 10.5, 11.0, latency_std_ms=1.0)
    assert choose([best, dear], best, evidence=probing("dear"), **CHOICE).prediction is best
    # at the predicted latency the input queue would grow without bound (11 ms at 90 Hz): not tried
    queue = JointPrediction(OperatingPoint("queue"), (StreamPrediction("default", 11e-3, 1e-3, 90.0, LIMIT_S, 1.0),),
                            9.0, 0.09)
    assert choose([best, queue], best, evidence=probing("queue"), **CHOICE).prediction is best
    # a miss being escaped: no probe
    assert not choose([best, wide], best, evidence=probing("wide"),
                      **{**CHOICE, "violations": {"default": 1.2}}).exploring


def test_a_launch_bound_law_finds_the_low_emc_clock_its_prior_overstates(tmp_path):
    # The roofline prior puts much of this model's time on DRAM, the law almost none: without a
    # probe of the EMC axis the governor held the top EMC clock at 1.16 x the best energy.
    gov, platform, clock = launch_bound_governor(tmp_path, 1.3)
    drive(gov, platform, clock, 30.0, rate_hz=60.0, latency_law=launch_bound_latency_s)
    target_s = launch_bound_latency_s(gov.found) * 1.3

    def energy_j(p):
        return law_power_w(p, launch_bound_latency_s(p) * 60.0) / 60.0

    # the best point whose mean latency, with 5 % jitter, stays under the margin's limit
    best = min(energy_j(p) for p in grid() if launch_bound_latency_s(p) * 1.05 <= target_s * 0.95)
    assert effective_clocks(DEVICE, platform.current).emc_freq_hz < DEVICE.emc_max_freq_hz, platform.current.name
    assert energy_j(platform.current) <= 1.05 * best, platform.current.name


def test_a_point_that_missed_is_not_explored_again_when_its_verdict_expires(tmp_path, monkeypatch):
    # The verdict's age lets a point back where the model predicts it meets; an exploration of
    # it (the model unsure) would only pay the miss again (thor_tight: the same step down
    # missed at 2.5 s and at 22.7 s).
    gov, platform, clock = make(tmp_path)
    drive(gov, platform, clock, 40.0)
    below = sorted({p.name for p in gov.candidates} - gov.findings.measured - gov.dominance.unbeatable)[0]
    gov._apply(next(p for p in gov.candidates if p.name == below), clock.now_s())
    gov.state = State.EXPLORING
    # Every inference there late, each stepped on at once (as the node does): the point is
    # left on the evidence, before a window of it is measured.
    while platform.current.name == below:
        clock.advance(0.025)
        lat_s = law_latency_s(platform.current) * 5.0
        if gov.observe_inference(lat_s, clock.now_s()):
            gov.step(clock.now_s())
    assert below in gov.findings.missed and below not in gov.findings.measured
    drive(gov, platform, clock, 20.0 + 15.0)  # the verdict's age (verdict_ttl_s) and some
    assert below not in gov.findings.missed
    seen = {}

    def spy(*args, **kwargs):
        seen.update(kwargs)
        return choose(*args, **kwargs)

    monkeypatch.setattr(selection, "choose", spy)
    drive(gov, platform, clock, 12.0)
    assert below in seen["evidence"].measured


def test_a_probe_is_made_once_per_model_whatever_the_rate_does(tmp_path):
    # A probe identifies how this model's latency moves along an axis: a new input rate (a
    # language model's decode rate moves with every answer) forgets the verdicts, not that. A
    # probe that missed was made again at every rate change (agx_chat: half of its decode steps
    # over target); a new model probes again.
    gov, platform, clock = launch_bound_governor(tmp_path, 1.3)
    drive(gov, platform, clock, 20.0, rate_hz=60.0, latency_law=launch_bound_latency_s)
    probed = set(gov.learned.probed)
    assert probed, "the launch-bound law needs a probe of its EMC axis"
    decisions = []
    for rate_hz in (40.0, 60.0, 40.0):  # each a rate change: a new workload, verdicts forgotten
        decisions += drive(gov, platform, clock, 8.0, rate_hz=rate_hz, latency_law=launch_bound_latency_s)
    probes = [d.point.name for d in decisions if d.applied and "axis the measurements" in d.reason]
    assert not set(probes) & probed, probes
    assert gov.learned.probed >= probed
    gov.set_model(None, "another_model")
    assert not gov.learned.probed
