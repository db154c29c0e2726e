"""Each governor setting is defined once (a GovernorConfig field): the node's parameters, the
docs/nodes.md table and the config cannot drift."""

from dataclasses import dataclass, field, fields

import pytest

from edge_roofline.governor.config import ConfigError, GovernorConfig, SafetyConfig
from edge_roofline.governor.node_parameters import (COMMAND, DOCS, NODE_ONLY, PARAMETERS, docs_section,
                                                    documented_section)
from edge_roofline.governor.settings import config_dict, markdown_table, parameter_table, parameter_values, setting


def node_defaults(table=PARAMETERS) -> dict:
    return {name: default for name, (default, _) in table.items()}


def test_docs_table_is_the_generated_one():
    assert documented_section(DOCS.read_text()) == docs_section(), \
        f"docs/nodes.md's governor table is not what GovernorConfig says: run `{COMMAND}`"


def test_every_config_field_is_a_node_parameter_with_its_default():
    config = GovernorConfig()
    for f in fields(GovernorConfig):
        if f.name in ("points", "safety"):
            for sub in fields(getattr(config, f.name)):
                assert f"{f.name}.{sub.name}" in PARAMETERS
        else:
            assert f.name in PARAMETERS
    assert PARAMETERS["safety.stale_telemetry_s"] == (SafetyConfig.stale_telemetry_s,
                                                      SafetyConfig.__dataclass_fields__["stale_telemetry_s"]
                                                      .metadata["doc"])
    assert PARAMETERS["mode"][0] == "advise" and config.mode == "active"  # the node starts in advise
    assert not set(NODE_ONLY) & set(parameter_table(GovernorConfig))


def test_node_defaults_give_the_config_defaults():
    built = GovernorConfig.from_dict(config_dict(GovernorConfig, node_defaults()))
    assert built == GovernorConfig(mode="advise")


@dataclass(frozen=True)
class _Safety(SafetyConfig):
    verdict_ttl_s: float = setting(10.0, "a ruled-out point may be tried again after this long")


@dataclass(frozen=True)
class _Extended(GovernorConfig):
    burst_samples: int = setting(4, "late samples in a row that tell a burst from a tail")
    safety: _Safety = field(default_factory=_Safety)


def test_a_new_field_is_a_parameter_a_docs_row_and_a_config_key():
    table = parameter_table(_Extended)
    assert table["burst_samples"] == (4, "late samples in a row that tell a burst from a tail")
    assert table["safety.verdict_ttl_s"][0] == 10.0
    rows = markdown_table(table).splitlines()
    assert "| `burst_samples` | `4` | late samples in a row that tell a burst from a tail |" in rows
    assert any(row.startswith("| `safety.verdict_ttl_s` | `10.0` |") for row in rows)
    values = {**node_defaults(table), "burst_samples": 7, "safety.verdict_ttl_s": 2.5}
    built = _Extended.from_dict(config_dict(_Extended, values))
    assert (built.burst_samples, built.safety.verdict_ttl_s) == (7, 2.5)
    assert _Extended.from_dict({"safety": {"verdict_ttl_s": 1}}).safety.verdict_ttl_s == 1.0
    with pytest.raises(ConfigError, match="unknown key.*verdict_tll_s"):
        _Extended.from_dict({"safety": {"verdict_tll_s": 1}})


def test_a_setting_without_a_meaning_is_refused_by_name():
    @dataclass(frozen=True)
    class Plain(GovernorConfig):
        plain_s: float = 1.0

    assert parameter_table(Plain)["plain_s"] == (1.0, "")  # the node still has it
    with pytest.raises(ValueError, match=r"without a meaning: plain_s; declare each as .*setting\(DEFAULT"):
        markdown_table(parameter_table(Plain))


def test_values_in_force_read_back_as_parameters():
    values = {**node_defaults(), "target_latency_ms": 20.0, "points.core_options": "6,3",
              "streams": "[{name: det, target_latency_ms: 30.0, stats_topic: /det/inference/stats}, "
                         "{name: seg, target_latency_ms: 90.0, percentile: 90.0}]"}
    config = GovernorConfig.from_dict(config_dict(GovernorConfig, values))
    assert parameter_values(config, values) == {}  # nothing to correct
    moved = config.with_target(45.0, 99.0, "seg")
    stale = parameter_values(moved, values)
    assert list(stale) == ["streams"]
    assert GovernorConfig.from_dict(config_dict(GovernorConfig, {**values, **stale})) == moved
    assert parameter_values(config)["points.core_options"] == "6,3"


def test_bad_core_options_are_one_line_naming_the_parameter():
    with pytest.raises(ConfigError, match=r"points.core_options must be comma-separated core counts .*'6,x'"):
        config_dict(GovernorConfig, {**node_defaults(), "points.core_options": "6,x"})
