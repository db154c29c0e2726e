"""Where a model comes from: ``zoo:NAME`` (built in memory from models/zoo.py) or a file path
(ONNX, or a TensorRT engine for the TensorRT backend)."""

from __future__ import annotations


def load_model_source(model: str):
    """``zoo:NAME`` -> an onnx.ModelProto built in memory; anything else is a path."""
    from edge_roofline.models import zoo  # builds with onnx: imported only when a model is loaded
    if model.startswith(zoo.ZOO_PREFIX):
        return zoo.build(model[len(zoo.ZOO_PREFIX):])
    return model


def load_model(model: str):
    """``zoo:NAME`` or an ONNX file, as an onnx.ModelProto (for a backend and the cost model)."""
    import onnx

    source = load_model_source(model)
    return onnx.load(source) if isinstance(source, str) else source
