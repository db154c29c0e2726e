"""A long answer's decode steps come in bursts, one per request: a window of them measures the
rate inside an answer (from a few Hz to the step rate, wherever the window fell), not the load.
That must not read as an input-rate change (each one restarted exploration and forgot every
point measured: nano_long explored all run long, 37 moves in 120 s), and the power model must
see a burst's busy time over the time its power was averaged on, and predict it at the steps'
rate over time (request rate x steps per answer): taken at the burst's rate, it ranked the
points wrong (nano_long settled at 1.19 x the oracle). SIMULATION."""

import sys

import pytest

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


def _phase_streams():
    from edge_roofline.governor.config import StreamConfig
    from edge_roofline.governor.streams import Stream

    ttft = Stream(StreamConfig("ttft", 200.0, phase="prefill", stats_topic="/llm"))
    tpot = Stream(StreamConfig("tpot", 7.5, phase="decode", stats_topic="/llm"))
    det = Stream(StreamConfig("det", 6.0))
    return ttft, tpot, det


def test_a_decode_streams_rate_over_time_is_the_request_rate_times_the_steps_per_answer():
    from edge_roofline.governor.streams import answer_rate_hz

    ttft, tpot, det = _phase_streams()
    assert answer_rate_hz(tpot, [ttft, tpot, det]) is None  # no request seen yet
    ttft.inferences, ttft.calibrated_rate_hz, tpot.inferences = 4, 0.3, 4 * 255
    assert answer_rate_hz(tpot, [ttft, tpot, det]) == pytest.approx(0.3 * 255)
    assert answer_rate_hz(ttft, [ttft, tpot, det]) is None and answer_rate_hz(det, [ttft, tpot, det]) is None


def test_the_power_model_sees_a_burst_over_the_time_the_power_window_covers():
    import numpy as np

    from edge_roofline.governor.learned import power_rate_hz
    from edge_roofline.governor.streams import PowerWindow, StreamWindow

    ttft, tpot, det = _phase_streams()
    power = PowerWindow()
    for k in range(250):  # 5 s of readings at 50 Hz
        power.add(k / 50.0, 5.0)
    # 100 decode steps of 6 ms in 0.6 s, then idle: 99 / 0.6 s = 165 Hz inside the burst,
    # 100 / 5 s = 20 Hz over the window the power was averaged on
    finish_s = 1.0 + 0.006 * np.arange(1, 101)
    window = StreamWindow(np.full(100, 0.006), 99 / (finish_s[-1] - finish_s[0]), finish_s)
    now_s = 250 / 50.0
    assert window.rate_hz > 150
    assert power_rate_hz(tpot, window, power, now_s) == pytest.approx(100 / (now_s - power.first_s))
    assert power_rate_hz(det, window, power, now_s) is None  # frames: their window's own rate


def test_predicted_power_spends_a_decode_streams_energy_at_its_rate_over_time():
    import math

    from edge_roofline.governor.joint import StreamLoad
    from edge_roofline.governor.predictor import Prediction
    from edge_roofline.platforms.base import OperatingPoint

    solo = Prediction(OperatingPoint("p"), 0.006, 1e-4, math.nan, math.nan, math.inf, 165.0)
    burst = StreamLoad("tpot", solo, 0.006, 165.0, None, engine="e", phase="decode")
    assert burst.power_rate_hz == 165.0  # no request seen yet: the window's rate
    assert StreamLoad("tpot", solo, 0.006, 165.0, None, engine="e", phase="decode",
                      answer_rate_hz=76.5).power_rate_hz == 76.5
