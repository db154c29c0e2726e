"""create_platform (platforms/__init__.py): the same idiom as create_backend, a spec string in
and a platform or one typed error out."""

import sys

import pytest

from edge_roofline.platforms import create_platform, create_platform_or_degraded
from edge_roofline.platforms.base import PlatformInitError, PlatformUnavailableError


def test_unknown_spec_is_a_typed_error_naming_the_choices():
    with pytest.raises(PlatformUnavailableError, match="unknown platform 'tpu'; use auto, jetson, nvml, cpu"):
        create_platform("tpu")


def test_a_platform_missing_from_this_install_says_so(monkeypatch):
    monkeypatch.setitem(sys.modules, "edge_roofline.platforms.nvml", None)
    with pytest.raises(PlatformUnavailableError, match="NvmlPlatform is not available in this install") as info:
        create_platform("nvml")
    assert isinstance(info.value, PlatformInitError)  # a platform that cannot start, as before


def test_a_missing_platform_degrades_to_the_cpu_with_the_reason(monkeypatch):
    monkeypatch.setitem(sys.modules, "edge_roofline.platforms.nvml", None)
    platform, problem = create_platform_or_degraded("nvml")
    try:
        assert platform.identity().kind == "cpu"
        assert "NvmlPlatform is not available in this install" in problem
    finally:
        platform.close()
