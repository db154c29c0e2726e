"""Real rclpy on a live virtual AGX Orin 64GB (SIMULATION): the generation node times every prefill
and decode step of zoo:tiny_decoder with the board's physics (the virtual backend), the power
monitor's energy counter gives each request's energy per token, and the roofline reports of both
phases carry the operating point read from the board: when another process moves the board, the
next pair of reports names the new point."""

import math
import statistics

from edge_roofline.models import zoo
from edge_roofline.platforms.grid import caps_grid
from edge_roofline.roofline.decoder import DecoderCostModel
from edge_roofline.roofline.devices import get_device
from edge_roofline.virtual.board import VirtualBoard
from test.nodes.llm_client import LlmClient, check_counters, check_stream
from test.nodes.rosutil import log_text, start_node, stop_node, watcher
from test.nodes.test_operating_point_everywhere import move_board
from test.nodes.virtual_rig import DEVICE

NS = "/llm"
PROMPT = list(range(40, 72))  # 32 tokens


def test_tokens_energy_and_phase_reports_on_a_live_virtual_orin(board, ros_env, tmp_path):
    orin = get_device(DEVICE)
    grid = caps_grid(orin, orin.preset(0))
    top_gpu_hz = max(p.gpu_max_freq_hz for p in grid)
    target = next(p for p in grid if p.gpu_max_freq_hz < 0.5 * top_gpu_hz)
    virtual = {"platform": f"virtual:{DEVICE}", "sysfs_root": str(board)}
    logs = {name: tmp_path / f"{name}.log" for name in ("power_monitor", "generation")}
    with watcher(ros_env) as (node, spin_until):
        client = LlmClient(node, NS)
        procs = [start_node("power_monitor", ros_env, virtual, logs["power_monitor"]),
                 start_node("generation", ros_env, {
                     **virtual, "backend": "virtual", "precision": "fp16", "device": DEVICE, "engine": "gpu",
                     "max_new_tokens": 48, "profile_every_requests": 0, "profile_every_s": 0.0,
                     "power_topic": "/power/telemetry"}, logs["generation"], namespace=NS)]

        def everything() -> str:
            return "\n".join(f"--- {n}\n{log_text(p)}" for n, p in logs.items())

        try:
            assert spin_until(lambda: len(client.reports) >= 2, timeout_s=120, procs=procs), everything()
            keys = []
            for i in range(3):
                keys.append(client.send(f"r{i}", ids=PROMPT))
                assert spin_until(lambda: client.finished(keys), timeout_s=60, procs=procs), everything()
            move_board(board, target.name)
            assert spin_until(lambda: any(r.operating_point.name == target.name for r in client.reports),
                              timeout_s=30, procs=procs), [r.operating_point.name for r in client.reports]
            assert spin_until(lambda: sum(r.operating_point.name == target.name for r in client.reports) >= 2,
                              timeout_s=10, procs=procs)
        finally:
            codes = [stop_node(p) for p in procs]
    assert codes == [0, 0], everything()
    assert "Traceback" not in everything()

    for key in keys:
        answer = client.answers[key]
        check_stream(answer, 48, len(PROMPT))
        stats = answer.stats[0]
        check_counters(stats)
        assert stats.simulated and stats.backend == "virtual" and all(s.simulated for s in answer.steps)
        # Energy from the power monitor's counter over the request: measured, per output token.
        assert math.isfinite(stats.energy_j) and stats.energy_j > 0, stats.energy_note
        assert stats.energy_note == "" and stats.energy_per_output_token_j == stats.energy_j / 48
        assert 1e-4 < stats.energy_per_output_token_j < 1.0, stats.energy_per_output_token_j
    # The decode steps take what the board's physics says for this graph at this context (jitter aside).
    costs = DecoderCostModel(zoo.build("tiny_decoder"), precision="fp16")
    expected_ms = VirtualBoard(DEVICE, mode_id=0).timing(costs.decode_cost(len(PROMPT) + 20), "fp16").latency_s * 1e3
    decode_ms = [t.step_ms for t in client.answers[keys[0]].tokens[1:]]
    assert 0.7 * expected_ms < statistics.median(decode_ms) < 1.3 * expected_ms, (decode_ms, expected_ms)

    first = client.reports[:2]
    assert {(r.phase, r.new_tokens, r.context_tokens) for r in first} == {("prefill", 32, 0), ("decode", 1, 32)}
    moved = [r for r in client.reports if r.operating_point.name == target.name]
    # After the requests: a prefill of their prompt and a decode step at the last context they reached.
    assert {(r.phase, r.new_tokens, r.context_tokens) for r in moved[:2]} == \
        {("prefill", 32, 0), ("decode", 1, 32 + 46)}
    for r in client.reports:
        assert r.simulated and r.backend == "virtual" and r.device == DEVICE and r.layers
        assert r.total_measured_time_s > 0 and not r.warnings, r.warnings
    assert first[0].operating_point.name == "MAXN"
    assert moved[0].operating_point.gpu_max_freq_hz == target.gpu_max_freq_hz
