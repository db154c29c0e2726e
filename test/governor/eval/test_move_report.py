"""governor-eval reports, per run, when the policy last moved after each phase change and the
shortest time between two moves (issue 28: settling after a change; no move before the last
one settled)."""

import math

from edge_roofline.governor.eval.score import _moves
from edge_roofline.governor.eval.simulate import Trace


def test_time_to_last_move_is_measured_from_each_phase_change():
    # Phases start at 0 and 10 s; moves at 0.5, 2.0 (first phase) and 10.3, 10.35 (second).
    trace = Trace(points=[(0.0, "MAXN"), (0.5, "a"), (2.0, "b"), (10.3, "c"), (10.35, "d")],
                  phase_start_s=[0.0, 10.0])
    last_s, gap_s = _moves(trace)
    assert math.isclose(last_s, 2.0)
    assert math.isclose(gap_s, 0.05)


def test_a_run_that_never_moves_reports_no_gap():
    last_s, gap_s = _moves(Trace(points=[(0.0, "MAXN")], phase_start_s=[0.0, 5.0]))
    assert last_s == 0.0 and math.isinf(gap_s)
