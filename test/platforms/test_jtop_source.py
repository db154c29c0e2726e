"""Rail source: jtop client when its service answers, sysfs fallback with a reason otherwise."""

from __future__ import annotations

import pytest
from jtop import JtopException

from edge_roofline.platforms.jetson.jtop_source import RailSource
from test.platforms.tree import write_agx_orin_tree


class NoService:
    def start(self):
        raise JtopException("The jtop.service is not active. Please run: sudo systemctl restart jtop.service")


class FakeClient:
    power = {"rail": {"VDD_GPU_SOC": {"volt": 5000, "curr": 478, "power": 2390, "online": True}}}
    closed = False

    def start(self):
        pass

    def close(self):
        self.closed = True


def test_fallback_to_sysfs(tmp_path):
    source = RailSource(write_agx_orin_tree(tmp_path), client_factory=NoService)
    rails, problems = source.read()
    assert source.name == "jetson-sysfs" and "jtop.service" in source.fallback_reason
    assert len(rails) == 4 and problems == ()


def test_jtop_client(tmp_path):
    client = FakeClient()
    source = RailSource(tmp_path, client_factory=lambda: client)
    rails, _ = source.read()
    assert source.name == "jtop" and rails[0].power_w == pytest.approx(2.39)
    source.close()
    assert client.closed
