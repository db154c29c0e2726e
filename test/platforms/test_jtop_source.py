"""Rail source: jtop client when its service answers, sysfs fallback with a reason otherwise."""

from __future__ import annotations

import pytest
from jtop import JtopException

from edge_roofline.platforms.jetson import jtop_source
from edge_roofline.platforms.jetson.jtop_source import RailSource
from test.platforms.test_jetson_platform import make
from test.platforms.tree import write, write_agx_orin_tree, write_fake_nvpmodel


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


def test_a_rail_jtop_reports_offline_is_missing_as_jtop_says(tmp_path, monkeypatch):
    """Before, a total rail the board is labelled with came out as "no power monitor channel is labelled
    VIN_SYS_5V0 (this board's: ..., VIN_SYS_5V0)", with the fix for another board."""
    write_agx_orin_tree(tmp_path)
    write_fake_nvpmodel(tmp_path)
    write(tmp_path / "usr/bin/nvpmodel_status", "0")
    client = FakeClient()
    client.power = {"rail": {"VDD_GPU_SOC": {"volt": 5000, "curr": 478, "power": 2390, "online": True},
                             "VDD_CPU_CV": {"volt": 5000, "curr": 159, "power": 795, "online": True},
                             "VIN_SYS_5V0": {"volt": 0, "curr": 0, "power": 0, "online": False}}}
    plat = make(tmp_path)
    plat._rails.close()
    plat._rails = RailSource(tmp_path, client_factory=lambda: client)
    assert plat.sample_power().missing_rails == {"VIN_SYS_5V0": "jtop reports it offline"}
    # A total rail neither the board's channels nor jtop know is still named as another board's.
    del client.power["rail"]["VIN_SYS_5V0"]
    monkeypatch.setattr(jtop_source.power, "find_rails", lambda root: [])
    plat._rails = RailSource(tmp_path, client_factory=lambda: client)
    assert "no power monitor channel is labelled VIN_SYS_5V0 (this board's: none)" in \
        plat.sample_power().missing_rails["VIN_SYS_5V0"]
