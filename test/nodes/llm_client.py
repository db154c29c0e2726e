"""What the language-model node tests share: a client that sends GenerationRequests and collects
what comes back per request (tokens, per-step InferenceStats, the request's GenerationStats),
keyed by the request's header.stamp, as a robot's planner would pair them."""

from __future__ import annotations

import time
from dataclasses import dataclass, field

from edge_roofline.msg import GeneratedToken, GenerationRequest, GenerationStats, InferenceStats, RooflineReport
from edge_roofline.ros import topics
from edge_roofline.ros.stamps import stamp_ns


@dataclass
class Answer:
    sent_s: float
    tokens: list = field(default_factory=list)
    steps: list = field(default_factory=list)
    stats: list = field(default_factory=list)
    token_times_s: list = field(default_factory=list)

    @property
    def done(self) -> bool:
        return bool(self.tokens) and self.tokens[-1].done


class LlmClient:
    def __init__(self, node, namespace: str = "") -> None:
        ns = namespace.rstrip("/")
        self.node = node
        self.answers: dict[int, Answer] = {}
        self.strays: list = []  # messages whose stamp no request of ours had
        self.reports: list[RooflineReport] = []
        self.publisher = node.create_publisher(GenerationRequest, self._topic(ns, topics.GENERATION_REQUEST), 50)
        sub = node.create_subscription
        sub(GeneratedToken, self._topic(ns, topics.GENERATION_TOKENS), self._on("tokens"), 500)
        sub(InferenceStats, self._topic(ns, topics.INFERENCE_STATS), self._on("steps"), 500)
        sub(GenerationStats, self._topic(ns, topics.GENERATION_STATS), self._on("stats"), 100)
        sub(RooflineReport, self._topic(ns, topics.ROOFLINE_REPORT), self.reports.append, 20)

    @staticmethod
    def _topic(ns: str, topic: str) -> str:
        return f"{ns}/{topic}" if ns else topic

    def _on(self, kind: str):
        def store(msg) -> None:
            answer = self.answers.get(stamp_ns(msg.header.stamp))
            if answer is None:
                self.strays.append(msg)
                return
            getattr(answer, kind).append(msg)
            if kind == "tokens":
                answer.token_times_s.append(time.monotonic())
        return store

    def send(self, request_id: str = "", prompt: str = "", ids=(), max_new_tokens: int = 0,
             stop_token_id: int = -1) -> int:
        msg = GenerationRequest(request_id=request_id, prompt=prompt, prompt_token_ids=list(ids),
                                max_new_tokens=max_new_tokens, stop_token_id=stop_token_id)
        msg.header.stamp = self.node.get_clock().now().to_msg()
        key = stamp_ns(msg.header.stamp)
        self.answers[key] = Answer(time.monotonic())
        self.publisher.publish(msg)
        return key

    def finished(self, keys) -> bool:
        return all(self.answers[k].done and self.answers[k].stats for k in keys)


def check_counters(stats: GenerationStats) -> None:
    """Every request lands in one counter."""
    settled = (stats.requests_completed + stats.requests_dropped + stats.requests_rejected + stats.requests_failed
               + stats.requests_in_flight)
    assert stats.requests_received == settled, stats


def check_stream(answer: Answer, max_new_tokens: int, prompt_tokens: int) -> None:
    """A completed request: tokens 0..n-1, a prefill then decode steps at a growing context, the
    last one done; one InferenceStats per step naming the same phase and context."""
    tokens = answer.tokens
    assert len(tokens) == max_new_tokens, (tokens, answer.stats)
    assert [t.index for t in tokens] == list(range(max_new_tokens))
    assert [t.phase for t in tokens] == ["prefill"] + ["decode"] * (max_new_tokens - 1)
    assert [t.context_tokens for t in tokens] == [0] + list(range(prompt_tokens, prompt_tokens + max_new_tokens - 1))
    assert [t.done for t in tokens] == [False] * (max_new_tokens - 1) + [True]
    assert tokens[-1].stop_reason == "length" and all(t.token_id >= 0 for t in tokens)
    steps = answer.steps
    assert [(s.phase, s.context_tokens, s.new_tokens) for s in steps] == \
        [(t.phase, t.context_tokens, prompt_tokens if t.phase == "prefill" else 1) for t in tokens]
    assert all(s.latency_ms > 0 for s in steps)
    assert [s.latency_ms for s in steps] == [t.step_ms for t in tokens]
    stats = answer.stats[0]
    assert (stats.outcome, stats.stop_reason, stats.prompt_tokens, stats.output_tokens) == \
        ("completed", "length", prompt_tokens, max_new_tokens)
    # TTFT is the prefill's end to end: the first step's InferenceStats says the same
    assert abs(steps[0].end_to_end_ms - stats.ttft_ms) < 1e-6 and stats.ttft_ms >= stats.prefill_ms > 0
    assert 0 < stats.tpot_p50_ms <= stats.tpot_p95_ms
    assert stats.tokens_per_s > 0 and stats.total_ms >= stats.ttft_ms
