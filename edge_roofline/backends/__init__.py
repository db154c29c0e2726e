"""Inference backends: ``create_backend`` is the package face (as in zeus's
``device/gpu/__init__.py``), so ``base`` holds only the interface and never imports the
implementations."""

from __future__ import annotations

from edge_roofline import load_implementation
from edge_roofline.backends.base import BackendUnavailableError, InferenceBackend

# spec -> (module, class); modules are imported on demand so an install without TensorRT
# still creates the others.
BACKENDS = {
    "ort": ("edge_roofline.backends.onnxruntime_backend", "OnnxRuntimeBackend"),
    "onnxruntime": ("edge_roofline.backends.onnxruntime_backend", "OnnxRuntimeBackend"),
    "tensorrt": ("edge_roofline.backends.tensorrt_backend", "TensorRTBackend"),
    "trt": ("edge_roofline.backends.tensorrt_backend", "TensorRTBackend"),
    "virtual": ("edge_roofline.backends.virtual_backend", "VirtualBackend"),
}


def create_backend(spec: str, **opts) -> InferenceBackend:
    """``"ort"`` | ``"tensorrt"`` | ``"virtual"``; ``opts`` go to the backend's constructor.
    Raises ``BackendUnavailableError`` for an unknown spec or a backend missing from this install."""
    if spec not in BACKENDS:
        raise BackendUnavailableError(f"unknown backend {spec!r}; use 'ort', 'tensorrt' or 'virtual'")
    return load_implementation(*BACKENDS[spec], BackendUnavailableError)(**opts)
