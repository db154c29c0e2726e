"""Real rclpy: latency_probe in generation mode measures a language-model node that is not ours
(a plain rclpy stand-in: 40 ms to the first token, then a token every 10 ms, every 4th request
never answered) from its request and token topics alone, paired by the request's header.stamp:
one InferenceStats per token (prefill, then decode at a growing context) and one GenerationStats
per request (TTFT, TPOT, tokens/s; dropped requests counted). A token type with nothing but a
header works too: its requests end when their tokens stop."""

import math
import statistics
import subprocess
import sys
from pathlib import Path

from edge_roofline.msg import GenerationStats, InferenceStats
from edge_roofline.ros import topics
from edge_roofline.ros.stamps import stamp_ns
from test.nodes.llm_client import check_counters
from test.nodes.rosutil import REPO, log_text, start_node, stop_node, watcher

TTFT_S, GAP_S, TOKENS, PROMPT = 0.04, 0.01, 6, [3, 1, 4, 1, 5]


def test_probe_measures_a_third_party_language_model(ros_env, tmp_path):
    steps = {"/probe": [], "/bare": []}
    requests = {"/probe": [], "/bare": []}
    logs = {ns: tmp_path / f"{ns[1:]}.log" for ns in steps}
    with watcher(ros_env) as (node, spin_until):
        for ns in steps:
            node.create_subscription(InferenceStats, f"{ns}/{topics.INFERENCE_STATS}", steps[ns].append, 500)
            node.create_subscription(GenerationStats, f"{ns}/{topics.GENERATION_STATS}", requests[ns].append, 50)
        from edge_roofline.msg import GenerationRequest
        pub = node.create_publisher(GenerationRequest, "/vendor/request", 10)
        sent = []

        def send():
            msg = GenerationRequest(prompt_token_ids=PROMPT, max_new_tokens=TOKENS)
            msg.header.stamp = node.get_clock().now().to_msg()
            sent.append(stamp_ns(msg.header.stamp))
            pub.publish(msg)

        common = {"input_topic": "/vendor/request", "mode": "generation", "timeout_s": 1.0, "idle_s": 0.5,
                  "model_id": "vendor_llm"}
        procs = [
            subprocess.Popen([sys.executable, str(Path(__file__).with_name("third_party_llm.py")), "/vendor/request",
                              "/vendor/tokens", "/vendor/token_text", str(TTFT_S), str(GAP_S), "4"],
                             env=ros_env, cwd=REPO),
            start_node("latency_probe", ros_env, {**common, "output_topic": "/vendor/tokens"}, logs["/probe"],
                       namespace="/probe"),
            start_node("latency_probe", ros_env, {**common, "output_topic": "/vendor/token_text"}, logs["/bare"],
                       namespace="/bare"),
        ]
        try:
            assert spin_until(lambda: node.count_subscribers("/vendor/request") >= 3, timeout_s=60, procs=procs)
            spin_until(lambda: False, timeout_s=3.0)  # the probes resolve the token topics' types from the graph
            node.create_timer(0.25, send)
            ok = spin_until(lambda: all(len(r) >= 12 for r in requests.values()), timeout_s=90, procs=procs)
            assert ok, {ns: len(r) for ns, r in requests.items()} | {ns: log_text(p) for ns, p in logs.items()}
        finally:
            for p in procs:
                stop_node(p)

    for ns in steps:
        done = [r for r in requests[ns] if r.outcome == "completed"]
        dropped = [r for r in requests[ns] if r.outcome == "dropped"]
        assert len(dropped) >= 2 and all(r.output_tokens == 0 and math.isnan(r.ttft_ms) for r in dropped)
        assert any("no token within 1.0 s" in r.last_error for r in requests[ns])
        assert 0.15 <= len(dropped) / len(requests[ns]) <= 0.4, [r.outcome for r in requests[ns]]
        for r in requests[ns]:
            check_counters(r)
            assert r.model_id == "vendor_llm" and r.backend == "external:/vendor/" + ("tokens" if ns == "/probe"
                                                                                       else "token_text")
        assert all(r.output_tokens == TOKENS and r.prompt_tokens == len(PROMPT) for r in done)
        assert {r.stop_reason for r in done} == {"length" if ns == "/probe" else "idle"}
        ttft_ms = statistics.median(r.ttft_ms for r in done)
        tpot_ms = statistics.median(r.tpot_p50_ms for r in done)
        # The stand-in's times plus loopback transport and the probe's own callbacks (the request may
        # reach the stand-in a little before the probe).
        assert 0.9 * TTFT_S * 1e3 <= ttft_ms <= TTFT_S * 1e3 + 30, ttft_ms
        assert 0.5 * GAP_S * 1e3 <= tpot_ms <= GAP_S * 1e3 + 15, tpot_ms
        # No power monitor runs here: NaN with the reason, never 0 J.
        assert all(math.isnan(r.energy_j) and "no power telemetry" in r.energy_note for r in done)
        per_request = {}
        for s in steps[ns]:
            per_request.setdefault(stamp_ns(s.header.stamp), []).append(s)
        assert set(per_request) <= set(sent)
        full = [v for v in per_request.values() if len(v) == TOKENS]
        assert len(full) >= len(done) - 1
        for v in full:
            assert [(s.phase, s.context_tokens, s.new_tokens) for s in v] == \
                [("prefill", 0, len(PROMPT))] + [("decode", len(PROMPT) + i, 1) for i in range(TOKENS - 1)]
            assert v[0].latency_ms == v[0].end_to_end_ms >= 0.9 * TTFT_S * 1e3
