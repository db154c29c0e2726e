"""Token generation with a KV cache in ONNX Runtime on this CPU: time to first token, time per
output token (p50/p95), tokens/s, and what a decode step moves (the cost model's bytes per
step over the measured TPOT: the bandwidth the step achieved).

Zoo decoders with random weights (``zoo:tiny_decoder`` and a larger one), greedy decoding, a
prompt of ``--prompt`` tokens and ``--tokens`` generated, ``--repeats`` requests each (the
median request is reported; the first request per model warms ONNX Runtime up and is dropped).

    python benchmarks/bench_generation.py [--prompt 64] [--tokens 64] [--repeats 3]
"""

from __future__ import annotations

import argparse
import statistics
import sys
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

from edge_roofline.inference.generation import Generator  # noqa: E402
from edge_roofline.models import zoo  # noqa: E402
from edge_roofline.roofline.decoder import DecoderCostModel  # noqa: E402

MODELS = {
    "tiny_decoder (1.0 M params)": {},
    "decoder 512x8 (34 M params)": {"hidden": 512, "layers": 8, "heads": 8, "vocab": 8192,
                                    "max_positions": 1024},
}


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--prompt", type=int, default=64)
    parser.add_argument("--tokens", type=int, default=64)
    parser.add_argument("--repeats", type=int, default=3)
    args = parser.parse_args()
    prompt = [(7 * i + 3) % 500 for i in range(args.prompt)]
    print(f"ONNX Runtime, CPU, fp32, batch 1, prompt {args.prompt} tokens, {args.tokens} generated, "
          f"median of {args.repeats} requests")
    print(f"{'model':<28} {'TTFT ms':>8} {'TPOT p50':>9} {'TPOT p95':>9} {'decode tok/s':>12} "
          f"{'e2e tok/s':>9} {'MB/step':>8} {'FLOP/B':>7} {'GB/s':>6}")
    for label, opts in MODELS.items():
        model = zoo.build("tiny_decoder", **opts)
        generator = Generator(model)
        generator.generate(prompt, 4)  # warm-up
        runs = sorted((generator.generate(prompt, args.tokens).stats for _ in range(args.repeats)),
                      key=lambda s: s.total_s)
        s = runs[len(runs) // 2]
        step = DecoderCostModel(model, precision="fp32").step(1, args.prompt + args.tokens // 2)
        print(f"{label:<28} {s.ttft_s * 1e3:>8.2f} {s.tpot_p50_s * 1e3:>9.3f} {s.tpot_p95_s * 1e3:>9.3f} "
              f"{s.decode_tokens_per_s:>12.1f} {s.tokens_per_s:>9.1f} {step.bytes / 1e6:>8.1f} "
              f"{step.arithmetic_intensity:>7.2f} {step.bytes / s.tpot_p50_s / 1e9:>6.1f}")
        print(f"  spread over requests: decode tok/s "
              f"{statistics.mean(r.decode_tokens_per_s for r in runs):.1f} mean, "
              f"{min(r.decode_tokens_per_s for r in runs):.1f}-{max(r.decode_tokens_per_s for r in runs):.1f}")
        generator.close()
    return 0


if __name__ == "__main__":
    sys.exit(main())
