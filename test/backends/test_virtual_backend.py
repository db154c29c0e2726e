"""Virtual backend: times come from the board's physics, outputs from ONNX Runtime or marked
not computed, one layer per ONNX node so the join to the cost model is exact."""

from __future__ import annotations

import importlib.util
from dataclasses import dataclass

import numpy as np
import onnxruntime as ort
import pytest

from edge_roofline.backends import create_backend
from edge_roofline.backends.base import TensorNameError
from edge_roofline.backends.virtual_backend import VirtualBackend
from edge_roofline.inference.profile_join import node_times_s
from edge_roofline.roofline.ceilings import spec_ceilings


@dataclass
class _Result:
    latency_s: float
    energy_j: float
    per_layer_time_s: dict


class _ScriptedBoard:
    """Each node takes 1 us per position in the graph; latency adds 10 us of overhead."""

    def __init__(self):
        self.calls = []

    def run_inference(self, model_cost, precision, batch):
        self.calls.append((precision, batch))
        per_layer = {l.name: 1e-6 * (i + 1) for i, l in enumerate(model_cost.layers)}
        return _Result(sum(per_layer.values()) + 10e-6, 0.01, per_layer)


class _Platform:
    def __init__(self, board):
        self.board = board


def test_times_come_from_the_board_and_outputs_from_onnxruntime(tiny_cnn):
    board = _ScriptedBoard()
    with create_backend("virtual", platform=_Platform(board)) as backend:
        assert backend.kind == "virtual" and backend.board is board
        backend.load(tiny_cnn)
        feeds = backend.dummy_feeds(seed=1)
        result = backend.run(feeds)
        n = len(backend.cost.layers)
        assert result.computed
        assert result.latency_s == pytest.approx(1e-6 * n * (n + 1) / 2 + 10e-6)
        session = ort.InferenceSession(tiny_cnn.SerializeToString(), providers=["CPUExecutionProvider"])
        expected = session.run(None, feeds)
        for got, want in zip(result.outputs.values(), expected):
            np.testing.assert_allclose(got, want, rtol=1e-5, atol=1e-6)
        assert board.calls == [("fp16", 1)]


def test_without_computing_outputs_they_are_marked_placeholders(tiny_cnn):
    with VirtualBackend(board=_ScriptedBoard(), compute_outputs=False) as backend:
        backend.load(tiny_cnn)
        result = backend.run(backend.dummy_feeds())
        assert not result.computed
        assert [v.shape for v in result.outputs.values()] == [
            t.concrete_shape() for t in backend.outputs()]
        with pytest.raises(TensorNameError):
            backend.run({"nope": np.zeros(1, np.float32)})


def test_profile_covers_every_node_once_and_joins_exactly(resnet18_small):
    with VirtualBackend(board=_ScriptedBoard(), compute_outputs=False) as backend:
        backend.load(resnet18_small)
        profile = backend.profile(backend.dummy_feeds(), runs=3)
        names = [l.name for l in backend.cost.layers]
        assert set(profile.node_to_layer()) == set(names)
        assert profile.runs == 3 and profile.backend == "virtual"
        times = node_times_s(backend.cost, profile, spec_ceilings("agx_orin_64gb", "fp16"))
        assert times == pytest.approx({n: 1e-6 * (i + 1) for i, n in enumerate(names)})
        assert profile.total_time_s == pytest.approx(profile.layer_time_sum_s + 10e-6)


@pytest.mark.skipif(importlib.util.find_spec("edge_roofline.virtual.board") is None,
                    reason="the virtual board (edge_roofline/virtual/board.py) is not available yet")
def test_default_board_runs_the_physics(tiny_cnn):
    with VirtualBackend(compute_outputs=False) as backend:
        backend.load(tiny_cnn)
        profile = backend.profile(backend.dummy_feeds())
        assert profile.total_time_s > 0 and profile.layer_time_sum_s > 0


def test_a_decoder_step_is_timed_at_its_phase_and_context():
    """A language model on the virtual board: each step costs what DecoderCostModel says for its
    new tokens and context, so a decode step slows as the KV cache grows and a prefill of many
    tokens takes longer than one decode step; the tokens are ONNX Runtime's."""
    from edge_roofline.inference.generation import Generator
    from edge_roofline.models import zoo
    from edge_roofline.virtual.board import VirtualBoard

    model = zoo.build("tiny_decoder", hidden=256, heads=4, layers=2, vocab=512, max_positions=8192)
    backend = VirtualBackend(board=VirtualBoard("agx_orin_64gb", mode_id=0), precision="fp16")
    generator = Generator(model, backend=backend)

    def step_s(new_tokens: int, context: int) -> float:
        return backend.run(generator.step_feeds(new_tokens, context)).latency_s

    assert generator.simulated
    short, long = np.median([step_s(1, 16) for _ in range(5)]), np.median([step_s(1, 6000) for _ in range(5)])
    assert long > 1.2 * short, (short, long)  # the KV cache read grows with the context
    assert np.median([step_s(512, 0) for _ in range(5)]) > 1.2 * short  # (medians: 2 % jitter per run)
    out = generator.generate([1, 2, 3], 4)
    assert out.stats.tpot_s == tuple(e.step_s for e in out.events[1:]) and out.stats.total_s == \
        pytest.approx(out.events[-1].since_start_s)
    assert list(out.tokens) == list(Generator(model).generate([1, 2, 3], 4).tokens)  # the same tokens as ORT
    profile = backend.profile(generator.step_feeds(1, 6000))
    assert set(profile.layer_times_s) == {l.name for l in backend.decoder.decode_cost(6000).layers}
