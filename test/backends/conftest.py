"""Shared models for backend tests: small zoo variants and hand-made graphs with known
failure modes (NaN outputs, unnamed nodes)."""

from __future__ import annotations

import numpy as np
import pytest
from onnx import TensorProto, helper

from edge_roofline.models import zoo


@pytest.fixture(scope="session")
def tiny_cnn():
    return zoo.build("tiny_cnn")


@pytest.fixture(scope="session")
def resnet18_small():
    return zoo.build("resnet18", resolution=64)


@pytest.fixture(scope="session")
def transformer_small():
    return zoo.build("transformer", seq_len=16, layers=2, hidden=64, heads=2, vocab=100)


def make_model(nodes, inputs, outputs, initializers=()):
    graph = helper.make_graph(nodes, "t", inputs, outputs, list(initializers))
    model = helper.make_model(graph, opset_imports=[helper.make_opsetid("", zoo.OPSET)])
    model.ir_version = zoo.IR_VERSION
    return model


@pytest.fixture(scope="session")
def model_factory():
    return make_model


@pytest.fixture(scope="session")
def nan_model():
    """y = Sqrt(x): NaN for negative inputs; z = Log(x): -inf at 0."""
    x = helper.make_tensor_value_info("x", TensorProto.FLOAT, [4])
    return make_model(
        [helper.make_node("Sqrt", ["x"], ["y"], name="sqrt"),
         helper.make_node("Log", ["x"], ["z"], name="log")],
        [x], [helper.make_tensor_value_info("y", TensorProto.FLOAT, [4]),
              helper.make_tensor_value_info("z", TensorProto.FLOAT, [4])])


@pytest.fixture
def tiny_feeds():
    return {"input": np.random.default_rng(0).random((1, 3, 64, 64), dtype=np.float32)}
