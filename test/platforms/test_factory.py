"""create_platform_or_degraded: a platform that cannot start degrades to the CPU with the reason
(the factories' shared idiom is tested in test/test_factories.py)."""

import sys

from edge_roofline.platforms import create_platform_or_degraded


def test_a_missing_platform_degrades_to_the_cpu_with_the_reason(monkeypatch):
    monkeypatch.setitem(sys.modules, "edge_roofline.platforms.nvml", None)
    platform, problem = create_platform_or_degraded("nvml")
    try:
        assert platform.identity().kind == "cpu"
        assert "NvmlPlatform is not available in this install" in problem
    finally:
        platform.close()
