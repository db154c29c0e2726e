"""Token generation with a KV cache in ONNX Runtime: the tokens a loop without a cache gives,
per-token timings and statistics, stopping, errors, and the measured phases on a roofline."""

from __future__ import annotations

import numpy as np
import onnxruntime as ort
import pytest
from onnx import TensorProto, helper, numpy_helper

from edge_roofline.backends import create_backend
from edge_roofline.clock import SimClock
from edge_roofline.inference.generation import GenerationError, Generator, phase_bounds
from edge_roofline.models import zoo
from edge_roofline.roofline.ceilings import preset_ceilings
from edge_roofline.roofline.decoder import DecoderCostModel

VOCAB, PROMPT = 100, [5, 17, 99, 3, 42, 7, 8, 9]


@pytest.fixture(scope="module")
def model():
    return zoo.build("tiny_decoder", hidden=64, heads=4, layers=2, vocab=VOCAB)


@pytest.fixture(scope="module")
def generator(model):
    return Generator(model)


def _without_cache(model, prompt, n):
    """Greedy tokens from re-running the whole sequence with an empty cache every step."""
    session = ort.InferenceSession(model.SerializeToString(), providers=["CPUExecutionProvider"])
    empty = {i.name: np.zeros((1, 4, 0, 16), np.float32) for i in session.get_inputs()
             if i.name.startswith("past")}
    tokens = list(prompt)
    for _ in range(n):
        ids = np.asarray([tokens], np.int64)
        logits = session.run(None, {"input_ids": ids, "position_ids": np.arange(len(tokens))[None],
                                    **empty})[0]
        tokens.append(int(np.argmax(logits[0, -1])))
    return tokens[len(prompt):]


def test_greedy_tokens_equal_a_loop_without_the_cache(model, generator):
    out = generator.generate(PROMPT, 12)
    assert list(out.tokens) == _without_cache(model, PROMPT, 12)
    assert len(set(out.tokens)) > 1  # not one token repeated: the model is not degenerate


def test_events_name_phase_and_context_and_stats_add_up(generator):
    out = generator.generate(PROMPT, 6)
    events = out.events
    assert [e.phase for e in events] == ["prefill"] + ["decode"] * 5
    assert [e.new_tokens for e in events] == [8, 1, 1, 1, 1, 1]
    assert [e.context for e in events] == [0, 8, 9, 10, 11, 12]
    s = out.stats
    assert (s.prompt_tokens, s.output_tokens, s.stop_reason) == (8, 6, "length")
    assert s.ttft_s == events[0].since_start_s > 0 and s.tpot_s == tuple(e.step_s for e in events[1:])
    assert s.tpot_p50_s <= s.tpot_p95_s <= max(s.tpot_s)
    assert s.decode_tokens_per_s == pytest.approx(5 / sum(s.tpot_s))
    assert s.total_s >= events[-1].since_start_s and s.tokens_per_s == pytest.approx(6 / s.total_s)
    assert s.energy_per_token_j is None and s.with_energy(0.3).energy_per_token_j == pytest.approx(0.05)


class _TimedBackend:
    """ONNX Runtime computing, a simulated clock timing: the prefill takes 10 ms, a decode step
    2 ms (what a board's physics would say; here fixed so the statistics are exact)."""

    def __init__(self, clock: SimClock):
        self.inner, self.clock = create_backend("ort", providers=["CPUExecutionProvider"]), clock

    def __getattr__(self, name):
        return getattr(self.inner, name)

    def run(self, feeds):
        result = self.inner.run(feeds)
        self.clock.advance(0.010 if feeds["input_ids"].shape[1] > 1 else 0.002)
        return result


def test_ttft_tpot_and_tokens_per_s_on_a_simulated_clock(model):
    clock = SimClock()
    stats = Generator(model, backend=_TimedBackend(clock), clock=clock).generate(PROMPT, 11).stats
    assert stats.ttft_s == pytest.approx(0.010)
    assert stats.tpot_s == pytest.approx((0.002,) * 10)
    assert stats.tpot_p50_s == pytest.approx(0.002) and stats.tpot_p95_s == pytest.approx(0.002)
    assert stats.decode_tokens_per_s == pytest.approx(500)
    assert stats.total_s == pytest.approx(0.030) and stats.tokens_per_s == pytest.approx(11 / 0.030)
    assert stats.started_s == 0 and stats.finished_s == pytest.approx(0.030)


def test_streaming_stops_at_eos_at_the_context_limit_or_when_the_caller_stops(model, generator):
    greedy = generator.generate(PROMPT, 5).tokens
    out = generator.generate(PROMPT, 5, eos_token_id=greedy[2])
    assert out.tokens == greedy[:greedy.index(greedy[2]) + 1] and out.stats.stop_reason == "eos"
    limited = Generator(model, max_context=len(PROMPT) + 4).generate(PROMPT, 50)
    assert limited.stats.output_tokens == 5 and limited.stats.stop_reason == "context"
    stream = generator.stream(PROMPT, 50)
    first_two = [next(stream).token_id, next(stream).token_id]
    stream.close()  # a caller that stops listening stops the generation
    assert first_two == list(greedy[:2])


def test_sampling_is_seeded(generator):
    a = generator.generate(PROMPT, 8, temperature=1.0, seed=3).tokens
    assert a == generator.generate(PROMPT, 8, temperature=1.0, seed=3).tokens
    others = {generator.generate(PROMPT, 8, temperature=1.0, seed=s).tokens for s in range(4, 8)}
    assert others - {a}


def _mask_model():
    """Next token = the attention mask's length mod VOCAB; the cache holds the token ids, so a
    wrong mask or a cache that is not carried shows in the tokens."""
    i64, f = TensorProto.INT64, TensorProto.FLOAT
    nodes = [helper.make_node("ReduceSum", ["attention_mask"], ["total"], name="total", keepdims=0),
             helper.make_node("Mod", ["total", "vocab"], ["next"], name="next"),
             helper.make_node("Gather", ["eye", "next"], ["row"], name="row"),
             helper.make_node("Reshape", ["row", "logit_shape"], ["logits"], name="logits"),
             helper.make_node("Unsqueeze", ["input_ids", "axes"], ["ids4"], name="ids4"),
             helper.make_node("Cast", ["ids4"], ["k"], name="k", to=f),
             helper.make_node("Concat", ["past_key_values.0.key", "k"], ["present.0.key"], name="cat", axis=2)]
    graph = helper.make_graph(
        nodes, "mask_model",
        [helper.make_tensor_value_info("input_ids", i64, [1, "sequence"]),
         helper.make_tensor_value_info("attention_mask", i64, [1, "past_sequence + sequence"]),
         helper.make_tensor_value_info("past_key_values.0.key", f, [1, 1, "past_sequence", 1])],
        [helper.make_tensor_value_info("logits", f, None), helper.make_tensor_value_info("present.0.key", f, None)],
        [numpy_helper.from_array(np.eye(VOCAB, dtype=np.float32), "eye"),
         numpy_helper.from_array(np.array(VOCAB, np.int64), "vocab"),
         numpy_helper.from_array(np.array([1, 1, VOCAB], np.int64), "logit_shape"),
         numpy_helper.from_array(np.array([1, 3], np.int64), "axes")])
    return helper.make_model(graph, opset_imports=[helper.make_opsetid("", 17)])


def test_an_attention_mask_covers_cache_and_new_tokens():
    out = Generator(_mask_model()).generate([1, 2, 3], 4)
    assert out.tokens == (3, 4, 5, 6)


def test_what_cannot_generate_says_why(generator):
    with pytest.raises(GenerationError, match="not a decoder with KV-cache inputs"):
        Generator(zoo.build("tiny_cnn"))
    with pytest.raises(GenerationError, match="prompt is empty"):
        generator.generate([], 3)
    with pytest.raises(GenerationError, match="max_new_tokens must be >= 1"):
        generator.generate([1], 0)
    with pytest.raises(GenerationError, match=r"step 0 \(context 0, 1 new tokens\) failed"):
        generator.generate([VOCAB + 5], 2)  # a token id past the vocabulary


def test_measured_phases_on_a_roofline(model, generator):
    out = generator.generate(PROMPT, 9)
    costs = DecoderCostModel(model, precision="fp32")
    prefill, decode = phase_bounds(out, costs, preset_ceilings("agx_orin_64gb", "MAXN", "fp32"))
    assert (prefill.phase, prefill.new_tokens, prefill.context) == ("prefill", 8, 0)
    assert prefill.measured_time_s == out.events[0].step_s
    assert (decode.phase, decode.context) == ("decode", 12)  # mean of contexts 8 .. 15, rounded
    assert decode.measured_time_s == pytest.approx(sum(out.stats.tpot_s) / 8)
    assert decode.bound == "memory" and decode.time_per_token_s == decode.measured_time_s
    # A decode step's cost is linear in the context: the mean step is the average step.
    mean_flops = np.mean([costs.step(1, c).flops for c in range(8, 16)])
    assert costs.step(1, 12).flops == pytest.approx(mean_flops, rel=0.01)
