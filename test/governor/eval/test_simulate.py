"""One run on simulated time (SIMULATION): the board's physics, its energy and queueing."""

import numpy as np
import pytest

from edge_roofline.governor.eval.policies import StaticController
from edge_roofline.governor.eval.simulate import maxn_mode_id, simulate
from edge_roofline.governor.eval.workload import workload

from .scenarios import short


def test_perturbation_changes_the_board():
    plain = simulate(short(), maxn_mode_id(short()), StaticController(), sample_hz=None, step_s=None)
    moved = simulate(short(physics_perturbation=0.3), maxn_mode_id(short()), StaticController(),
                     sample_hz=None, step_s=None)
    assert sum(moved.phase_energy_j) != pytest.approx(sum(plain.phase_energy_j), rel=0.01)
    lat = [r.latency_s for r in plain.inferences]
    assert [r.latency_s for r in moved.inferences] != pytest.approx(lat, rel=0.01)


def test_split_inferences_spend_what_run_inference_spends():
    """The evaluator reads the sensors mid-inference; its energy must be the board's own."""
    from edge_roofline.virtual.board import VirtualBoard
    s = short(phases=[{"duration_s": 2, "input_rate_hz": 50, "target_latency_ms": 5, "background_gpu_load": 0.3}])
    trace = simulate(s, maxn_mode_id(s), StaticController(), sample_hz=45.0, step_s=None)
    board = VirtualBoard(s.device, mode_id=maxn_mode_id(s), seed=s.seed)
    board.background_gpu_load = 0.3
    cost = workload(s, s.phases[0]).cost
    for r in trace.inferences:
        board.advance_to(r.arrival_s)
        board.run_inference(cost, s.precision)
    board.advance_to(2.0)
    assert len(trace.inferences) == 100
    # (splitting moves where leakage sees the temperature: a few ppm)
    assert sum(trace.phase_energy_j) == pytest.approx(board.energy_j, rel=1e-5)
    assert trace.power and all(w > 0 for _, w in trace.power)


def test_queueing_counts_in_latency():
    # tiny_cnn takes ~0.25 ms at MAXN: inputs every 0.125 ms queue up.
    s = short(phases=[{"duration_s": 0.5, "input_rate_hz": 8000, "target_latency_ms": 5}])
    trace = simulate(s, maxn_mode_id(s), StaticController(), sample_hz=None, step_s=None)
    lat = np.array([r.latency_s for r in trace.inferences])
    assert len(lat) > 100 and np.all(np.diff(lat) > 0)  # the backlog grows: each waits longer


def test_physics_scale_moves_only_the_board_and_refuses_unknown_names():
    from edge_roofline.governor.eval.hindsight import Hindsight
    from edge_roofline.governor.eval.scenario import ScenarioError

    with pytest.raises(ScenarioError, match="short: physics_scale: unknown physics parameter.*host_cycles; known: "):
        short(physics_scale={"host_cycles": 5.0})
    with pytest.raises(ScenarioError, match="physics factor for l2_efficiency must be a positive number"):
        short(physics_scale={"l2_efficiency": 0})
    with pytest.raises(ScenarioError, match="physics_scale: must be a mapping"):
        short(physics_scale=[5.0])
    host = short(physics_scale={"host_cycles_per_kernel": 5.0, "host_cycles_per_inference": 5.0})
    plain = simulate(short(), maxn_mode_id(short()), StaticController(), sample_hz=None, step_s=None)
    slow = simulate(host, maxn_mode_id(host), StaticController(), sample_hz=None, step_s=None)
    assert np.mean([r.latency_s for r in slow.inferences]) > 1.1 * np.mean([r.latency_s for r in plain.inferences])
    # The governor's candidates (what it is shown) do not change with the board's physics.
    assert [p.name for p in Hindsight(host).candidates] == [p.name for p in Hindsight(short()).candidates]
