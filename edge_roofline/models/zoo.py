"""A zoo of reference DNNs built in code with ``onnx.helper`` and seeded random weights.

No downloads and no torch: every model is generated from its topology, so tests, the demo and
the virtual Jetson can use ResNet, MobileNet, a YOLO-style detector, an LSTM, a BERT-like
encoder and a small decoder-only language model with a KV cache (``tiny_decoder``, in
``decoder.py``) anywhere. Weights are random (He-scaled so activations stay in range), which is all a
roofline needs: FLOPs and bytes depend on shapes, not on trained values.

Conventions that other parts of the suite rely on:

- Every node has a unique, readable name (``layer1.0.conv1``); TensorRT fuses layers under
  joined ONNX names and ONNX Runtime profiles per node name, so names are the join key.
- A node's (single) output tensor carries the node's name.
- Opset 17 and IR version 8: the newest that TensorRT 8.5/8.6 (JetPack 5) parses, and
  LayerNormalization exists from opset 17. GELU is therefore written out with Erf, the
  pattern exporters emit and runtimes fuse.
- Shapes are static; ``batch`` is the leading dimension of every input. The decoder's
  sequence and past lengths are symbolic: one graph runs prefill and decode.
"""

from __future__ import annotations

import math
from pathlib import Path
from typing import Callable

import numpy as np
import onnx
from onnx import TensorProto, helper

from edge_roofline.models.builder import IR_VERSION, OPSET, GraphBuilder
from edge_roofline.models.decoder import tiny_decoder

__all__ = ["IR_VERSION", "OPSET", "BUILDERS", "NAMES", "build", "save"]


# ---- CNNs -----------------------------------------------------------------------------

def _resnet(b: GraphBuilder, batch: int, blocks: tuple[int, ...], bottleneck: bool,
            resolution: int, classes: int) -> onnx.ModelProto:
    x = b.input("input", [batch, 3, resolution, resolution])
    x = b.conv_bn_act(x, 64, "stem", k=7, stride=2)
    x = b.op("MaxPool", [x], "maxpool", kernel_shape=[3, 3], strides=[2, 2], pads=[1] * 4)
    b.channels[x] = 64
    expansion = 4 if bottleneck else 1
    for stage, count in enumerate(blocks):
        width = 64 * 2 ** stage
        for i in range(count):
            stride = 2 if (i == 0 and stage > 0) else 1
            name = f"layer{stage + 1}.{i}"
            if bottleneck:  # torchvision v1.5: the stride sits on the 3x3 conv
                y = b.conv_bn_act(x, width, f"{name}.1", k=1)
                y = b.conv_bn_act(y, width, f"{name}.2", k=3, stride=stride)
                y = b.conv_bn_act(y, width * 4, f"{name}.3", k=1, act=None)
            else:
                y = b.conv_bn_act(x, width, f"{name}.1", k=3, stride=stride)
                y = b.conv_bn_act(y, width, f"{name}.2", k=3, act=None)
            if stride != 1 or b.channels[x] != width * expansion:
                x = b.conv_bn_act(x, width * expansion, f"{name}.downsample", k=1,
                                  stride=stride, act=None)
            x = b.act(b.add(y, x, f"{name}.add"), "relu", f"{name}.relu")
    return b.model([b.classifier(x, classes)], f"ResNet-{'50' if bottleneck else '18'} "
                   f"({sum(blocks)} blocks), {resolution}x{resolution}")


def resnet18(batch: int = 1, resolution: int = 224, classes: int = 1000, seed: int = 0):
    return _resnet(GraphBuilder("resnet18", seed), batch, (2, 2, 2, 2), False, resolution, classes)


def resnet50(batch: int = 1, resolution: int = 224, classes: int = 1000, seed: int = 0):
    return _resnet(GraphBuilder("resnet50", seed), batch, (3, 4, 6, 3), True, resolution, classes)


def mobilenetv2(batch: int = 1, resolution: int = 224, classes: int = 1000,
                width: float = 1.0, seed: int = 0):
    """MobileNetV2: inverted residuals (1x1 expand, 3x3 depthwise, 1x1 linear project)."""
    b = GraphBuilder("mobilenetv2", seed)

    def ch(c: int) -> int:  # round to a multiple of 8, as the reference implementation does
        return max(8, int(c * width + 4) // 8 * 8)

    x = b.conv_bn_act(b.input("input", [batch, 3, resolution, resolution]), ch(32), "stem",
                      stride=2, act="relu6")
    # (expansion t, channels c, repeats n, first stride s) from the paper's Table 2
    settings = ((1, 16, 1, 1), (6, 24, 2, 2), (6, 32, 3, 2), (6, 64, 4, 2), (6, 96, 3, 1),
                (6, 160, 3, 2), (6, 320, 1, 1))
    idx = 0
    for t, c, n, s in settings:
        for i in range(n):
            name, cin = f"block{idx}", b.channels[x]
            y = x if t == 1 else b.conv_bn_act(x, cin * t, f"{name}.expand", k=1, act="relu6")
            y = b.conv_bn_act(y, b.channels[y], f"{name}.dw", stride=s if i == 0 else 1,
                              groups=b.channels[y], act="relu6")
            y = b.conv_bn_act(y, ch(c), f"{name}.project", k=1, act=None)
            x = b.add(y, x, f"{name}.add") if (s == 1 or i > 0) and cin == ch(c) else y
            idx += 1
    x = b.conv_bn_act(x, max(1280, ch(1280)), "head", k=1, act="relu6")
    return b.model([b.classifier(x, classes)], f"MobileNetV2 x{width}, {resolution}x{resolution}")


def yolo_tiny(batch: int = 1, resolution: int = 640, classes: int = 80, width: float = 0.25,
              depth: float = 0.33, reg_max: int = 16, seed: int = 0):
    """A YOLOv8n-shaped detector: Conv-BN-SiLU backbone with C2f blocks and SPPF, a PAN/FPN
    neck (nearest upsample + concat), and decoupled box/class heads at strides 8/16/32.
    Output: [batch, 4 * reg_max + classes, anchors] raw head maps (no NMS)."""
    b = GraphBuilder("yolo_tiny", seed)

    def ch(c: int) -> int:
        return max(8, int(math.ceil(c * width / 8)) * 8)

    def reps(n: int) -> int:
        return max(round(n * depth), 1)

    def c2f(x: str, cout: int, n: int, name: str, shortcut: bool) -> str:
        hidden = cout // 2
        y = b.conv_bn_act(x, 2 * hidden, f"{name}.cv1", k=1, act="silu")
        split = b.const(f"{name}.split_sizes", np.array([hidden, hidden], np.int64))
        parts = [f"{name}.split.0", f"{name}.split.1"]
        b.nodes.append(helper.make_node("Split", [y, split], parts, name=f"{name}.split", axis=1))
        for p in parts:
            b.channels[p] = hidden
        for i in range(n):
            z = b.conv_bn_act(parts[-1], hidden, f"{name}.m{i}.cv1", act="silu")
            z = b.conv_bn_act(z, hidden, f"{name}.m{i}.cv2", act="silu")
            parts.append(b.add(parts[-1], z, f"{name}.m{i}.add") if shortcut else z)
        return b.conv_bn_act(b.concat(parts, f"{name}.concat"), cout, f"{name}.cv2", k=1,
                             act="silu")

    def sppf(x: str, name: str) -> str:
        c = b.channels[x]
        y = b.conv_bn_act(x, c // 2, f"{name}.cv1", k=1, act="silu")
        pools = [y]
        for i in range(3):
            pools.append(b.op("MaxPool", [pools[-1]], f"{name}.pool{i}", kernel_shape=[5, 5],
                              strides=[1, 1], pads=[2] * 4))
            b.channels[pools[-1]] = c // 2
        return b.conv_bn_act(b.concat(pools, f"{name}.concat"), c, f"{name}.cv2", k=1, act="silu")

    def upsample(x: str, name: str) -> str:
        scales = b.const(f"{name}.scales", np.array([1, 1, 2, 2], np.float32))
        y = b.op("Resize", [x, "", scales], name, mode="nearest")
        b.channels[y] = b.channels[x]
        return y

    x = b.input("images", [batch, 3, resolution, resolution])
    x = b.conv_bn_act(x, ch(64), "backbone.0", stride=2, act="silu")
    x = b.conv_bn_act(x, ch(128), "backbone.1", stride=2, act="silu")
    x = c2f(x, ch(128), reps(3), "backbone.2", True)
    x = b.conv_bn_act(x, ch(256), "backbone.3", stride=2, act="silu")
    p3 = c2f(x, ch(256), reps(6), "backbone.4", True)
    x = b.conv_bn_act(p3, ch(512), "backbone.5", stride=2, act="silu")
    p4 = c2f(x, ch(512), reps(6), "backbone.6", True)
    x = b.conv_bn_act(p4, ch(1024), "backbone.7", stride=2, act="silu")
    p5 = sppf(c2f(x, ch(1024), reps(3), "backbone.8", True), "backbone.9")
    # top-down (FPN) then bottom-up (PAN)
    n4 = c2f(b.concat([upsample(p5, "neck.up1"), p4], "neck.cat1"), ch(512), reps(3), "neck.c2f1", False)
    n3 = c2f(b.concat([upsample(n4, "neck.up2"), p3], "neck.cat2"), ch(256), reps(3), "neck.c2f2", False)
    d4 = b.conv_bn_act(n3, ch(256), "neck.down1", stride=2, act="silu")
    n4 = c2f(b.concat([d4, n4], "neck.cat3"), ch(512), reps(3), "neck.c2f3", False)
    d5 = b.conv_bn_act(n4, ch(512), "neck.down2", stride=2, act="silu")
    n5 = c2f(b.concat([d5, p5], "neck.cat4"), ch(1024), reps(3), "neck.c2f4", False)

    box_ch, cls_ch = max(16, ch(256) // 4, 4 * reg_max), max(ch(256), min(classes, 100))
    maps = []
    for i, feat in enumerate((n3, n4, n5)):
        branches = []
        for kind, hidden, out in (("box", box_ch, 4 * reg_max), ("cls", cls_ch, classes)):
            y = b.conv_bn_act(feat, hidden, f"head{i}.{kind}.0", act="silu")
            y = b.conv_bn_act(y, hidden, f"head{i}.{kind}.1", act="silu")
            branches.append(b.conv(y, out, f"head{i}.{kind}.pred", k=1, bias=True))
        cat = b.concat(branches, f"head{i}.concat")
        shape = b.const(f"head{i}.shape", np.array([batch, 4 * reg_max + classes, -1], np.int64))
        maps.append(b.op("Reshape", [cat, shape], f"head{i}.flatten"))
    out = b.op("Concat", maps, "detections", axis=2)
    return b.model([out], f"YOLOv8n-style detector, {resolution}x{resolution}, {classes} classes")


def tiny_cnn(batch: int = 1, resolution: int = 64, classes: int = 10, seed: int = 0):
    """A few conv layers on a 64x64 image and a 10-way classifier: fast, for tests and demos."""
    b = GraphBuilder("tiny_cnn", seed)
    x = b.input("input", [batch, 3, resolution, resolution])
    for i, cout in enumerate((16, 32, 64)):
        x = b.act(b.conv(x, cout, f"conv{i}", bias=True), "relu", f"relu{i}")
        x = b.op("MaxPool", [x], f"pool{i}", kernel_shape=[2, 2], strides=[2, 2])
        b.channels[x] = cout
    logits = b.classifier(x, classes)
    return b.model([b.op("Softmax", [logits], "probs", axis=-1)],
                   f"tiny CNN, {resolution}x{resolution}, {classes} classes")


# ---- sequence models ------------------------------------------------------------------

def lstm(batch: int = 1, seq_len: int = 100, features: int = 80, hidden: int = 256,
         layers: int = 2, vocab: int = 29, seed: int = 0):
    """Speech-recognition-shaped: frames of log-mel features -> stacked LSTM -> per-frame
    character logits. Input [seq_len, batch, features] (the ONNX LSTM default layout)."""
    b = GraphBuilder("lstm", seed)
    x, fin = b.input("features", [seq_len, batch, features]), features
    squeeze_axes = b.const("num_directions_axis", np.array([1], np.int64))
    for i in range(layers):
        name = f"lstm{i}"
        # ONNX gate order i, o, f, c; W [dirs, 4H, in], R [dirs, 4H, H], B [dirs, 8H]
        w = b.weight(f"{name}.W", (1, 4 * hidden, fin), fin)
        r = b.weight(f"{name}.R", (1, 4 * hidden, hidden), hidden)
        bias = b.const(f"{name}.B", np.zeros((1, 8 * hidden), np.float32))
        y = b.op("LSTM", [x, w, r, bias], name, hidden_size=hidden)
        x, fin = b.op("Squeeze", [y, squeeze_axes], f"{name}.squeeze"), hidden  # [T, B, H]
    return b.model([b.linear(x, hidden, vocab, "classifier")],
                   f"{layers}-layer LSTM ({hidden} hidden), {seq_len} frames of {features} features")


def transformer(batch: int = 1, seq_len: int = 128, hidden: int = 256, layers: int = 4,
                heads: int = 4, ffn: int | None = None, vocab: int = 30522, seed: int = 0):
    """A BERT-like encoder (BERT-mini by default): token + position embeddings, then per layer
    Q/K/V projections, MatMul-Softmax-MatMul attention, output projection, residual +
    LayerNormalization, a GELU feed-forward block, residual + LayerNormalization."""
    if hidden % heads:
        raise ValueError(f"hidden ({hidden}) must be divisible by heads ({heads})")
    b = GraphBuilder("transformer", seed)
    ffn, head_dim = ffn or 4 * hidden, hidden // heads

    split_heads = b.const("shape.split_heads", np.array([batch, seq_len, heads, head_dim], np.int64))
    merge_heads = b.const("shape.merge_heads", np.array([batch, seq_len, hidden], np.int64))
    scale = b.const("attention.scale", np.array(1 / math.sqrt(head_dim), np.float32))

    ids = b.input("input_ids", [batch, seq_len], TensorProto.INT64)
    word = b.weight("embeddings.word", (vocab, hidden), hidden)
    pos = b.weight("embeddings.position", (seq_len, hidden), hidden)
    x = b.op("Add", [b.op("Gather", [word, ids], "embeddings.lookup"), pos], "embeddings.add")
    x = b.layer_norm(x, hidden, "embeddings.norm")
    for i in range(layers):
        n = f"layer{i}"

        def heads_of(proj: str, perm: list[int]) -> str:
            y = b.op("Reshape", [b.linear(x, hidden, hidden, f"{n}.{proj}"), split_heads],
                     f"{n}.{proj}.reshape")
            return b.op("Transpose", [y], f"{n}.{proj}.transpose", perm=perm)

        q = heads_of("query", [0, 2, 1, 3])  # [B, H, S, D]
        k = heads_of("key", [0, 2, 3, 1])  # [B, H, D, S]
        v = heads_of("value", [0, 2, 1, 3])
        scores = b.op("Mul", [b.op("MatMul", [q, k], f"{n}.scores"), scale], f"{n}.scores.scale")
        probs = b.op("Softmax", [scores], f"{n}.softmax", axis=-1)
        ctx = b.op("Transpose", [b.op("MatMul", [probs, v], f"{n}.context")],
                   f"{n}.context.transpose", perm=[0, 2, 1, 3])
        ctx = b.op("Reshape", [ctx, merge_heads], f"{n}.context.reshape")
        attn = b.linear(ctx, hidden, hidden, f"{n}.attention.output")
        x = b.layer_norm(b.op("Add", [attn, x], f"{n}.attention.residual"), hidden, f"{n}.attention.norm")
        h = b.gelu(b.linear(x, hidden, ffn, f"{n}.ffn.intermediate"), f"{n}.ffn.gelu")
        h = b.linear(h, ffn, hidden, f"{n}.ffn.output")
        x = b.layer_norm(b.op("Add", [h, x], f"{n}.ffn.residual"), hidden, f"{n}.ffn.norm")
    return b.model([x], f"BERT-like encoder: {layers} layers, hidden {hidden}, {heads} heads, "
                        f"sequence {seq_len}")


BUILDERS: dict[str, Callable[..., onnx.ModelProto]] = {
    "resnet18": resnet18,
    "resnet50": resnet50,
    "mobilenetv2": mobilenetv2,
    "yolo_tiny": yolo_tiny,
    "lstm": lstm,
    "transformer": transformer,
    "tiny_cnn": tiny_cnn,
    "tiny_decoder": tiny_decoder,
}
NAMES: tuple[str, ...] = tuple(BUILDERS)
ZOO_PREFIX = "zoo:"


class UnknownModelError(KeyError):
    """A zoo name that is not in the zoo (a KeyError, as a dict lookup would raise)."""


def build(name: str, batch: int = 1, **opts) -> onnx.ModelProto:
    """Build a zoo model by name; ``opts`` are the builder's keyword options (e.g.
    ``resolution``, ``seq_len``, ``seed``)."""
    try:
        builder = BUILDERS[name]
    except KeyError:
        raise UnknownModelError(f"unknown zoo model {name!r}; known: {', '.join(NAMES)}") from None
    return builder(batch=batch, **opts)


def save(name: str, path: str | Path, batch: int = 1, **opts) -> Path:
    """Build a zoo model and write it as an .onnx file; returns the path."""
    path = Path(path)
    path.parent.mkdir(parents=True, exist_ok=True)
    onnx.save(build(name, batch, **opts), str(path))
    return path
