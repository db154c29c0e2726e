"""Real rclpy: the generation node on this machine's CPU (ONNX Runtime, zoo:tiny_decoder with a KV
cache). Prompts in as text and as token ids, tokens streamed out with the request's stamp, one
InferenceStats per step (phase, context), one GenerationStats per request, bad prompts refused with
the reason, a full queue dropping the oldest and saying so, every request in one counter, and
roofline reports of both phases, at start and at the last request's prompt length and context."""

import math

from edge_roofline.msg import RooflineReport
from test.nodes.llm_client import LlmClient, check_counters, check_stream
from test.nodes.rosutil import log_text, start_node, stop_node, watcher

PARAMS = {"model": "zoo:tiny_decoder", "max_new_tokens": 6, "queue_depth": 5, "report_prompt_tokens": 16,
          "profile_every_requests": 1, "profile_every_s": 0.0, "profile_budget_fraction": 0.5,
          "publish_chart": False, "energy_wait_s": 0.3}


def test_prompts_in_tokens_out_with_per_step_and_per_request_stats(ros_env, tmp_path):
    log = tmp_path / "generation.log"
    proc = start_node("generation", ros_env, PARAMS, log)
    with watcher(ros_env) as (node, spin_until):
        client = LlmClient(node)
        try:
            # The node reports both phases at start, before any prompt.
            assert spin_until(lambda: len(client.reports) >= 2, timeout_s=90, procs=[proc]), log_text(log)
            start_reports = list(client.reports)
            text = client.send("text", prompt="go to the dock")
            ids = client.send("ids", ids=[1, 2, 3, 4, 5, 6, 7, 8, 9, 10], max_new_tokens=9)
            empty = client.send("empty")
            outside = client.send("outside", ids=[3, 512])
            both = client.send("both", prompt="a", ids=[1])
            assert spin_until(lambda: client.finished([text, ids, empty, outside, both]), timeout_s=60,
                              procs=[proc]), log_text(log)
            assert spin_until(lambda: any(r.context_tokens == 17 for r in client.reports), timeout_s=30,
                              procs=[proc]), [(r.phase, r.new_tokens, r.context_tokens) for r in client.reports]
            # A burst beyond the queue: the oldest waiting are dropped, and told so.
            burst = [client.send(f"burst{i}", ids=[7] * 4, max_new_tokens=40) for i in range(10)]
            assert spin_until(lambda: client.finished(burst), timeout_s=90, procs=[proc]), log_text(log)
        finally:
            code = stop_node(proc)
    assert code == 0, log_text(log)
    assert not client.strays and "Traceback" not in log_text(log)

    check_stream(client.answers[text], 6, len("go to the dock".encode()))
    check_stream(client.answers[ids], 9, 10)
    assert client.answers[text].tokens[0].request_id == "text"
    for key, words in ((empty, "the prompt is empty"), (outside, "prompt_token_ids[1] = 512 is outside"),
                       (both, "not both")):
        answer = client.answers[key]
        assert len(answer.tokens) == 1 and not answer.steps, answer.tokens
        done = answer.tokens[0]
        assert done.done and done.token_id == -1 and done.stop_reason == "rejected" and words in done.error
        assert answer.stats[0].outcome == "rejected" and answer.stats[0].output_tokens == 0
    # No power monitor here: energy is NaN with the reason, never 0 J.
    stats = client.answers[text].stats[0]
    assert math.isnan(stats.energy_j) and math.isnan(stats.energy_per_output_token_j)
    assert "no power telemetry" in stats.energy_note, stats.energy_note

    outcomes = [client.answers[k].stats[0].outcome for k in burst]
    dropped = [k for k in burst if client.answers[k].stats[0].outcome == "dropped"]
    assert dropped and set(outcomes) == {"completed", "dropped"}, outcomes
    for key in dropped:
        done = client.answers[key].tokens[-1]
        assert done.done and done.token_id == -1 and "queue_depth" in done.error
    every = [s for a in client.answers.values() for s in a.stats]
    for s in every:
        check_counters(s)
    last = max(every, key=lambda s: (s.requests_received, s.requests_received - s.requests_in_flight))
    assert (last.requests_received, last.requests_rejected, last.requests_dropped) == (15, 3, len(dropped))
    assert last.requests_completed == 15 - 3 - len(dropped) and last.requests_in_flight == 0
    assert last.errors == 0 and last.worker_restarts == 0

    def phases(reports: list[RooflineReport]):
        return {(r.phase, r.new_tokens, r.context_tokens) for r in reports}
    assert phases(start_reports) == {("prefill", 16, 0), ("decode", 1, 16)}
    # After the 10-token prompt answered with 9 tokens, the last decode step ran at context 17.
    assert {("prefill", 10, 0), ("decode", 1, 17)} <= phases(client.reports)
    for r in client.reports:
        assert r.model_id == "zoo:tiny_decoder" and r.backend == "ort" and not r.simulated
        assert r.layers and r.total_measured_time_s > 0 and r.total_flops > 0
    prefill = next(r for r in client.reports if r.phase == "prefill" and r.new_tokens == 10)
    decode = next(r for r in client.reports if r.phase == "decode" and r.context_tokens == 17)
    # A prefill does ~new_tokens times the work of a decode step over the same weights.
    assert prefill.total_flops > 5 * decode.total_flops
