"""The zoo's decoder: one graph with a KV cache whose incremental decode reproduces the full
sequence, causally, in ONNX Runtime."""

from __future__ import annotations

import numpy as np
import onnxruntime as ort
import pytest

from edge_roofline.models import zoo

LAYERS, HEADS, HIDDEN = 2, 4, 64


@pytest.fixture(scope="module")
def session():
    model = zoo.build("tiny_decoder", hidden=HIDDEN, heads=HEADS, layers=LAYERS, vocab=100)
    return ort.InferenceSession(model.SerializeToString(), providers=["CPUExecutionProvider"])


def _run(session, ids, start, past=None):
    past = past or {f"past_key_values.{i}.{kv}": np.zeros((1, HEADS, 0, HIDDEN // HEADS), np.float32)
                    for i in range(LAYERS) for kv in ("key", "value")}
    ids = np.asarray([ids], np.int64)
    positions = np.arange(start, start + ids.shape[1], dtype=np.int64)[None]
    logits, *presents = session.run(None, {"input_ids": ids, "position_ids": positions, **past})
    return logits, dict(zip(past, presents))


def test_incremental_decode_equals_the_full_sequence(session):
    ids = [5, 17, 99, 3, 42, 7, 8, 9]
    full, cache = _run(session, ids, 0)
    assert cache["past_key_values.1.value"].shape == (1, HEADS, 8, HIDDEN // HEADS)
    logits, past = _run(session, ids[:5], 0)  # prefill 5, then decode 3 one at a time
    steps = [logits]
    for t in range(5, 8):
        logits, past = _run(session, ids[t:t + 1], t, past)
        steps.append(logits)
    np.testing.assert_allclose(np.concatenate(steps, axis=1), full, atol=1e-4)
    assert full.std() > 0.1  # not a constant output


def test_attention_is_causal(session):
    a, _ = _run(session, [1, 2, 3, 4], 0)
    b, _ = _run(session, [1, 2, 3, 50], 0)
    np.testing.assert_allclose(a[:, :3], b[:, :3], atol=1e-5)  # a later token changes no earlier logit
    assert not np.allclose(a[:, 3], b[:, 3])


def test_lengths_are_symbolic_and_names_follow_the_exporters():
    model = zoo.build("tiny_decoder")
    inputs = {i.name: [d.dim_param or d.dim_value for d in i.type.tensor_type.shape.dim]
              for i in model.graph.input}
    assert inputs["input_ids"] == [1, "sequence"]
    assert inputs["past_key_values.1.value"] == [1, 4, "past_sequence", 32]
    assert [o.name for o in model.graph.output][:2] == ["logits", "present.0.key"]
    with pytest.raises(ValueError, match="divisible"):
        zoo.build("tiny_decoder", hidden=100, heads=3)
