"""Small real models exported from torch once per session (export is slow on 2 cores).

torch 2.13's default exporter (dynamo=True) needs onnxscript, which is not installed, so the
TorchScript exporter (dynamo=False) is used; it folds BatchNorm into Conv in eval mode, as a
deployment export does.
"""

from __future__ import annotations

import warnings

import pytest

torch = pytest.importorskip("torch")
nn = torch.nn


def _export(module, args, path, input_names, dynamic_axes=None):
    module.eval()
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        torch.onnx.export(module, args, str(path), dynamo=False, opset_version=17,
                          input_names=input_names, output_names=["out"],
                          dynamic_axes=dynamic_axes)
    return path


class _Basic(nn.Module):
    def __init__(self, cin, cout, stride):
        super().__init__()
        self.conv1 = nn.Conv2d(cin, cout, 3, stride, 1, bias=False)
        self.bn1 = nn.BatchNorm2d(cout)
        self.conv2 = nn.Conv2d(cout, cout, 3, 1, 1, bias=False)
        self.bn2 = nn.BatchNorm2d(cout)
        self.down = None
        if stride != 1 or cin != cout:
            self.down = nn.Sequential(nn.Conv2d(cin, cout, 1, stride, bias=False), nn.BatchNorm2d(cout))

    def forward(self, x):
        y = torch.relu(self.bn1(self.conv1(x)))
        y = self.bn2(self.conv2(y))
        return torch.relu(y + (self.down(x) if self.down is not None else x))


def resnet18():
    layers = [nn.Conv2d(3, 64, 7, 2, 3, bias=False), nn.BatchNorm2d(64), nn.ReLU(), nn.MaxPool2d(3, 2, 1)]
    cin = 64
    for cout, stride in ((64, 1), (128, 2), (256, 2), (512, 2)):
        layers += [_Basic(cin, cout, stride), _Basic(cout, cout, 1)]
        cin = cout
    layers += [nn.AdaptiveAvgPool2d(1), nn.Flatten(), nn.Linear(512, 1000)]
    return nn.Sequential(*layers)


class _Inverted(nn.Module):
    def __init__(self, cin, cout, stride, expand):
        super().__init__()
        hidden = cin * expand
        ops = []
        if expand != 1:
            ops += [nn.Conv2d(cin, hidden, 1, bias=False), nn.BatchNorm2d(hidden), nn.ReLU6()]
        ops += [nn.Conv2d(hidden, hidden, 3, stride, 1, groups=hidden, bias=False),
                nn.BatchNorm2d(hidden), nn.ReLU6(), nn.Conv2d(hidden, cout, 1, bias=False),
                nn.BatchNorm2d(cout)]
        self.block = nn.Sequential(*ops)
        self.residual = stride == 1 and cin == cout

    def forward(self, x):
        return x + self.block(x) if self.residual else self.block(x)


def mobilenetv2():
    settings = ((1, 16, 1, 1), (6, 24, 2, 2), (6, 32, 3, 2), (6, 64, 4, 2), (6, 96, 3, 1),
                (6, 160, 3, 2), (6, 320, 1, 1))
    layers = [nn.Conv2d(3, 32, 3, 2, 1, bias=False), nn.BatchNorm2d(32), nn.ReLU6()]
    cin = 32
    for t, c, n, s in settings:
        for i in range(n):
            layers.append(_Inverted(cin, c, s if i == 0 else 1, t))
            cin = c
    layers += [nn.Conv2d(cin, 1280, 1, bias=False), nn.BatchNorm2d(1280), nn.ReLU6(),
               nn.AdaptiveAvgPool2d(1), nn.Flatten(), nn.Linear(1280, 1000)]
    return nn.Sequential(*layers)


class _Lstm(nn.Module):
    def __init__(self):
        super().__init__()
        self.lstm = nn.LSTM(input_size=20, hidden_size=32, num_layers=2)
        self.head = nn.Linear(32, 10)

    def forward(self, x):
        y, _ = self.lstm(x)
        return self.head(y)


class _Encoder(nn.Module):
    """One pre-norm transformer encoder block, attention written out as
    MatMul -> Softmax -> MatMul (what exporters emit for multi-head attention)."""

    def __init__(self, hidden=64, heads=4, ff=128):
        super().__init__()
        self.heads, self.d = heads, hidden // heads
        self.norm1, self.norm2 = nn.LayerNorm(hidden), nn.LayerNorm(hidden)
        self.qkv = nn.Linear(hidden, 3 * hidden)
        self.proj = nn.Linear(hidden, hidden)
        self.ff1, self.ff2 = nn.Linear(hidden, ff), nn.Linear(ff, hidden)

    def forward(self, x):
        b, s, h = x.shape
        q, k, v = self.qkv(self.norm1(x)).reshape(b, s, 3, self.heads, self.d).permute(2, 0, 3, 1, 4)
        scores = torch.softmax(q @ k.transpose(-2, -1) / self.d ** 0.5, dim=-1)
        x = x + self.proj((scores @ v).transpose(1, 2).reshape(b, s, h))
        return x + self.ff2(torch.nn.functional.gelu(self.ff1(self.norm2(x))))


class _DecoderBlock(nn.Module):
    """Pre-norm GPT block; the new keys and values are appended to the cache (torch.cat), the
    causal mask compares key positions (arange over the cache) with the queries' positions."""

    def __init__(self, hidden, heads, ff):
        super().__init__()
        self.heads, self.d = heads, hidden // heads
        self.norm1, self.norm2 = nn.LayerNorm(hidden), nn.LayerNorm(hidden)
        self.qkv, self.proj = nn.Linear(hidden, 3 * hidden), nn.Linear(hidden, hidden)
        self.ff1, self.ff2 = nn.Linear(hidden, ff), nn.Linear(ff, hidden)

    def forward(self, x, position_ids, past_k, past_v):
        b, s, h = x.shape
        q, k, v = self.qkv(self.norm1(x)).reshape(b, s, 3, self.heads, self.d).permute(2, 0, 3, 1, 4)
        k, v = torch.cat([past_k, k], dim=2), torch.cat([past_v, v], dim=2)
        future = torch.arange(k.shape[2])[None, None, None, :] > position_ids[:, None, :, None]
        scores = ((q @ k.transpose(-2, -1)) / self.d ** 0.5).masked_fill(future, float("-inf"))
        x = x + self.proj((torch.softmax(scores, dim=-1) @ v).transpose(1, 2).reshape(b, s, h))
        return x + self.ff2(nn.functional.gelu(self.ff1(self.norm2(x)))), k, v


class _Decoder(nn.Module):
    def __init__(self, vocab=1000, hidden=128, heads=4, layers=2, ff=512, max_positions=4096):
        super().__init__()
        self.embed, self.pos = nn.Embedding(vocab, hidden), nn.Embedding(max_positions, hidden)
        self.blocks = nn.ModuleList(_DecoderBlock(hidden, heads, ff) for _ in range(layers))
        self.norm, self.head = nn.LayerNorm(hidden), nn.Linear(hidden, vocab, bias=False)

    def forward(self, input_ids, position_ids, *past):
        x = self.embed(input_ids) + self.pos(position_ids)
        presents = []
        for i, block in enumerate(self.blocks):
            x, k, v = block(x, position_ids, past[2 * i], past[2 * i + 1])
            presents += [k, v]
        return (self.head(self.norm(x)), *presents)


DECODER = {"layers": 2, "heads": 4, "hidden": 128}
DECODER_STEPS = ((64, 0), (256, 0), (1, 128), (1, 1024))  # (new tokens, context) exported statically


def _export_decoder(path, new, context, dynamic):
    torch.manual_seed(0)
    layers, heads, hidden = DECODER["layers"], DECODER["heads"], DECODER["hidden"]
    past = [f"past_key_values.{i}.{kv}" for i in range(layers) for kv in ("key", "value")]
    outputs = ["logits"] + [n.replace("past_key_values", "present") for n in past]
    axes = None
    if dynamic:  # the names Hugging Face exports use
        axes = {"input_ids": {0: "batch", 1: "sequence"}, "position_ids": {0: "batch", 1: "sequence"},
                "logits": {0: "batch", 1: "sequence"}}
        axes |= {n: {0: "batch", 2: "past_sequence"} for n in past}
        axes |= {n: {0: "batch", 2: "total_sequence"} for n in outputs[1:]}
    args = (torch.zeros(1, new, dtype=torch.long), torch.arange(context, context + new)[None],
            *[torch.zeros(1, heads, context, hidden // heads) for _ in past])
    module = _Decoder(layers=layers, heads=heads, hidden=hidden).eval()
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        torch.onnx.export(module, args, str(path), dynamo=False, opset_version=17,
                          input_names=["input_ids", "position_ids", *past], output_names=outputs,
                          dynamic_axes=axes)
    return path


@pytest.fixture(scope="session")
def torch_decoder(tmp_path_factory):
    """A decoder-only transformer with a KV cache exported by torch: ``dynamic`` (symbolic
    lengths, one graph) and one static graph per (new tokens, context) in DECODER_STEPS."""
    root = tmp_path_factory.mktemp("torch_decoder")
    static = {step: _export_decoder(root / f"decoder_{step[0]}_{step[1]}.onnx", *step, dynamic=False)
              for step in DECODER_STEPS}
    return {"dynamic": _export_decoder(root / "decoder.onnx", 1, 16, dynamic=True), "static": static}


@pytest.fixture(scope="session")
def torch_models(tmp_path_factory):
    """name -> path of the exported ONNX files (ResNet-18 and MobileNetV2 at 64x64: per-node
    counts scale with resolution, agreement does not)."""
    root = tmp_path_factory.mktemp("torch_models")
    torch.manual_seed(0)
    return {
        "resnet18": _export(resnet18(), (torch.randn(1, 3, 64, 64),), root / "resnet18.onnx", ["images"]),
        "mobilenetv2": _export(mobilenetv2(), (torch.randn(1, 3, 64, 64),), root / "mobilenetv2.onnx",
                               ["images"]),
        "lstm": _export(_Lstm(), (torch.randn(7, 3, 20),), root / "lstm.onnx", ["frames"],
                        dynamic_axes={"frames": {0: "seq", 1: "batch"}}),
        "encoder": _export(_Encoder(), (torch.randn(2, 16, 64),), root / "encoder.onnx", ["tokens"],
                           dynamic_axes={"tokens": {0: "batch", 1: "seq"}}),
    }
