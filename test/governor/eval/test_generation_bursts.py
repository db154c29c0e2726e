"""A long answer's decode steps come in bursts, one per request: a window of them measures the
rate inside an answer (from a few Hz to the step rate, wherever the window fell), not the load.
That must not read as an input-rate change: each one restarted exploration and forgot every
point measured, so the governor explored all run long (nano_long: 37 moves in 120 s). SIMULATION."""

import sys

from edge_roofline.governor.core import Governor
from edge_roofline.governor.eval.generation import GenerationScenario
from edge_roofline.governor.eval.generation_sim import simulate

from .test_generation_eval import SMALL


def test_decode_bursts_at_a_steady_request_rate_are_no_rate_change(monkeypatch):
    # 0.5 requests/s, each about 0.2 s of decode then idle: bursty decode windows, one load
    sc = GenerationScenario(name="bursts", device="agx_orin_64gb", request_rate_hz=0.5, prompt_tokens=256,
                            output_tokens=160, ttft_ms=40.0, tpot_ms=2.5, duration_s=40.0, model=SMALL)
    rate_restarts_s = []
    new_workload = Governor._new_workload

    def counted(self, *args, **kwargs):
        if sys._getframe(1).f_code.co_name == "calibrate":  # Learned.calibrate's rate_changed()
            rate_restarts_s.append(self.clock.now_s())
        return new_workload(self, *args, **kwargs)

    monkeypatch.setattr(Governor, "_new_workload", counted)
    simulate(sc, "governor")
    assert rate_restarts_s == []
