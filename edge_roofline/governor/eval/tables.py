"""The evaluation as text: one table per scenario and the policies x scenarios summary."""

from __future__ import annotations

from pathlib import Path

from .policies import POLICIES
from .score import Evaluation


def format_evaluation(ev: Evaluation) -> str:
    """The per-scenario table (policy, energy/inference, ratios, violations, p95, switches; with
    several streams also each policy's total energy and each stream's p95 and violations)."""
    s = ev.scenario
    lines = [f"governor evaluation -- SIMULATION on a virtual {s.device} "
             f"(physics perturbation {s.physics_perturbation:.0%}, seed {s.seed}): {s.name}",
             f"{'policy':<12} {'mJ/inference':>12} {'vs oracle':>9} {'vs MAXN':>8} {'violations':>10} "
             f"{'p95 ms':>8} {'switches':>8}  point(s)"]
    for name, sc in ev.scores.items():
        points = " | ".join(dict.fromkeys(p.point for p in sc.phases))
        lines.append(f"{name:<12} {sc.energy_per_inference_j * 1e3:>12.1f} {ev.ratio(name, 'oracle'):>9.3f} "
                     f"{ev.ratio(name, 'maxn'):>8.3f} {sc.violation_rate:>10.2%} {sc.p95_latency_ms:>8.2f} "
                     f"{sc.switches:>8d}  {points}")
        if s.multi_stream:  # the violation rate above is the worst stream's
            lines.append(f"{'':<12} {sc.energy_j:>10.1f} J  per stream (p95 ms, violations): " + "; ".join(
                f"{st.name} {st.p95_latency_ms:.2f}, {st.violation_rate:.2%}" for st in sc.streams))
    verdicts = []
    for key, c in ev.criteria().items():
        if c.get("applies", True):
            verdicts.append(f"{key} {c['value']:.3f} ({'<=' if key != 'saving_vs_maxn' else '>='} {c['limit']}) "
                            f"{'PASS' if c['passed'] else 'FAIL'}")
        else:
            verdicts.append(f"{key} {c['value']:.3f} (n/a: MAXN uses over half the target)")
    lines.append(f"criteria (issue #{13 if s.multi_stream else 6}): " + "; ".join(verdicts))
    return "\n".join(lines)


def format_summary(evaluations: list[Evaluation]) -> str:
    """Policies x scenarios: energy per inference relative to the oracle and to MAXN, the
    governor's violation rate and the criteria verdict."""
    policies = [p for p in POLICIES if all(p in ev.scores for ev in evaluations)]
    head = f"{'scenario':<22} {'oracle mJ':>9} " + " ".join(f"{p + '/or':>14}" for p in policies if p != "oracle")
    margin = "oracle_margin" in policies
    head += (f" {'gov/or_margin':>13}" if margin else "") + f" {'gov/MAXN':>8} {'gov viol':>8} {'gov sw':>6}  verdict"
    lines = ["SIMULATION (virtual Jetson): energy per inference relative to the per-phase oracle "
             "(several streams: the joint one; gov viol: the worst stream's)", head]
    for ev in evaluations:
        gov = ev.scores.get("governor")
        row = f"{Path(ev.scenario.name).stem:<22} {ev.scores['oracle'].energy_per_inference_j * 1e3:>9.1f} "
        row += " ".join(f"{ev.ratio(p, 'oracle'):>14.3f}" for p in policies if p != "oracle")
        if gov is not None:
            failed = [k for k, c in ev.criteria().items() if not c["passed"]]
            row += (f" {ev.ratio('governor', 'oracle_margin'):>13.3f}" if margin else "")
            row += (f" {ev.ratio('governor', 'maxn'):>8.3f} {gov.violation_rate:>8.2%} {gov.switches:>6d}  "
                    + ("PASS" if not failed else "FAIL: " + ", ".join(failed)))
        lines.append(row)
    return "\n".join(lines)
