"""The generation server without ROS: requests in, one token per step out, every request in one
counter (completed, dropped, rejected, failed), the caller told why; the byte tokenizer; a model
switch between requests; a worker death failing the request in hand; reports of both phases at the
start, at the last request's prompt and context, and when the operating point moves."""

from __future__ import annotations

import time

import pytest

from edge_roofline.backends import create_backend
from edge_roofline.inference.ceilings import device_ceilings
from edge_roofline.inference.generation_requests import GenerationConfig, Request, RequestEnd, TokenOut
from edge_roofline.inference.generation_serving import GenerationServer, PhaseReport
from edge_roofline.inference.schedule import POINT_CHANGE
from edge_roofline.inference.tokenizer import Tokenizer
from edge_roofline.models import zoo
from edge_roofline.models.source import ModelFileError

ROOFS = device_ceilings("agx_orin_64gb", "fp32", "cpu", None)


def request(request_id: str, **fields) -> Request:
    return Request(arrival_s=time.monotonic(), arrival_wall_s=time.time(), request_id=request_id, **fields)


def drain(server: GenerationServer, calls: int = 200) -> list:
    out = []
    for _ in range(calls):
        out += server.process_next(timeout_s=0.0)
    return out


@pytest.fixture
def server():
    s = GenerationServer(GenerationConfig(max_new_tokens=5, queue_depth=2, profile_every_requests=0,
                                          profile_every_s=0.0, report_prompt_tokens=8), ROOFS)
    yield s
    s.close()


def test_tokens_stream_and_requests_end_in_one_counter(server):
    reports = server.process_next()  # both phases at start, before any request
    assert [(r.phase.phase, r.phase.new_tokens, r.phase.context, r.reason) for r in reports] == \
        [("prefill", 8, 0, "start"), ("decode", 1, 8, "start")]
    assert server.submit(request("a", prompt="héllo")) == []
    out = drain(server, 3)
    tokens = [o for o in out if isinstance(o, TokenOut)]
    assert [(t.event.index, t.event.phase, t.event.context) for t in tokens] == \
        [(0, "prefill", 0), (1, "decode", 6), (2, "decode", 7)]  # 'héllo' is 6 UTF-8 bytes
    assert not any(t.done for t in tokens)
    out = drain(server)
    end = next(o for o in out if isinstance(o, RequestEnd))
    last = [o for o in out if isinstance(o, TokenOut)][-1]
    assert last.done and last.stop_reason == "length" and last.event.index == 4
    assert (end.outcome, end.stop_reason, end.stats.output_tokens, end.stats.prompt_tokens) == ("completed", "length",
                                                                                                5, 6)
    assert end.stats.ttft_s == pytest.approx(tokens[0].since_request_s)
    assert end.span_wall_s[0] < end.span_wall_s[1] and end.energy is None  # energy: the node's to find
    # Three at once into a queue of two: the oldest is dropped and told why.
    dropped = [e for r in ("b", "c", "d") for e in server.submit(request(r, prompt_token_ids=[1, 2]))]
    assert [(e.request.request_id, e.outcome) for e in dropped] == [("b", "dropped")]
    assert "queue_depth" in dropped[0].error and dropped[0].stats is None
    assert [e.request.request_id for e in drain(server) if isinstance(e, RequestEnd)] == ["c", "d"]
    for bad, why in ((request("e"), "empty"), (request("f", prompt="x", prompt_token_ids=[1]), "not both"),
                     (request("g", prompt_token_ids=[600]), "outside the model's vocabulary (0-511)"),
                     (request("h", prompt_token_ids=[1], max_new_tokens=5000), "max_new_tokens_limit"),
                     (request("i", prompt_token_ids=[1] * 2000), "max_prompt_tokens"),
                     (request("j", prompt_token_ids=[1], stop_token_id=-7), "stop_token_id")):
        server.submit(bad)
        ends = [o for o in drain(server) if isinstance(o, RequestEnd)]
        assert ends[-1].request is bad and ends[-1].outcome == "rejected" and why in ends[-1].error, ends[-1].error
    c = server.counters
    assert (c.received, c.completed, c.dropped, c.rejected, c.failed, c.in_flight) == (10, 3, 1, 6, 0, 0)
    assert c.tokens == 15 and "stop_token_id" in c.last_error


def test_a_stop_token_ends_the_request_with_eos(server):
    server.submit(request("a", prompt_token_ids=[5, 6, 7], max_new_tokens=5))
    first = [o for o in drain(server) if isinstance(o, TokenOut)]
    stop = first[1].event.token_id
    server.submit(request("b", prompt_token_ids=[5, 6, 7], max_new_tokens=5, stop_token_id=stop))
    out = drain(server)
    tokens = [o for o in out if isinstance(o, TokenOut)]
    assert len(tokens) == 2 and tokens[-1].done and tokens[-1].stop_reason == "eos"
    assert next(o for o in out if isinstance(o, RequestEnd)).stop_reason == "eos"


class _FailingBackend:
    """ONNX Runtime that raises (an ORT-style error, not ours) from its ``fail_at``-th run on."""

    def __init__(self, fail_at: int):
        self.inner, self.runs, self.fail_at = create_backend("ort"), 0, fail_at

    def __getattr__(self, name):
        return getattr(self.inner, name)

    def run(self, feeds):
        self.runs += 1
        if self.runs >= self.fail_at:
            raise RuntimeError("[ONNXRuntimeError] : 6 : RUNTIME_EXCEPTION : bad allocation")
        return self.inner.run(feeds)


def test_a_backend_failure_fails_the_request_and_serving_goes_on():
    server = GenerationServer(GenerationConfig(max_new_tokens=4, profile_every_requests=0, profile_every_s=0.0),
                              ROOFS, backend_factory=lambda kind, **_: _FailingBackend(fail_at=3))
    server.schedule.done(0.0, 0.0, 0.0)  # no start report here
    server.submit(request("a", prompt_token_ids=[1, 2, 3]))
    out = drain(server)
    end = next(o for o in out if isinstance(o, RequestEnd))
    assert end.outcome == "failed" and end.stats.output_tokens == 2 and "bad allocation" in end.error
    assert server.counters.failed == 1 and server.counters.errors == 1
    server.submit(request("b", prompt_token_ids=[1]))
    assert next(o for o in drain(server) if isinstance(o, RequestEnd)).outcome == "failed"
    assert server.counters.in_flight == 0 and server.counters.received == 2
    server.close()


def test_a_worker_death_fails_the_request_in_hand(server):
    server.submit(request("a", prompt_token_ids=[1, 2]))
    server.process_next()  # the start reports
    assert isinstance(server.process_next()[0], TokenOut)
    (end,) = server.worker_died("generation-worker died (KeyError: 'x' at a.py:1 in f)")
    assert end.outcome == "failed" and "worker died" in end.error and end.stats.output_tokens == 1
    c = server.counters
    assert (c.failed, c.worker_restarts, c.errors, c.in_flight) == (1, 1, 1, 0)


def test_a_switch_waits_for_the_request_in_hand(server, tmp_path):
    other = tmp_path / "other.onnx"
    zoo.save("tiny_decoder", str(other), hidden=64, layers=1, vocab=300)
    server.submit(request("a", prompt_token_ids=[1, 2]))
    server.process_next()
    server.process_next()  # the prefill of "a"
    prepared = server.prepare(GenerationConfig(model=str(other), max_new_tokens=3, profile_every_s=0.0))
    assert not server.hand_over(prepared)
    server.submit(request("b", prompt_token_ids=[1, 2]))
    out = drain(server)
    ends = [o for o in out if isinstance(o, RequestEnd)]
    assert [(e.request.request_id, e.served.model_id, e.stats.output_tokens) for e in ends] == \
        [("a", "zoo:tiny_decoder", 5), ("b", str(other), 3)]
    reports = [o for o in out if isinstance(o, PhaseReport)]
    assert reports and {r.reason for r in reports} == {"model switch"} and reports[0].served.model_id == str(other)
    with pytest.raises(ModelFileError, match="cannot read model"):
        server.prepare(GenerationConfig(model=str(tmp_path / "missing.onnx")))
    with pytest.raises(ValueError, match="backend must be ort or virtual"):
        server.prepare(GenerationConfig(backend="tensorrt"))


def test_reports_follow_the_last_request_and_the_operating_point():
    board = {"point": "MAXN"}
    # The whole budget: a point change is reported as soon as it is seen (else within 2 % of the time).
    server = GenerationServer(GenerationConfig(max_new_tokens=5, profile_every_requests=0, profile_every_s=0.0,
                                               profile_budget_fraction=1.0), ROOFS,
                              point_source=lambda: board["point"], point_poll_s=0.0)
    first = server.process_next()
    assert {r.point for r in first} == {"MAXN"}
    server.submit(request("a", prompt_token_ids=list(range(20)), max_new_tokens=4))
    drain(server)
    assert server.report_shape == (20, 22)  # decode steps ran at contexts 20, 21, 22
    assert drain(server, 3) == []  # the board has not moved: nothing is due
    board["point"] = "MODE_30W"
    reports = []
    for _ in range(100):
        reports += server.process_next(timeout_s=0.02)
    assert [(r.phase.phase, r.phase.new_tokens, r.phase.context, r.reason, r.point) for r in reports] == \
        [("prefill", 20, 0, POINT_CHANGE, "MODE_30W"), ("decode", 1, 22, POINT_CHANGE, "MODE_30W")]
    decode = reports[1]
    assert decode.phase.bound == "memory" and decode.analysis.measured_time_s > 0
    server.close()


def test_the_byte_tokenizer_streams_whole_characters():
    tokenizer = Tokenizer("bytes")
    ids = tokenizer.encode("dock é→")
    assert ids == list("dock é→".encode())
    stream = tokenizer.stream()
    assert "".join(stream.piece(i) for i in ids) == "dock é→"
    assert [stream.piece(i) for i in "é".encode()] == ["", "é"]  # whole characters only
    assert stream.piece(300) == "" and stream.piece(0xE2) == "" and stream.flush() == "\ufffd"
    assert "vocabulary of at least 256" in tokenizer.check_vocabulary(100)
    with pytest.raises(ValueError, match="send prompt_token_ids"):
        Tokenizer("none").encode("hi")
