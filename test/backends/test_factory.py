"""create_backend (backends/__init__.py): a spec string in, a backend or one typed error out."""

import sys

import pytest

from edge_roofline.backends import create_backend
from edge_roofline.backends.base import BackendError, BackendUnavailableError


def test_unknown_spec_is_a_typed_error_naming_the_choices():
    with pytest.raises(BackendUnavailableError, match="unknown backend 'openvino'.*'ort', 'tensorrt' or 'virtual'"):
        create_backend("openvino")


def test_a_backend_missing_from_this_install_says_so(monkeypatch):
    monkeypatch.setitem(sys.modules, "edge_roofline.backends.onnxruntime_backend", None)
    with pytest.raises(BackendUnavailableError, match="OnnxRuntimeBackend is not available in this install") as info:
        create_backend("ort")
    assert isinstance(info.value, BackendError)  # callers catching every backend error see it too
