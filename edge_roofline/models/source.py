"""Where a model comes from: ``zoo:NAME`` (built in memory from models/zoo.py) or a file path
(ONNX, or a TensorRT engine for the TensorRT backend)."""

from __future__ import annotations


ENGINE_SUFFIXES = (".engine", ".plan")
FIX = "give an existing ONNX file, or zoo:NAME for a built-in model"


class ModelFileError(ValueError):
    """A model file that is missing, unreadable or not ONNX: one line naming it and the fix."""


def is_engine(model) -> bool:
    """A path to a prebuilt TensorRT engine (``.engine`` or ``.plan``): it holds no ONNX graph."""
    return isinstance(model, str) and model.endswith(ENGINE_SUFFIXES)


def load_model_source(model: str):
    """``zoo:NAME`` -> an onnx.ModelProto built in memory; anything else is a path."""
    from edge_roofline.models import zoo  # builds with onnx: imported only when a model is loaded
    if model.startswith(zoo.ZOO_PREFIX):
        return zoo.build(model[len(zoo.ZOO_PREFIX):])
    return model


def load_model(model: str):
    """``zoo:NAME`` or an ONNX file, as an onnx.ModelProto (for a backend and the cost model).
    Raises ``ModelFileError`` for a file that is missing, a TensorRT engine, or not ONNX."""
    import onnx
    from google.protobuf.message import DecodeError

    source = load_model_source(model)
    if not isinstance(source, str):
        return source
    if is_engine(source):
        raise ModelFileError(f"{source} is a TensorRT engine; this needs the ONNX model it was built from "
                             f"(the cost model reads the ONNX graph): {FIX}")
    try:
        proto = onnx.load(source)
    except OSError as exc:
        raise ModelFileError(f"cannot read model {source}: {exc.strerror or exc}; {FIX}") from exc
    except (DecodeError, ValueError, RuntimeError, UnicodeDecodeError) as exc:  # protobuf's and onnx's
        raise ModelFileError(f"{source} is not a valid ONNX model ({' '.join(str(exc).split())}); {FIX}") from exc
    if proto.ir_version <= 0 or not proto.graph.node:  # an empty file parses as an empty model
        raise ModelFileError(f"{source} is not an ONNX model (no IR version or no nodes); {FIX}")
    return proto
