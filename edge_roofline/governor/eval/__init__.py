"""Closed-loop evaluation of the governor on the virtual Jetson (SIMULATION).

A scenario (YAML, see ``load_scenario``) is a device and one stream (a model and a list of
phases: input rate, latency target, batch, background GPU load, optionally another model) or
several concurrent streams, each with its own model, rate, target and percentile, start and stop
or phases. Its "phases" below are segments: the intervals between any two streams' events.
Several streams' inferences share the board (``virtual.contention``). Every policy runs the
SAME scenario on a freshly booted ``VirtualBoard`` with the same seed, on simulated time:

- ``maxn``: the max-clock preset, static;
- ``default``: the board's default nvpmodel preset, static (booted in it: on AGX Orin 64GB
  MODE_30W has another TPC mask than MAXN, which needs a reboot);
- ``best_static``: the one candidate point with the least energy per inference over the whole
  scenario among those meeting every phase's target, chosen in hindsight;
- ``oracle``: the best candidate point per phase, chosen in hindsight, switched at phase changes
  (joint: the least energy where EVERY stream of the phase meets its target);
- ``oracle_margin``: the same, held to the safety rules the governor's choices obey (percentile
  under target x (1 - margin), at most MAX_UTILISATION of the input period busy): a reference
  that prices the margin; the acceptance criteria use ``oracle``;
- ``governor``: the ``Governor`` core, starting from MAXN, seeing only what the platform shows
  (``platform.sample()`` power and the application's latencies).

Latency is what the application sees: inputs arrive periodically at ``input_rate_hz``; one that
arrives while the stream's previous inference runs waits, so latency = queueing + execution
(contention with the other streams included). Energy per inference is the board's TRUE module
energy (ground truth, for scoring only) over the phase or scenario divided by the inferences
completed (every stream's), idle between inferences included. An "inference" is one run of the
stream's model at the phase's batch.

Hindsight choices (``best_static``, ``oracle``) come from a short simulation of every candidate
point per distinct phase workload (cached); the chosen points are then run over the full
scenario like every other policy, so all reported numbers are measured the same way.
"""

from __future__ import annotations

import math

import numpy as np

from ..config import GovernorConfig
from .hindsight import Hindsight
from .policies import POLICIES, GovernorController, ScheduleController, StaticController
from .scenario import Scenario, ScenarioError, load_scenario, shipped_scenarios
from .score import Evaluation, PolicyScore, score
from .simulate import boot, maxn_mode_id, simulate
from .tables import format_evaluation, format_summary

__all__ = ["Evaluation", "POLICIES", "Scenario", "ScenarioError", "evaluate", "format_evaluation", "format_summary",
           "load_scenario", "run_policy", "shipped_scenarios"]


def run_policy(policy: str, scenario: Scenario, hindsight: Hindsight | None = None) -> PolicyScore:
    """One policy over the whole scenario (hindsight policies need ``hindsight``)."""
    device_default = boot(scenario, maxn_mode_id(scenario))[0].device.default_mode_id
    if policy == "maxn":
        trace = simulate(scenario, maxn_mode_id(scenario), StaticController())
    elif policy == "default":
        trace = simulate(scenario, device_default, StaticController())
    elif policy == "best_static":
        point = hindsight.best_static()
        trace = simulate(scenario, point.nvpmodel_id, StaticController(point))
    elif policy in ("oracle", "oracle_margin"):
        margin = GovernorConfig.from_dict(scenario.governor).margin if policy == "oracle_margin" else None
        points = [r.point for r in hindsight.oracle(margin)]
        trace = simulate(scenario, maxn_mode_id(scenario), ScheduleController(points))
    elif policy == "governor":
        trace = simulate(scenario, maxn_mode_id(scenario), GovernorController())
    else:
        raise ValueError(f"unknown policy {policy!r}; use one of {', '.join(POLICIES)}")
    return score(policy, scenario, trace)


def evaluate(scenario: Scenario, policies: tuple[str, ...] = POLICIES) -> Evaluation:
    """Every policy on ``scenario`` (same board, same seed). SIMULATION."""
    hindsight = Hindsight(scenario)
    scores = {p: run_policy(p, scenario, hindsight) for p in policies}
    maxn = scores.get("maxn") or run_policy("maxn", scenario)
    slack = tuple(max(float(np.percentile([r.latency_s for r in maxn.trace.inferences
                                           if r.phase == i and r.stream == name] or [math.inf],
                                          ph.percentile)) / ph.target_latency_s for name, ph in seg.active)
                  for i, seg in enumerate(scenario.segments))
    return Evaluation(scenario, scores, tuple(r.point.name for r in hindsight.oracle()),
                      hindsight.best_static().name, slack)
