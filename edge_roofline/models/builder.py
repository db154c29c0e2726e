"""The graph builder of the model zoo (``zoo.py``, ``decoder.py``): nodes and seeded
random weights with ``onnx.helper``, checked and shape-inferred when finished.

Conventions the rest of the suite relies on (listed in ``zoo.py``): unique readable node names,
a node's single output named after it, opset 17 and IR version 8.
"""

from __future__ import annotations

import math

import numpy as np
import onnx
from onnx import TensorProto, helper, numpy_helper

OPSET = 17
IR_VERSION = 8


class GraphBuilder:
    """Accumulates nodes and initializers; tracks the channel count of 4-D tensors so conv
    helpers need only the output width."""

    def __init__(self, name: str, seed: int) -> None:
        self.name = name
        self.rng = np.random.default_rng(seed)
        self.nodes: list[onnx.NodeProto] = []
        self.inits: list[onnx.TensorProto] = []
        self.inputs: list[onnx.ValueInfoProto] = []
        self.outputs: list[str] = []
        self.channels: dict[str, int] = {}

    # ---- primitives ------------------------------------------------------------------
    def input(self, name: str, shape: list[int], elem_type: int = TensorProto.FLOAT) -> str:
        self.inputs.append(helper.make_tensor_value_info(name, elem_type, shape))
        if len(shape) == 4:
            self.channels[name] = shape[1]
        return name

    def const(self, name: str, array: np.ndarray) -> str:
        self.inits.append(numpy_helper.from_array(np.asarray(array), name))
        return name

    def weight(self, name: str, shape: tuple[int, ...], fan_in: int) -> str:
        # He-normal keeps the activation variance ~constant through ReLU stacks.
        scale = math.sqrt(2.0 / max(fan_in, 1))
        return self.const(name, self.rng.standard_normal(shape, dtype=np.float32) * np.float32(scale))

    def op(self, op_type: str, inputs: list[str], name: str, **attrs) -> str:
        self.nodes.append(helper.make_node(op_type, inputs, [name], name=name, **attrs))
        return name

    # ---- layers ----------------------------------------------------------------------
    def conv(self, x: str, cout: int, name: str, k: int = 3, stride: int = 1, groups: int = 1,
             bias: bool = False) -> str:
        cin = self.channels[x]
        w = self.weight(f"{name}.weight", (cout, cin // groups, k, k), cin // groups * k * k)
        ins = [x, w] + ([self.const(f"{name}.bias", np.zeros(cout, np.float32))] if bias else [])
        y = self.op("Conv", ins, name, kernel_shape=[k, k], strides=[stride, stride],
                    pads=[k // 2] * 4, group=groups)
        self.channels[y] = cout
        return y

    def bn(self, x: str, name: str) -> str:
        c = self.channels[x]
        params = [self.const(f"{name}.{p}", v.astype(np.float32)) for p, v in (
            ("scale", 1.0 + 0.1 * self.rng.standard_normal(c)),
            ("bias", 0.1 * self.rng.standard_normal(c)),
            ("mean", 0.1 * self.rng.standard_normal(c)),
            ("var", 1.0 + 0.1 * self.rng.random(c)))]
        y = self.op("BatchNormalization", [x, *params], name, epsilon=1e-5)
        self.channels[y] = c
        return y

    def act(self, x: str, kind: str, name: str) -> str:
        """ReLU, ReLU6 (Clip) or SiLU (x * sigmoid(x), two nodes as exporters write it)."""
        if kind == "relu":
            y = self.op("Relu", [x], name)
        elif kind == "relu6":
            lo = self.const(f"{name}.min", np.array(0.0, np.float32))
            hi = self.const(f"{name}.max", np.array(6.0, np.float32))
            y = self.op("Clip", [x, lo, hi], name)
        elif kind == "silu":
            y = self.op("Mul", [x, self.op("Sigmoid", [x], f"{name}.sigmoid")], name)
        else:
            raise ValueError(f"unknown activation {kind!r}")
        self.channels[y] = self.channels[x]
        return y

    def conv_bn_act(self, x: str, cout: int, name: str, k: int = 3, stride: int = 1,
                    groups: int = 1, act: str | None = "relu") -> str:
        y = self.bn(self.conv(x, cout, f"{name}.conv", k, stride, groups), f"{name}.bn")
        return self.act(y, act, f"{name}.act") if act else y

    def add(self, a: str, b: str, name: str) -> str:
        y = self.op("Add", [a, b], name)
        if a in self.channels:
            self.channels[y] = self.channels[a]
        return y

    def concat(self, xs: list[str], name: str) -> str:
        y = self.op("Concat", xs, name, axis=1)
        self.channels[y] = sum(self.channels[x] for x in xs)
        return y

    def linear(self, x: str, fin: int, fout: int, name: str) -> str:
        """MatMul + Add over the last axis (transformer/LSTM style, any rank)."""
        w = self.weight(f"{name}.weight", (fin, fout), fin)
        b = self.const(f"{name}.bias", np.zeros(fout, np.float32))
        return self.op("Add", [self.op("MatMul", [x, w], f"{name}.matmul"), b], f"{name}.add")

    def classifier(self, x: str, classes: int, name: str = "fc") -> str:
        """Global average pool, flatten, fully connected (Gemm)."""
        c = self.channels[x]
        flat = self.op("Flatten", [self.op("GlobalAveragePool", [x], "avgpool")], "flatten")
        w = self.weight(f"{name}.weight", (classes, c), c)
        b = self.const(f"{name}.bias", np.zeros(classes, np.float32))
        return self.op("Gemm", [flat, w, b], name, transB=1)

    def layer_norm(self, x: str, width: int, name: str, epsilon: float = 1e-12) -> str:
        gamma = self.const(f"{name}.weight", np.ones(width, np.float32))
        beta = self.const(f"{name}.bias", np.zeros(width, np.float32))
        return self.op("LayerNormalization", [x, gamma, beta], name, axis=-1, epsilon=epsilon)

    def gelu(self, x: str, name: str) -> str:
        """0.5 * x * (1 + erf(x / sqrt(2))), written out as exporters emit it."""
        inv_sqrt2 = self.const(f"{name}.c_inv_sqrt2", np.array(1 / math.sqrt(2), np.float32))
        one = self.const(f"{name}.c_one", np.array(1.0, np.float32))
        half = self.const(f"{name}.c_half", np.array(0.5, np.float32))
        e = self.op("Erf", [self.op("Mul", [x, inv_sqrt2], f"{name}.scale")], f"{name}.erf")
        y = self.op("Mul", [x, self.op("Add", [e, one], f"{name}.add")], f"{name}.mul")
        return self.op("Mul", [y, half], f"{name}.half")

    # ---- finish ----------------------------------------------------------------------
    def model(self, outputs: list[str], doc: str) -> onnx.ModelProto:
        outs = [helper.make_tensor_value_info(o, TensorProto.FLOAT, None) for o in outputs]
        graph = helper.make_graph(self.nodes, self.name, self.inputs, outs, self.inits)
        model = helper.make_model(graph, opset_imports=[helper.make_opsetid("", OPSET)],
                                  producer_name="edge_roofline.zoo", doc_string=doc)
        model.ir_version = IR_VERSION
        # Shape inference fills in intermediate and output shapes, which cost models read.
        model = onnx.shape_inference.infer_shapes(model, strict_mode=True)
        onnx.checker.check_model(model)
        return model
