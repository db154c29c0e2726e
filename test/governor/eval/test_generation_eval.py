"""governor-eval for a language model (SIMULATION): the phases' samples reach their own streams,
the hindsight policies choose per phase, and the governor holds both targets for less energy per
output token than MAXN."""

import pytest

from edge_roofline.governor.config import ConfigError
from edge_roofline.governor.eval.generation import GenerationScenario, evaluate, load_generation_scenario, table

SMALL = {"hidden": 256, "layers": 4, "heads": 4, "vocab": 4096, "max_positions": 512}


@pytest.fixture(scope="module")
def runs():
    sc = GenerationScenario(name="small", device="agx_orin_64gb", request_rate_hz=4.0, prompt_tokens=96,
                            output_tokens=24, ttft_ms=10.0, tpot_ms=1.5, duration_s=8.0, model=SMALL,
                            governor={"dwell_s": 1.0})
    return sc, {r.policy: r for r in evaluate(sc)}


def test_every_request_gives_one_ttft_and_a_tpot_per_later_token(runs):
    sc, by = runs
    maxn = by["maxn"]
    requests = int(sc.duration_s * sc.request_rate_hz)
    assert len(maxn.ttft_s) == requests and len(maxn.tpot_s) == requests * (sc.output_tokens - 1)
    assert maxn.tokens == requests * sc.output_tokens
    # decode steps are far shorter than a prefill of 96 tokens, and both are within the targets at MAXN
    assert max(maxn.tpot_s) < sc.tpot_ms / 1e3 and max(maxn.ttft_s) < sc.ttft_ms / 1e3


def test_the_oracle_switches_per_phase_and_the_governor_saves_energy_within_both_targets(runs):
    sc, by = runs
    assert by["oracle"].switches >= 1 or by["oracle"].points["prefill"] == by["oracle"].points["decode"]
    assert by["best_static"].points["prefill"] == by["best_static"].points["decode"]
    assert by["best_static"].energy_per_token_j < by["maxn"].energy_per_token_j
    gov = by["governor"]
    assert gov.energy_per_token_j < 0.95 * by["maxn"].energy_per_token_j
    over_tpot = sum(t > sc.tpot_ms / 1e3 for t in gov.tpot_s) / len(gov.tpot_s)
    over_ttft = sum(t > sc.ttft_ms / 1e3 for t in gov.ttft_s) / len(gov.ttft_s)
    assert over_tpot <= 0.05 and over_ttft <= 0.05, (over_tpot, over_ttft)
    text = table(sc, list(by.values()))
    assert "| governor |" in text and "mJ / output token" in text


def test_the_readme_row_gives_the_verdict_from_the_governors_numbers(runs):
    from dataclasses import replace

    from edge_roofline.governor.eval.generation import readme_row, readme_table, summary
    from edge_roofline.governor.eval.tables import README_LLM_END, README_LLM_START

    sc, by = runs
    gov = summary(sc, list(by.values()))["governor"]
    row = readme_row(sc, list(by.values()))
    assert row.startswith(f"| small | agx_orin_64gb | {gov['energy_per_output_token_j'] * 1e3:.2f} | "
                          f"{gov['vs_maxn']:.3f} | {gov['vs_oracle']:.3f} |")
    worst = max(t["over_rate"] for t in gov["targets"].values())
    assert row.endswith("| PASS |") == (gov["vs_oracle"] <= 1.05 and worst <= 0.01)
    # The same runs against a 100x tighter TPOT: every decode step is over, and the row says FAIL.
    tight = replace(sc, tpot_ms=sc.tpot_ms / 100)
    assert readme_row(tight, list(by.values())).endswith("| FAIL |")
    block = readme_table([row], "python -m x --seeds 4", "abc123")
    assert block.startswith(README_LLM_START) and block.endswith(README_LLM_END) and row in block


def test_write_results_rewrites_the_readme_table_in_place(tmp_path):
    from edge_roofline.governor.eval.generation import write_results
    from edge_roofline.governor.eval.tables import README_LLM_END, README_LLM_START, RESULTS_FILE

    assert write_results(tmp_path, ["t"], ["| a | row |"], "cmd --seeds 4") == 2  # no docs folder: refused
    assert not (tmp_path / RESULTS_FILE).exists()
    (tmp_path / "docs").mkdir()
    readme = tmp_path / "README.md"
    readme.write_text(f"# x\n\n{README_LLM_START}\nold table\n{README_LLM_END}\n\nafter\n")
    for rows in (["| a | row |"], ["| b | row |"]):
        assert write_results(tmp_path, ["table"], rows, "cmd --seeds 4") == 0
    text = readme.read_text()
    assert "| b | row |" in text and "| a | row |" not in text and "old table" not in text
    assert text.count(README_LLM_START) == 1 and text.endswith("\n\nafter\n") and "`cmd --seeds 4`" in text
    assert "table" in (tmp_path / RESULTS_FILE).read_text()


def test_a_scenario_key_unknown_or_a_bad_value_is_refused_by_name(tmp_path):
    path = tmp_path / "bad.yaml"
    path.write_text("device: agx_orin_64gb\nrequest_rate_hz: 1\nprompt_tokens: 8\noutput_tokens: 4\n"
                    "ttft_ms: 10\ntpot_ms: 2\ntpot_target: 3\n")
    with pytest.raises(ConfigError, match="unknown key\\(s\\) tpot_target"):
        load_generation_scenario(path)
    path.write_text("device: agx_orin_64gb\nrequest_rate_hz: 1\nprompt_tokens: 8\noutput_tokens: 0\n"
                    "ttft_ms: 10\ntpot_ms: 2\n")
    with pytest.raises(ConfigError, match="output_tokens must be > 0"):
        load_generation_scenario(path)


def test_shipped_llm_scenarios_load():
    from pathlib import Path
    paths = sorted((Path(__file__).parents[3] / "config" / "scenarios" / "llm").glob("*.yaml"))
    assert len(paths) == 11
    scenarios = [load_generation_scenario(p) for p in paths]
    assert {sc.device for sc in scenarios} == {"agx_orin_64gb", "orin_nano_8gb", "agx_thor_t5000"}
    # the language model beside a 30 Hz detector on AGX Orin and Thor
    beside = {sc.device: sc.detector for sc in scenarios if sc.detector}
    assert set(beside) == {"agx_orin_64gb", "agx_thor_t5000"}
    assert all(d.input_rate_hz == 30 for d in beside.values())
