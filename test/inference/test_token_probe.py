"""A third-party language model's requests and tokens paired by the request's stamp: per-token
steps (prefill, then decode at the prompt's context on), a request's end by its done message or
by its tokens stopping, requests never answered dropped, stray tokens counted."""

import pytest

from edge_roofline.inference.generation_requests import Request, RequestEnd, Served, TokenOut
from edge_roofline.inference.token_probe import TokenProbe

SERVED = Served("vendor_llm", "external:/vendor/tokens", False)


def seen(probe: TokenProbe, key: int, at_s: float, prompt_tokens: int = 4):
    return probe.request_seen(key, Request(arrival_s=at_s, arrival_wall_s=1000.0 + at_s, request_id=f"r{key}"),
                              prompt_tokens)


def test_tokens_pair_with_their_request_and_a_done_message_ends_it():
    probe = TokenProbe(SERVED, timeout_s=1.0, idle_s=0.5)
    seen(probe, 1, 0.0)
    out = [probe.token_seen(1, t, 1000.0 + t, token_id=7) for t in (0.05, 0.06, 0.075)]
    out.append(probe.token_seen(1, 0.085, 1000.085, token_id=9, done=True, stop_reason="length"))
    tokens = [o for batch in out for o in batch if isinstance(o, TokenOut)]
    assert [(t.event.phase, t.event.context, t.event.new_tokens) for t in tokens] == \
        [("prefill", 0, 4), ("decode", 4, 1), ("decode", 5, 1), ("decode", 6, 1)]
    assert [t.event.step_s for t in tokens] == pytest.approx([0.05, 0.01, 0.015, 0.01])
    assert tokens[-1].done and tokens[-1].stop_reason == "length"
    end = out[-1][-1]
    assert isinstance(end, RequestEnd) and end.outcome == "completed" and end.stop_reason == "length"
    assert end.stats.ttft_s == pytest.approx(0.05) and end.stats.output_tokens == 4
    assert end.prefill_s == end.stats.ttft_s
    assert end.span_wall_s == pytest.approx((1000.0, 1000.085)) and len(probe) == 0


def test_silence_ends_or_drops_requests_and_strays_are_counted():
    probe = TokenProbe(SERVED, timeout_s=1.0, idle_s=0.5)
    seen(probe, 1, 0.0)
    seen(probe, 2, 0.0)
    seen(probe, 2, 0.1)  # the same stamp again: one request
    probe.token_seen(1, 0.1, 1000.1)
    assert probe.expire(0.5) == []
    assert probe.token_seen(3, 0.6, 1000.6) == []  # a token for no request we saw
    (idle,) = probe.expire(0.7)
    assert (idle.request.request_id, idle.outcome, idle.stop_reason) == ("r1", "completed", "idle")
    (dropped,) = probe.expire(1.2)
    assert (dropped.request.request_id, dropped.outcome, dropped.stats) == ("r2", "dropped", None)
    c = probe.counters
    assert (c.received, c.completed, c.dropped, c.errors, c.in_flight) == (2, 1, 1, 1, 0)
    seen(probe, 4, 2.0)
    (refused,) = probe.token_seen(4, 2.1, 1002.1, token_id=-1, done=True, stop_reason="rejected")
    assert refused.outcome == "rejected" and "rejected" in refused.error and probe.counters.rejected == 1
