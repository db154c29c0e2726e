"""How long ``analyze_model`` + ``analyze_roofline`` take on a 1,000-node model (target: < 2 s).

A residual stack of Conv -> BatchNormalization -> Relu -> Add blocks built with onnx.helper,
saved to a temporary file and analysed from the file, as the CLI does.

    python benchmarks/bench_analyze.py [--nodes 1000] [--repeats 3]
"""

from __future__ import annotations

import argparse
import sys
import tempfile
import time
from pathlib import Path

import numpy as np
import onnx
from onnx import TensorProto, helper, numpy_helper

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

from edge_roofline.roofline.ceilings import preset_ceilings  # noqa: E402
from edge_roofline.roofline.costs import analyze_model  # noqa: E402
from edge_roofline.roofline.model import analyze_roofline  # noqa: E402


def residual_stack(nodes: int, channels: int = 32, size: int = 56) -> onnx.ModelProto:
    rng = np.random.default_rng(0)
    graph_nodes, inits, x = [], [], "input"
    for b in range(nodes // 4):
        p = f"block{b}"
        inits.append(numpy_helper.from_array(
            rng.standard_normal((channels, channels, 3, 3)).astype(np.float32), f"{p}.w"))
        inits += [numpy_helper.from_array(np.ones(channels, np.float32), f"{p}.{k}") for k in "sbmv"]
        graph_nodes += [
            helper.make_node("Conv", [x, f"{p}.w"], [f"{p}.conv"], name=f"{p}.conv", pads=[1] * 4),
            helper.make_node("BatchNormalization", [f"{p}.conv"] + [f"{p}.{k}" for k in "sbmv"],
                             [f"{p}.bn"], name=f"{p}.bn"),
            helper.make_node("Relu", [f"{p}.bn"], [f"{p}.relu"], name=f"{p}.relu"),
            helper.make_node("Add", [f"{p}.relu", x], [f"{p}.add"], name=f"{p}.add"),
        ]
        x = f"{p}.add"
    graph = helper.make_graph(
        graph_nodes, "residual_stack",
        [helper.make_tensor_value_info("input", TensorProto.FLOAT, ["N", channels, size, size])],
        [helper.make_tensor_value_info(x, TensorProto.FLOAT, None)], inits)
    return helper.make_model(graph, opset_imports=[helper.make_opsetid("", 17)])


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--nodes", type=int, default=1000)
    parser.add_argument("--repeats", type=int, default=3)
    args = parser.parse_args()
    ceilings = preset_ceilings("agx_orin_64gb", "MAXN", "fp16")
    with tempfile.TemporaryDirectory() as tmp:
        path = Path(tmp) / "stack.onnx"
        onnx.save(residual_stack(args.nodes), str(path))
        size_mb = path.stat().st_size / 1e6
        best = float("inf")
        for _ in range(args.repeats):
            start = time.perf_counter()
            cost = analyze_model(path, precision="fp16", batch=1)
            analysis = analyze_roofline(cost, ceilings)
            best = min(best, time.perf_counter() - start)
    print(f"{len(cost.layers)} nodes, {size_mb:.0f} MB "
          f"model: analyze_model + analyze_roofline best of {args.repeats}: {best:.3f} s "
          f"({'under' if best < 2.0 else 'OVER'} the 2 s target); "
          f"{cost.total_flops / 1e9:.1f} GFLOP, {analysis.attainable_time_s * 1e3:.2f} ms attainable")
    return 0


if __name__ == "__main__":
    sys.exit(main())
