"""Several streams on one virtual board (SIMULATION): their inferences share the GPU and the
cores (processor sharing), so a stream's latency rises with the others' load; one stream alone
runs exactly as a plain loop of ``run_inference`` calls would."""

import numpy as np
import pytest

from edge_roofline.governor.eval.policies import StaticController
from edge_roofline.governor.eval.scenario import scenario_from_dict
from edge_roofline.governor.eval.simulate import boot, maxn_mode_id, simulate
from edge_roofline.governor.eval.workload import workload
from edge_roofline.virtual.contention import fair_rates

from .scenarios import short


def test_fair_rates_share_a_scarce_resource_max_min():
    assert fair_rates([0.5, 0.4], 1.0) == [1.0, 1.0]  # enough for both: nobody slows down
    assert fair_rates([1.0, 1.0, 1.0], 1.0) == pytest.approx([1 / 3] * 3)  # k GPU-bound: 1/k each
    # the light user gets all it asks; the heavy ones split what is left
    assert fair_rates([0.2, 1.0, 1.0], 1.0) == pytest.approx([1.0, 0.4, 0.4])
    assert fair_rates([0.0, 1.0, 1.0], 1.0) == pytest.approx([1.0, 0.5, 0.5])


def _two(rate_b_hz: float):
    streams = [{"name": "a", "model": "resnet50", "input_rate_hz": 30, "target_latency_ms": 20}]
    if rate_b_hz:  # off A's beat, so the overlap grows with B's rate rather than by alignment
        streams.append({"name": "b", "model": "yolo_tiny", "input_rate_hz": rate_b_hz, "target_latency_ms": 50,
                        "start_s": 0.0123})
    return scenario_from_dict({"device": "agx_orin_64gb", "precision": "fp16", "seed": 3, "duration_s": 5,
                               "streams": streams}, "contention")


def test_a_streams_latency_rises_with_the_others_load():
    a_mean, a_p95, energy = [], [], []
    for rate_b_hz in (0, 47, 113, 251, 401):
        s = _two(rate_b_hz)
        trace = simulate(s, maxn_mode_id(s), StaticController(), sample_hz=None, step_s=None)
        lat = [r.latency_s for r in trace.inferences if r.stream == "a"]
        assert len(lat) == 150  # A keeps up: what rises is its latency, not its queue
        a_mean.append(np.mean(lat))
        a_p95.append(np.percentile(lat, 95))
        energy.append(sum(trace.phase_energy_j))
    assert all(x < y for x, y in zip(a_mean, a_mean[1:])), a_mean
    assert all(x < y for x, y in zip(energy, energy[1:])), energy  # the work adds up in power
    assert a_p95[0] * 1.5 < min(a_p95[1:]), a_p95  # an overlap slows A's GPU part to about half


def test_two_gpu_bound_streams_arriving_together_each_take_about_twice_as_long():
    s = scenario_from_dict({"device": "agx_orin_64gb", "precision": "fp16", "seed": 3, "duration_s": 2, "streams": [
        {"name": n, "model": "resnet50", "batch": 8, "input_rate_hz": 20, "target_latency_ms": 50} for n in "ab"]},
        "pair")
    alone = scenario_from_dict({"device": "agx_orin_64gb", "precision": "fp16", "seed": 3, "duration_s": 2, "streams": [
        {"name": "a", "model": "resnet50", "batch": 8, "input_rate_hz": 20, "target_latency_ms": 50}]}, "alone")
    lat = {}
    for sc in (s, alone):
        trace = simulate(sc, maxn_mode_id(sc), StaticController(), sample_hz=None, step_s=None)
        lat[sc.name] = np.median([r.latency_s for r in trace.inferences if r.stream == "a"])
    assert 1.6 < lat["pair"] / lat["alone"] <= 2.05, lat


def test_one_stream_runs_exactly_as_a_plain_loop_of_inferences():
    """The N=1 case of the shared-board machinery: the same latencies and energy, to the bit, as
    running each input on an idle board in turn (what governor-eval did before streams)."""
    s = short()
    trace = simulate(s, maxn_mode_id(s), StaticController(), sample_hz=None, step_s=None)
    board, _, _ = boot(s, maxn_mode_id(s))
    expected, t0 = [], 0.0
    for i, phase in enumerate(s.stream_specs[0].phases):
        cost = workload(s, phase).cost
        for k in range(int(np.ceil(phase.duration_s * phase.input_rate_hz - 1e-9))):
            arrival = t0 + k / phase.input_rate_hz
            if arrival > board.now_s:
                board.advance(arrival - board.now_s)
            if k == 0:  # the phase's background load from its start (the board is idle then)
                board.background_gpu_load = phase.background_gpu_load
            timing, activity = board.prepare_inference(cost, s.precision)
            board.advance(board.now_s + timing.latency_s - board.now_s, activity)
            board.finish_inference()
            expected.append((i, arrival, board.now_s))
        t0 += phase.duration_s
    board.advance(max(s.duration_s - board.now_s, 0.0))  # idle to the end
    assert [(r.phase, r.arrival_s, r.end_s) for r in trace.inferences] == expected
    assert sum(trace.phase_energy_j) == pytest.approx(board.energy_j, rel=1e-12)
