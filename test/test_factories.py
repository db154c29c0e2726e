"""The two factories in the package faces share one idiom (edge_roofline.load_implementation):
a spec string in, the implementation or one typed error out, for an unknown spec and for an
implementation this install cannot import."""

import sys

import pytest

from edge_roofline.backends import create_backend
from edge_roofline.backends.base import BackendError, BackendUnavailableError
from edge_roofline.platforms import create_platform
from edge_roofline.platforms.base import PlatformInitError, PlatformUnavailableError

FACTORIES = {  # factory, unknown spec and its message, a spec, its module, its class, the error, its base
    "backend": (create_backend, "openvino", "unknown backend 'openvino'.*'ort', 'tensorrt' or 'virtual'",
                "ort", "edge_roofline.backends.onnxruntime_backend", "OnnxRuntimeBackend",
                BackendUnavailableError, BackendError),
    "platform": (create_platform, "tpu", "unknown platform 'tpu'; use auto, jetson, nvml, cpu",
                 "nvml", "edge_roofline.platforms.nvml", "NvmlPlatform",
                 PlatformUnavailableError, PlatformInitError),
}


@pytest.mark.parametrize("kind", FACTORIES)
def test_an_unknown_spec_is_a_typed_error_naming_the_choices(kind):
    factory, unknown, message, *_, error, _ = FACTORIES[kind]
    with pytest.raises(error, match=message):
        factory(unknown)


@pytest.mark.parametrize("kind", FACTORIES)
def test_an_implementation_missing_from_this_install_says_so(kind, monkeypatch):
    factory, _, _, spec, module, name, error, base = FACTORIES[kind]
    monkeypatch.setitem(sys.modules, module, None)  # import of it raises ImportError
    with pytest.raises(error, match=f"{name} is not available in this install") as info:
        factory(spec)
    assert isinstance(info.value, base)  # callers catching the room's error base see it too
