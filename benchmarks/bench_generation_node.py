"""A language model served through real ROS transport: the generation node (its own process,
zoo:tiny_decoder on ONNX Runtime on this CPU) answers GenerationRequests from this process, which
times what a subscriber sees, against the same server called in-process (no DDS).

Per request, sent one after another (the next once the last token arrived):
- through DDS, on this process's clock: TTFT = request published -> first GeneratedToken received;
  TPOT = gaps between tokens received (p50/p95 over every gap of every request); tokens/s = tokens
  over published -> last token; and the tokens delivered (every index 0..n-1 of every request);
- the node's own GenerationStats (its TTFT from the request's arrival at the node, TPOT of its steps);
- in-process: GenerationServer.process_next called in a loop (what the node's worker does).

Loopback only, Fast DDS with the shipped profile. Prints numbers; asserts nothing.

    python benchmarks/bench_generation_node.py [--prompt 64] [--tokens 64] [--requests 10] [--ort-threads N]
        [--model zoo:tiny_decoder]
"""

from __future__ import annotations

import argparse
import os
import statistics
import subprocess
import sys
import time
from pathlib import Path

REPO = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(REPO))

from edge_roofline.suite.env import localhost_environment  # noqa: E402

NODE_PARAMS = {"profile_every_requests": 0, "profile_every_s": 0.0, "publish_chart": False, "energy_wait_s": 0.1,
               "max_new_tokens_limit": 4096, "max_prompt_tokens": 4096}


def percentile(values: list[float], q: float) -> float:
    import numpy as np
    return float(np.percentile(values, q)) if values else float("nan")


def in_process(args, prompt: list[int]) -> dict:
    from edge_roofline.inference.ceilings import device_ceilings
    from edge_roofline.inference.generation_requests import GenerationConfig, Request, RequestEnd
    from edge_roofline.inference.generation_serving import GenerationServer

    server = GenerationServer(GenerationConfig(model=args.model, max_new_tokens=args.tokens, profile_every_s=0.0,
                                               profile_every_requests=0, max_new_tokens_limit=4096,
                                               max_prompt_tokens=4096,
                                               backend_options={"intra_op_threads": args.ort_threads}),
                              device_ceilings("agx_orin_64gb", "fp32", "cpu", None))
    server.schedule.done(0.0, 0.0, 0.0)  # no start report: time serving only
    ends = []
    for i in range(args.requests + 1):  # the first warms ONNX Runtime up
        server.submit(Request(arrival_s=time.monotonic(), arrival_wall_s=time.time(), request_id=str(i),
                              prompt_token_ids=prompt))
        while True:
            out = [o for o in server.process_next(0.0) if isinstance(o, RequestEnd)]
            if out:
                ends += out
                break
    server.close()
    stats = [e.stats for e in ends[1:]]
    return {"ttft_ms": statistics.median(s.ttft_s for s in stats) * 1e3,
            "tpot": [t * 1e3 for s in stats for t in s.tpot_s],
            "tokens_per_s": statistics.median(s.tokens_per_s for s in stats)}


def through_dds(args, prompt: list[int]) -> dict:
    env = localhost_environment(dict(os.environ), domain_id=args.domain_id)
    env["PYTHONPATH"] = os.pathsep.join([str(REPO), env.get("PYTHONPATH", "")]).rstrip(os.pathsep)
    os.environ.update({k: env[k] for k in env if k.startswith(("ROS_", "FASTRTPS", "FASTDDS"))})
    cmd = [sys.executable, "-m", "edge_roofline.nodes.generation", "--ros-args",
           "-p", f"model:={args.model}", "-p", f"max_new_tokens:={args.tokens}",
           "-p", f"ort_threads:={args.ort_threads}"]
    for name, value in NODE_PARAMS.items():
        cmd += ["-p", f"{name}:={str(value).lower() if isinstance(value, bool) else value}"]
    node_proc = subprocess.Popen(cmd, env=env, cwd=REPO, stdout=subprocess.DEVNULL, stderr=subprocess.STDOUT)

    import rclpy
    from edge_roofline.msg import GeneratedToken, GenerationRequest, GenerationStats
    from edge_roofline.ros.stamps import stamp_ns

    rclpy.init()
    node = rclpy.create_node("bench_generation_client")
    arrivals: dict[int, list[tuple[float, int]]] = {}
    node_stats: dict[int, GenerationStats] = {}
    node.create_subscription(GeneratedToken, "generation/tokens",
                             lambda m: arrivals.setdefault(stamp_ns(m.header.stamp), []).append(
                                 (time.monotonic(), m.index)), 1000)
    node.create_subscription(GenerationStats, "generation/stats",
                             lambda m: node_stats.__setitem__(stamp_ns(m.header.stamp), m), 100)
    pub = node.create_publisher(GenerationRequest, "generation/request", 10)

    def spin_until(predicate, timeout_s: float) -> bool:
        end = time.monotonic() + timeout_s
        while time.monotonic() < end:
            rclpy.spin_once(node, timeout_sec=0.01)
            if predicate():
                return True
        return False

    try:
        if not spin_until(lambda: pub.get_subscription_count() > 0, 120):
            raise SystemExit("the generation node did not subscribe within 120 s")
        sent: dict[int, float] = {}
        for _ in range(args.requests + 1):
            msg = GenerationRequest(prompt_token_ids=prompt, max_new_tokens=args.tokens)
            msg.header.stamp = node.get_clock().now().to_msg()
            key = stamp_ns(msg.header.stamp)
            sent[key] = time.monotonic()
            pub.publish(msg)
            spin_until(lambda: len(arrivals.get(key, ())) >= args.tokens and key in node_stats, 60)
        keys = list(sent)[1:]
    finally:
        node_proc.send_signal(2)
        node_proc.wait(30)
        node.destroy_node()
        rclpy.shutdown()
    delivered = sum(len(arrivals.get(k, ())) for k in keys)
    complete = sum(sorted(i for _, i in arrivals.get(k, ())) == list(range(args.tokens)) for k in keys)
    ttft = [arrivals[k][0][0] - sent[k] for k in keys if arrivals.get(k)]
    gaps = [(b - a) * 1e3 for k in keys for (a, _), (b, _) in zip(arrivals.get(k, []), arrivals.get(k, [])[1:])]
    rates = [len(arrivals[k]) / (arrivals[k][-1][0] - sent[k]) for k in keys if arrivals.get(k)]
    own = [node_stats[k] for k in keys if k in node_stats]
    return {"ttft_ms": statistics.median(ttft) * 1e3, "tpot": gaps, "tokens_per_s": statistics.median(rates),
            "delivered": f"{delivered} of {args.tokens * len(keys)} tokens, {complete} of {len(keys)} requests whole",
            "node_ttft_ms": statistics.median(s.ttft_ms for s in own),
            "node_tpot_p50_ms": statistics.median(s.tpot_p50_ms for s in own),
            "node_tpot_p95_ms": statistics.median(s.tpot_p95_ms for s in own),
            "node_tokens_per_s": statistics.median(s.tokens_per_s for s in own)}


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--model", default="zoo:tiny_decoder")
    ap.add_argument("--prompt", type=int, default=64)
    ap.add_argument("--tokens", type=int, default=64)
    ap.add_argument("--requests", type=int, default=10)
    ap.add_argument("--ort-threads", type=int, default=0, help="ONNX Runtime intra-op threads (0: one per core)")
    ap.add_argument("--domain-id", type=int, default=None)
    args = ap.parse_args()
    prompt = [(7 * i + 3) % 256 for i in range(args.prompt)]
    local = in_process(args, prompt)
    dds = through_dds(args, prompt)
    threads = args.ort_threads or "default"
    print(f"{args.model}, ONNX Runtime on this CPU ({threads} intra-op threads), prompt {args.prompt} tokens, "
          f"{args.tokens} generated, "
          f"{args.requests} requests one after another (medians; TPOT over every token gap)")
    print(f"{'':34} {'TTFT ms':>8} {'TPOT p50':>9} {'TPOT p95':>9} {'tokens/s':>9}")
    print(f"{'in-process (GenerationServer)':34} {local['ttft_ms']:>8.2f} {percentile(local['tpot'], 50):>9.3f} "
          f"{percentile(local['tpot'], 95):>9.3f} {local['tokens_per_s']:>9.0f}")
    print(f"{'node, its own GenerationStats':34} {dds['node_ttft_ms']:>8.2f} {dds['node_tpot_p50_ms']:>9.3f} "
          f"{dds['node_tpot_p95_ms']:>9.3f} {dds['node_tokens_per_s']:>9.0f}")
    print(f"{'through DDS, as a subscriber sees':34} {dds['ttft_ms']:>8.2f} {percentile(dds['tpot'], 50):>9.3f} "
          f"{percentile(dds['tpot'], 95):>9.3f} {dds['tokens_per_s']:>9.0f}")
    print(f"delivered through DDS: {dds['delivered']}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
