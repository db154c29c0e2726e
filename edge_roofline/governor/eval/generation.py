"""governor-eval for a language model (SIMULATION): requests arrive periodically, each a prefill
of its prompt then one decode step per further output token (the KV cache growing), served one
request at a time (a later one queues) on a freshly booted ``VirtualBoard``. The governor holds
two streams, one per phase (``StreamConfig.phase``): time to first token (arrival to the
prefill's end, the queue included) and time per output token (each decode step).

Policies: ``maxn``; ``best_static`` (in hindsight, the one point of least energy per request
meeting both targets); ``oracle`` (per phase, in hindsight: the least-energy prefill point during
prefills and the least-energy decode point during decodes, switched at every phase change with
the board's own settle times); ``governor``. The hindsight choices cost each candidate's steps
without jitter and keep them under ``HINDSIGHT_HEADROOM`` of the target (the run's jitter and
queueing are not in that cost). Result: energy per output token (the board's whole energy over
the run, idle between requests included, over the tokens generated) and each phase's p95 and
share of samples over its target.
"""

from __future__ import annotations

import math
import random
from dataclasses import dataclass, field, fields
from functools import lru_cache
from pathlib import Path
from typing import Any, Mapping

import numpy as np

from edge_roofline.clock import SimClock
from edge_roofline.roofline.ceilings import max_clock_preset, preset_ceilings
from edge_roofline.roofline.model import analyze_roofline

from ..config import ConfigError, GovernorConfig
from ..core import Governor
from ..points import candidate_points

SAMPLE_HZ = 50.0  # power sampling (platform.sample())
STEP_S = 0.1  # governor step period
HINDSIGHT_HEADROOM = 0.9  # a hindsight point's jitter-free step time stays under this x target
POLICIES = ("maxn", "best_static", "oracle", "governor")


@dataclass(frozen=True)
class GenerationScenario:
    name: str
    device: str
    request_rate_hz: float
    prompt_tokens: int
    output_tokens: int
    ttft_ms: float  # target at ``percentile`` of time to first token
    tpot_ms: float  # target at ``percentile`` of time per output token
    percentile: float = 95.0
    duration_s: float = 60.0
    precision: str = "fp16"
    seed: int = 0
    model: Mapping[str, Any] = field(default_factory=dict)  # zoo tiny_decoder options
    governor: Mapping[str, Any] = field(default_factory=dict)  # GovernorConfig keys

    def __post_init__(self) -> None:
        for name in ("request_rate_hz", "prompt_tokens", "output_tokens", "ttft_ms", "tpot_ms", "duration_s"):
            if not getattr(self, name) > 0:
                raise ConfigError(f"scenario {self.name}: {name} must be > 0, got {getattr(self, name)}")


def load_generation_scenario(path: str | Path) -> GenerationScenario:
    """A ``config/scenarios/llm_*.yaml`` file; unknown keys refused by name."""
    import yaml

    path = Path(path)
    try:
        data = yaml.safe_load(path.read_text()) or {}
    except (OSError, yaml.YAMLError) as exc:
        raise ConfigError(f"cannot read scenario {path}: {exc}") from None
    known = {f.name for f in fields(GenerationScenario)}
    unknown = sorted(set(data) - known)
    if unknown:
        raise ConfigError(f"scenario {path}: unknown key(s) {', '.join(unknown)}; known: {', '.join(sorted(known))}")
    try:
        return GenerationScenario(**{"name": path.stem, **data})
    except TypeError as exc:
        raise ConfigError(f"scenario {path}: {exc}") from None


@lru_cache(maxsize=8)
def decoder_costs(model_items: tuple, precision: str):
    from edge_roofline.models import zoo
    from edge_roofline.roofline.decoder import DecoderCostModel

    return DecoderCostModel(zoo.build("tiny_decoder", **dict(model_items)), precision=precision)


@dataclass
class Run:
    """One policy's run (SIMULATION)."""

    policy: str
    energy_j: float = 0.0
    tokens: int = 0
    ttft_s: list[float] = field(default_factory=list)
    tpot_s: list[float] = field(default_factory=list)
    switches: int = 0
    points: dict[str, str] = field(default_factory=dict)  # hindsight: per phase; governor: in force at the end

    @property
    def energy_per_token_j(self) -> float:
        return self.energy_j / self.tokens if self.tokens else math.nan


class _Sim:
    """A board, its platform and the loop that runs steps while sampling power and stepping."""

    def __init__(self, sc: GenerationScenario, governor=None) -> None:
        from edge_roofline.virtual.board import VirtualBoard
        from edge_roofline.virtual.platform import VirtualPlatform

        self.sc, self.clock = sc, SimClock()
        self.board = VirtualBoard(sc.device, mode_id=max_clock_preset(sc.device).mode_id, seed=sc.seed,
                                  clock=self.clock)
        self.platform = VirtualPlatform(self.board)
        self.governor = governor
        self.rng = random.Random(sc.seed + 1)
        self.next_sample = self._period()
        self.next_step = STEP_S

    def _period(self) -> float:
        return self.board.now_s + self.rng.uniform(0.5, 1.5) / SAMPLE_HZ  # jittered: no aliasing

    def advance(self, until_s: float, activity=None) -> None:
        while self.board.now_s < until_s:
            t = min(self.next_sample, self.next_step, until_s)
            self.board.advance(max(t - self.board.now_s, 0.0), activity)
            if t == self.next_sample:
                s = self.platform.sample()
                if self.governor is not None:
                    self.governor.observe_power(s.total_power_w, t, s.temperatures_c)
                self.next_sample = self._period()
            elif t == self.next_step:
                if self.governor is not None:
                    self.governor.step(t)
                self.next_step = t + STEP_S

    def run_step(self, cost) -> float:
        timing, activity = self.board.prepare_inference(cost, self.sc.precision)
        self.advance(self.board.now_s + timing.latency_s, activity)
        self.board.finish_inference()
        return timing.latency_s


def _costs(sc: GenerationScenario):
    costs = decoder_costs(tuple(sorted(sc.model.items())), sc.precision)
    return costs.prefill_cost(sc.prompt_tokens), [costs.decode_cost(sc.prompt_tokens + i)
                                                  for i in range(sc.output_tokens - 1)]


def simulate(sc: GenerationScenario, policy: str, points: dict[str, Any] | None = None) -> Run:
    """One run; ``points``: the hindsight choice (``{"prefill": p, "decode": p}``) for
    best_static and oracle."""
    prefill, decodes = _costs(sc)
    sim, gov = _Sim(sc), None
    if policy == "governor":
        gov = sim.governor = _governor(sc, sim, prefill, decodes[len(decodes) // 2] if decodes else prefill)
    run = Run(policy)
    phase_point = dict(points or {})
    if phase_point:
        sim.platform.apply(phase_point["prefill"])
    for k in range(int(sc.duration_s * sc.request_rate_hz)):
        arrival_s = k / sc.request_rate_hz
        sim.advance(arrival_s)  # idle until it arrives (a late request starts at once: it queued)
        if policy == "oracle" and sim.platform.current_operating_point() != phase_point["prefill"]:
            sim.platform.apply(phase_point["prefill"])
            run.switches += 1
        sim.run_step(prefill)
        run.ttft_s.append(sim.board.now_s - arrival_s)
        if gov is not None and gov.observe_inference(run.ttft_s[-1], sim.board.now_s, stream="ttft"):
            gov.step(sim.board.now_s)  # a late step is acted on at once, as the node does
        if policy == "oracle" and decodes and phase_point["decode"] != phase_point["prefill"]:
            sim.platform.apply(phase_point["decode"])
            run.switches += 1
        for cost in decodes:
            run.tpot_s.append(sim.run_step(cost))
            if gov is not None and gov.observe_inference(run.tpot_s[-1], sim.board.now_s, stream="tpot"):
                gov.step(sim.board.now_s)
        run.tokens += 1 + len(decodes)
    sim.advance(sc.duration_s)
    run.energy_j = sim.board.energy_j
    run.points = {phase: p.name for phase, p in phase_point.items()}
    if gov is not None:
        run.points = {"at the end": sim.platform.current_operating_point().name}
        gov.shutdown()
        run.switches = gov.switches
    return run


def _governor(sc: GenerationScenario, sim: _Sim, prefill, decode) -> Governor:
    streams = [{"name": "ttft", "phase": "prefill", "target_latency_ms": sc.ttft_ms, "percentile": sc.percentile},
               {"name": "tpot", "phase": "decode", "target_latency_ms": sc.tpot_ms, "percentile": sc.percentile}]
    config = GovernorConfig.from_dict({**sc.governor, "streams": streams, "state_path": ""})
    ceilings = preset_ceilings(sc.device, max_clock_preset(sc.device).name, sc.precision)
    analyses = {"ttft": analyze_roofline(prefill, ceilings), "tpot": analyze_roofline(decode, ceilings)}
    return Governor(sim.platform, config, analyses, sim.clock)


def hindsight(sc: GenerationScenario) -> dict[str, dict[str, Any]]:
    """Per candidate point, each phase's jitter-free step time and energy; then the oracle's and
    best_static's points. Returns {"oracle": {...}, "best_static": {...}}."""
    from edge_roofline.virtual.physics import module_power_w, rail_power_w

    prefill, decodes = _costs(sc)
    decode = decodes[len(decodes) // 2] if decodes else None
    sim = _Sim(sc)
    config = GovernorConfig.from_dict({**sc.governor, "state_path": ""})
    cost_of = {}
    for point in candidate_points(sim.platform, config.points):
        sim.platform.apply(point)
        sim.board.advance(0.05)  # settled
        b = sim.board
        out = {}
        for phase, cost in (("prefill", prefill), ("decode", decode)):
            if cost is None:
                continue
            latency_s = b.timing(cost, sc.precision).latency_s
            _, activity = b.prepare_inference(cost, sc.precision)
            power_w = module_power_w(b.device, rail_power_w(b.device, b.params, b.silicon_clocks(), activity,
                                                            b.thermal.temperature_c))
            out[phase] = (latency_s, power_w * latency_s)
        cost_of[point] = out
    limit = {"prefill": HINDSIGHT_HEADROOM * sc.ttft_ms / 1e3, "decode": HINDSIGHT_HEADROOM * sc.tpot_ms / 1e3}
    n_decode = sc.output_tokens - 1

    def meets(point, phase) -> bool:
        return phase not in cost_of[point] or cost_of[point][phase][0] <= limit[phase]

    def energy(point, phase) -> float:
        return cost_of[point][phase][1] if phase in cost_of[point] else 0.0

    maxn = next(p for p in cost_of if p.name == max_clock_preset(sc.device).name)
    choose = {}
    for phase in ("prefill", "decode"):
        ok = [p for p in cost_of if meets(p, phase)] or [maxn]
        choose[phase] = min(ok, key=lambda p: energy(p, phase))
    both = [p for p in cost_of if meets(p, "prefill") and meets(p, "decode")] or [maxn]
    static = min(both, key=lambda p: energy(p, "prefill") + n_decode * energy(p, "decode"))
    return {"oracle": choose, "best_static": {"prefill": static, "decode": static}}


def evaluate(sc: GenerationScenario, seeds: tuple[int, ...] = (0,)) -> list[Run]:
    """Every policy over ``seeds`` (the runs in policy order, seeds within)."""
    from dataclasses import replace

    runs = {}
    for seed in seeds:
        s = replace(sc, seed=seed)
        chosen = hindsight(s)
        for policy in POLICIES:
            runs[policy, seed] = simulate(s, policy, chosen.get(policy))
    return [runs[policy, seed] for policy in POLICIES for seed in seeds]


def table(sc: GenerationScenario, runs: list[Run]) -> str:
    """A Markdown table: energy per output token and each phase's p95 and share over its target."""
    lines = [f"{sc.name} ({sc.device}, prompt {sc.prompt_tokens}, {sc.output_tokens} tokens out, "
             f"{sc.request_rate_hz:g} req/s; TTFT p{sc.percentile:g} <= {sc.ttft_ms:g} ms, TPOT <= {sc.tpot_ms:g} ms) "
             f"SIMULATION",
             "", "| policy | mJ / output token | vs MAXN | TTFT p95 ms | TTFT over | TPOT p95 ms | TPOT over "
             "| switches | points |", "|---|---|---|---|---|---|---|---|---|"]
    by = {}
    for r in runs:
        by.setdefault(r.policy, []).append(r)
    maxn = np.mean([r.energy_per_token_j for r in by["maxn"]])
    for policy, rs in by.items():
        e = np.mean([r.energy_per_token_j for r in rs])
        ttft = np.concatenate([r.ttft_s for r in rs])
        tpot = np.concatenate([r.tpot_s for r in rs]) if any(r.tpot_s for r in rs) else np.array([math.nan])
        over_ttft = np.mean(ttft > sc.ttft_ms / 1e3)
        over_tpot = np.mean(tpot > sc.tpot_ms / 1e3)
        points = "; ".join(sorted({f"{k}: {v}" for r in rs for k, v in r.points.items()}))
        lines.append(f"| {policy} | {e * 1e3:.3f} | {e / maxn:.3f} | {np.percentile(ttft, 95) * 1e3:.2f} | "
                     f"{over_ttft:.1%} | {np.nanpercentile(tpot, 95) * 1e3:.3f} | {over_tpot:.1%} | "
                     f"{np.mean([r.switches for r in rs]):.0f} | {points} |")
    return "\n".join(lines)


def results_section(tables: list[str], command: str, commit: str, date_utc: str) -> str:
    """The language models' section of the results file (tables.LLM_SECTION_START/END)."""
    from .tables import LLM_SECTION_END, LLM_SECTION_START

    return "\n".join([LLM_SECTION_START, "", "## Language models: energy per output token", "",
                      f"Generated by `{command}` at commit {commit} on {date_utc}. SIMULATION. Per request: a "
                      f"prefill, then decode steps with the KV cache growing; energy per output token includes "
                      f"idle time between requests; `vs MAXN` < 1 is energy saved. The oracle switches at every "
                      f"phase change (it pays each switch's transient).", "",
                      "\n\n".join(tables), "", LLM_SECTION_END])


def main(argv: list[str] | None = None) -> int:
    """``python -m edge_roofline.governor.eval.generation [--seeds N] [--write-results] SCENARIO.yaml ...``:
    a table each (``--write-results``: also into the results file's language models section)."""
    import argparse
    import shlex
    import sys

    from .tables import RESULTS_FILE, generated_stamp, with_llm_section

    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("scenarios", nargs="+")
    parser.add_argument("--seeds", type=int, default=1)
    parser.add_argument("--write-results", action="store_true", help=f"also write the tables into {RESULTS_FILE}")
    args = parser.parse_args(argv)
    try:
        scenarios = [load_generation_scenario(path) for path in args.scenarios]
    except ConfigError as exc:
        print(f"error: {exc}")
        return 2
    tables = []
    for sc in scenarios:
        tables.append(table(sc, evaluate(sc, tuple(range(args.seeds)))))
        print(tables[-1], end="\n\n", flush=True)
    if args.write_results:
        repo = Path.cwd()  # run from the repository root, as the bench is
        path = repo / RESULTS_FILE
        if not path.parent.is_dir():
            print(f"error: no {path.parent} here; write the results from the repository root")
            return 2
        command = shlex.join(["python", "-m", "edge_roofline.governor.eval.generation",
                              *(argv if argv is not None else sys.argv[1:])])
        section = results_section(tables, command, *generated_stamp(repo))
        path.write_text(with_llm_section(path.read_text() if path.exists() else "", section))
        print(f"wrote {RESULTS_FILE}")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
