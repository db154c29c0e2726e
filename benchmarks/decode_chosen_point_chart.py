"""The chart in docs/governor.md (SIMULATION): where the governor left a language model on AGX Orin
(config/scenarios/llm/agx_chat.yaml, seed 0), its prefill and decode steps on the roofline of
that point, timed by the virtual board there, with MAXN's roof to compare.

    python benchmarks/decode_chosen_point_chart.py docs/img/decode_chosen_point.png
"""

import sys
from pathlib import Path

from edge_roofline.governor.eval.generation import load_generation_scenario, simulate
from edge_roofline.governor.eval.generation_sim import decoder_costs
from edge_roofline.governor.points import clocks_ceilings, effective_clocks
from edge_roofline.roofline.ceilings import max_clock_preset, preset_ceilings
from edge_roofline.roofline.charts import phase_roofline_chart
from edge_roofline.roofline.devices import get_device
from edge_roofline.roofline.phases import bound_phase
from edge_roofline.virtual.board import VirtualBoard
from edge_roofline.virtual.platform import VirtualPlatform

REPO = Path(__file__).resolve().parents[1]


def main(out: str) -> None:
    sc = load_generation_scenario(REPO / "config/scenarios/llm/agx_chat.yaml")
    run = simulate(sc, "governor")
    device = get_device(sc.device)
    board = VirtualBoard(sc.device, mode_id=max_clock_preset(device).mode_id)
    platform = VirtualPlatform(board)
    point = next(p for p in platform.operating_points() if p.name == run.points["at the end"])
    platform.apply(point)
    board.advance(0.05)  # settled
    ceilings = clocks_ceilings(device, sc.precision, effective_clocks(device, point), label=point.name)
    costs = decoder_costs(tuple(sorted(sc.model.items())), sc.precision)
    steps = [costs.step(sc.prompt_tokens, 0), costs.step(1, sc.prompt_tokens + sc.output_tokens // 2)]
    phases = [bound_phase(s, ceilings, board.timing(s.cost, sc.precision).latency_s) for s in steps]
    maxn = preset_ceilings(device, max_clock_preset(device).name, sc.precision)
    title = f"134 M decoder on {device.name} at the governor's point {point.name} (SIMULATION)"
    print(f"wrote {phase_roofline_chart(phases, out, compare=[maxn], title=title)}")
    for p in phases:
        print(f"{p.step.phase}: {p.arithmetic_intensity:.2f} FLOP/B, {p.measured_time_s * 1e3:.3f} ms, {p.bound}-bound")


if __name__ == "__main__":
    main(sys.argv[1] if len(sys.argv) > 1 else "decode_chosen_point.png")
