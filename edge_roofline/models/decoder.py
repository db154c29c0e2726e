"""A small decoder-only transformer (GPT-2-shaped) with a KV cache, built in code: the zoo's
language model (``zoo:tiny_decoder``). No weights from any hub: seeded random ones.

One graph serves both phases, its lengths symbolic: inputs ``input_ids`` and ``position_ids``
``[batch, sequence]`` and per layer ``past_key_values.{i}.key`` / ``.value``
``[batch, heads, past_sequence, head_dim]``; outputs ``logits`` ``[batch, sequence, vocab]``
and ``present.{i}.key`` / ``.value`` ``[batch, heads, past_sequence + sequence, head_dim]``.
A prefill feeds the prompt with an empty cache (past length 0), a decode step one token with
the cache the previous step returned. These are the names Hugging Face exporters use, so
``roofline/decoder.py`` and ``inference/generation.py`` treat an exported model the same way.

Per layer (pre-norm): LayerNorm, one QKV projection split in three, heads, the new keys and
values appended to the cache (Concat), scores Q K^T / sqrt(d) masked causally (a key at a
position after the query's is set to -inf: ``Range`` over the cache length against
``position_ids``), Softmax, the weighted values, an output projection and a residual; then
LayerNorm, a GELU feed-forward block and a residual. A final LayerNorm and an untied LM head.
"""

from __future__ import annotations

import math

import numpy as np
from onnx import TensorProto, helper

from edge_roofline.models.builder import GraphBuilder

PAST_LENGTH, NEW_TOKENS = "past_sequence", "sequence"


def tiny_decoder(batch: int = 1, vocab: int = 512, hidden: int = 128, layers: int = 2,
                 heads: int = 4, ffn: int | None = None, max_positions: int = 4096, seed: int = 0):
    """A ``layers``-layer decoder of width ``hidden``; symbolic sequence and past lengths."""
    if hidden % heads:
        raise ValueError(f"hidden ({hidden}) must be divisible by heads ({heads})")
    b = GraphBuilder("tiny_decoder", seed)
    ffn, head_dim = ffn or 4 * hidden, hidden // heads
    ids = b.input("input_ids", [batch, NEW_TOKENS], TensorProto.INT64)
    positions = b.input("position_ids", [batch, NEW_TOKENS], TensorProto.INT64)
    split_heads = b.const("shape.split_heads", np.array([0, 0, heads, head_dim], np.int64))
    merge_heads = b.const("shape.merge_heads", np.array([0, 0, hidden], np.int64))
    qkv_sizes = b.const("shape.qkv_sizes", np.array([hidden] * 3, np.int64))
    scale = b.const("attention.scale", np.array(1 / math.sqrt(head_dim), np.float32))
    masked_score = b.const("attention.masked", np.array(-np.inf, np.float32))
    zero, one = b.const("c.zero", np.array(0, np.int64)), b.const("c.one", np.array(1, np.int64))
    # Query positions as [batch, 1, new, 1] against key positions 0 .. past + new - 1.
    query_axes = b.const("c.query_axes", np.array([1, 3], np.int64))
    query_pos = b.op("Unsqueeze", [positions, query_axes], "attention.query_positions")

    word = b.weight("embeddings.word", (vocab, hidden), hidden)
    pos = b.weight("embeddings.position", (max_positions, hidden), hidden)
    x = b.op("Add", [b.op("Gather", [word, ids], "embeddings.lookup"),
                     b.op("Gather", [pos, positions], "embeddings.position_lookup")], "embeddings.add")
    presents = []
    for i in range(layers):
        n = f"layer{i}"
        qkv = b.linear(b.layer_norm(x, hidden, f"{n}.norm1", 1e-5), hidden, 3 * hidden, f"{n}.qkv")
        parts = [f"{n}.q", f"{n}.k", f"{n}.v"]
        b.nodes.append(helper.make_node("Split", [qkv, qkv_sizes], parts, name=f"{n}.split", axis=-1))
        q, k, v = (b.op("Transpose", [b.op("Reshape", [t, split_heads], f"{t}.heads")],
                        f"{t}.transpose", perm=[0, 2, 1, 3]) for t in parts)
        past_k = b.input(f"past_key_values.{i}.key", [batch, heads, PAST_LENGTH, head_dim])
        past_v = b.input(f"past_key_values.{i}.value", [batch, heads, PAST_LENGTH, head_dim])
        k = b.op("Concat", [past_k, k], f"present.{i}.key", axis=2)
        v = b.op("Concat", [past_v, v], f"present.{i}.value", axis=2)
        presents += [k, v]
        total = b.op("Squeeze", [b.op("Shape", [k], f"{n}.kv_shape", start=2, end=3)], f"{n}.kv_length")
        key_pos = b.op("Range", [zero, total, one], f"{n}.key_positions")
        future = b.op("Greater", [key_pos, query_pos], f"{n}.future")
        kt = b.op("Transpose", [k], f"{n}.k_t", perm=[0, 1, 3, 2])
        scores = b.op("Mul", [b.op("MatMul", [q, kt], f"{n}.scores"), scale], f"{n}.scores.scale")
        scores = b.op("Where", [future, masked_score, scores], f"{n}.causal_mask")
        probs = b.op("Softmax", [scores], f"{n}.softmax", axis=-1)
        ctx = b.op("Transpose", [b.op("MatMul", [probs, v], f"{n}.context")], f"{n}.context.transpose",
                   perm=[0, 2, 1, 3])
        ctx = b.op("Reshape", [ctx, merge_heads], f"{n}.context.merge")
        x = b.op("Add", [x, b.linear(ctx, hidden, hidden, f"{n}.attention.output")], f"{n}.attention.residual")
        h = b.gelu(b.linear(b.layer_norm(x, hidden, f"{n}.norm2", 1e-5), hidden, ffn, f"{n}.ffn.up"),
                   f"{n}.ffn.gelu")
        x = b.op("Add", [x, b.linear(h, ffn, hidden, f"{n}.ffn.down")], f"{n}.ffn.residual")
    x = b.layer_norm(x, hidden, "final_norm", 1e-5)
    head = b.weight("lm_head.weight", (hidden, vocab), hidden)
    logits = b.op("MatMul", [x, head], "logits")
    return b.model([logits, *presents], f"decoder-only transformer with a KV cache: {layers} layers, "
                   f"hidden {hidden}, {heads} heads, vocabulary {vocab}, symbolic lengths")
