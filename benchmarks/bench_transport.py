"""Frames through real DDS: a plain rclpy camera process publishes bgr8 images at 30 Hz into the
inference node (its own process, zoo tiny_cnn on ONNX Runtime); this process receives the
node's outputs and InferenceStats. Loopback only, Fast DDS, the suite's profile unless told.

Reports per image size: frames delivered / sent (an output whose header stamp is a frame the
camera published), publish-to-output latency p50/p95 (the camera stamps header.stamp when it
publishes; the outputs carry that stamp; the clock is the same on one machine), the node's own
end_to_end_ms p50 for comparison, the node's counters, its CPU % of one core and RSS.

Prints numbers; asserts nothing. Goals: >= 99 % delivered at 640x480 and >= 95 % at 1920x1080.

    python benchmarks/bench_transport.py [--seconds S] [--sizes 640x480,1920x1080] [--runs N]
        [--profile FILE] [--env KEY=VALUE ...] [--node-param NAME=VALUE ...]

--profile sets the Fast DDS profile variable for all three processes (default: the shipped
config/fastdds_localhost.xml); --env sets further variables for all three (e.g.
FASTDDS_BUILTIN_TRANSPORTS=UDPv4), to compare transports one change at a time.
"""

from __future__ import annotations

import argparse
import json
import os
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

REPO = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(REPO))

CLOCK_TICKS_PER_S = os.sysconf("SC_CLK_TCK")


def parse_args(argv=None):
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--seconds", type=float, default=10.0, help="stream length per size")
    ap.add_argument("--rate-hz", type=float, default=30.0)
    ap.add_argument("--sizes", default="640x480,1920x1080")
    ap.add_argument("--runs", type=int, default=1)
    ap.add_argument("--profile", default="", help="Fast DDS profile of every process (default: the shipped one)")
    ap.add_argument("--env", action="append", default=[], metavar="KEY=VALUE")
    ap.add_argument("--node-param", action="append", default=[], metavar="NAME=VALUE")
    ap.add_argument("--camera-qos", choices=("default", "sensor"), default="default",
                    help="default: reliable, depth 10 (create_publisher(Image, topic, 10)); sensor: best effort, 5")
    ap.add_argument("--domain-id", type=int, default=None)
    # internal: the camera process
    ap.add_argument("--role", choices=("bench", "camera"), default="bench", help=argparse.SUPPRESS)
    ap.add_argument("--size", default="640x480", help=argparse.SUPPRESS)
    ap.add_argument("--out", default="", help=argparse.SUPPRESS)
    return ap.parse_args(argv)


def environment(args) -> dict[str, str]:
    """The environment of all three processes: loopback only, one domain, the chosen profile."""
    from edge_roofline.suite.env import localhost_environment, profile_variable
    env = dict(os.environ)
    if args.profile:
        env[profile_variable(env)] = str(Path(args.profile).resolve())
    domain_id = args.domain_id if args.domain_id is not None else 1 + (os.getpid() * 13) % 100
    localhost_environment(env, domain_id=domain_id)
    for item in args.env:
        key, _, value = item.partition("=")
        env[key] = value
    env["PYTHONPATH"] = os.pathsep.join([str(REPO), env.get("PYTHONPATH", "")]).rstrip(os.pathsep)
    env["PYTHONUNBUFFERED"] = "1"
    return env


# ---- the camera process ------------------------------------------------------------------

def run_camera(args) -> int:
    """Publish ``seconds * rate_hz`` bgr8 frames at ``rate_hz`` once the node subscribes; write
    the stamps sent and the publish cost to ``--out``."""
    import rclpy
    from rclpy.qos import qos_profile_sensor_data
    from sensor_msgs.msg import Image

    from edge_roofline.inference.synthetic import frame

    width, height = (int(v) for v in args.size.split("x"))
    rclpy.init()
    node = rclpy.create_node("bench_camera")
    pub = node.create_publisher(Image, "image", qos_profile_sensor_data if args.camera_qos == "sensor" else 10)
    messages = []
    for i in range(4):  # a few distinct frames, built once: the camera's cost is publish() alone
        pixels = frame(i, width, height, "bgr8")
        messages.append(Image(height=height, width=width, encoding="bgr8", is_bigendian=0, step=width * 3,
                              data=pixels.tobytes()))
    deadline = time.monotonic() + 60.0
    while pub.get_subscription_count() < 1 and time.monotonic() < deadline:
        time.sleep(0.05)
    time.sleep(1.0)  # let every endpoint of both participants match (SHM locators included)
    count = int(round(args.seconds * args.rate_hz))
    period_s = 1.0 / args.rate_hz
    stamps, publish_s = [], []
    cpu0 = time.process_time()
    start = time.monotonic()
    for i in range(count):
        target = start + i * period_s
        delay = target - time.monotonic()
        if delay > 0:
            time.sleep(delay)
        msg = messages[i % len(messages)]
        msg.header.stamp = node.get_clock().now().to_msg()
        t0 = time.perf_counter()
        pub.publish(msg)
        publish_s.append(time.perf_counter() - t0)
        stamps.append(msg.header.stamp.sec * 10**9 + msg.header.stamp.nanosec)
    wall_s = time.monotonic() - start
    Path(args.out).write_text(json.dumps({
        "stamps_ns": stamps, "publish_ms_p50": 1e3 * statistics.median(publish_s),
        "achieved_hz": count / wall_s if wall_s > 0 else 0.0,
        "cpu_pct": 100 * (time.process_time() - cpu0) / wall_s if wall_s > 0 else 0.0}))
    time.sleep(1.0)  # stay matched until the last fragments are out
    node.destroy_node()
    rclpy.try_shutdown()
    return 0


# ---- the bench (receiver) ----------------------------------------------------------------

def cpu_ticks(pid: int) -> int:
    fields = Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()
    return int(fields[11]) + int(fields[12])  # utime + stime (fields 14 and 15 of stat)


def rss_mb(pid: int) -> float:
    for line in Path(f"/proc/{pid}/status").read_text().splitlines():
        if line.startswith("VmRSS:"):
            return int(line.split()[1]) / 1024
    return float("nan")


def percentile(values, q):
    if not values:
        return float("nan")
    ordered = sorted(values)
    return ordered[min(len(ordered) - 1, int(round(q / 100 * (len(ordered) - 1))))]


def median_of(stats, field: str) -> float:
    return statistics.median([getattr(m, field) for m in stats]) if stats else float("nan")


def node_command(params: list[str]) -> list[str]:
    # device set: the catalogue's roofs, so start-up does not measure this CPU (ERT, ~10 s)
    defaults = {"model": "zoo:tiny_cnn", "device": "agx_orin_64gb", "engine": "cpu"}
    for item in params:
        name, _, value = item.partition("=")
        defaults[name] = value
    cmd = [sys.executable, "-m", "edge_roofline.nodes.inference", "--ros-args"]
    for name, value in defaults.items():
        cmd += ["-p", f"{name}:={value}"]
    return cmd


def measure(args, env: dict[str, str], size: str, workdir: Path) -> dict:
    import rclpy
    from rclpy.context import Context
    from rclpy.executors import SingleThreadedExecutor

    from edge_roofline.ros import topics
    from edge_roofline.msg import InferenceStats, TensorArray

    log = open(workdir / f"inference_{size}.log", "w")
    node_proc = subprocess.Popen(node_command(args.node_param), env=env, cwd=REPO, stdout=log,
                                 stderr=subprocess.STDOUT)
    camera_out = workdir / f"camera_{size}.json"
    camera = subprocess.Popen([sys.executable, __file__, "--role", "camera", "--size", size, "--out", str(camera_out),
                               "--seconds", str(args.seconds), "--rate-hz", str(args.rate_hz),
                               "--camera-qos", args.camera_qos], env=env, cwd=REPO)
    context = Context()
    rclpy.init(context=context, domain_id=int(env["ROS_DOMAIN_ID"]))
    node = rclpy.create_node("bench_receiver", context=context)
    executor = SingleThreadedExecutor(context=context)
    executor.add_node(node)
    arrivals_ns: dict[int, int] = {}
    stats: list = []

    def on_output(msg):
        arrivals_ns.setdefault(msg.header.stamp.sec * 10**9 + msg.header.stamp.nanosec, time.time_ns())

    node.create_subscription(TensorArray, topics.INFERENCE_OUTPUT, on_output, 100)
    node.create_subscription(InferenceStats, topics.INFERENCE_STATS, stats.append, 100)
    cpu_start = None
    rss = []
    try:
        deadline = time.monotonic() + args.seconds + 120
        last_rss_s = 0.0
        while camera.poll() is None and time.monotonic() < deadline:
            executor.spin_once(timeout_sec=0.02)
            if node_proc.poll() is not None:
                raise RuntimeError(f"inference node exited with {node_proc.returncode}; see {log.name}")
            if cpu_start is None and arrivals_ns:
                cpu_start = (cpu_ticks(node_proc.pid), time.monotonic())
            if cpu_start is not None and time.monotonic() - last_rss_s > 1.0:
                rss.append(rss_mb(node_proc.pid))
                last_rss_s = time.monotonic()
        cpu_end = (cpu_ticks(node_proc.pid), time.monotonic())
        drain = time.monotonic() + 1.0
        while time.monotonic() < drain:
            executor.spin_once(timeout_sec=0.02)
    finally:
        executor.shutdown()
        node.destroy_node()
        rclpy.try_shutdown(context=context)
        node_proc.send_signal(2)
        try:
            node_proc.wait(15)
        except subprocess.TimeoutExpired:
            node_proc.kill()
        if camera.poll() is None:
            camera.kill()
        log.close()
    sent = json.loads(camera_out.read_text())
    sent_ns = sent["stamps_ns"]
    delivered = [arrivals_ns[s] - s for s in sent_ns if s in arrivals_ns]
    ours = [m for m in stats if m.header.stamp.sec * 10**9 + m.header.stamp.nanosec in set(sent_ns)]
    last = ours[-1] if ours else None
    cpu_pct = float("nan")
    if cpu_start is not None and cpu_end[1] > cpu_start[1]:
        cpu_pct = 100 * (cpu_end[0] - cpu_start[0]) / CLOCK_TICKS_PER_S / (cpu_end[1] - cpu_start[1])
    return {
        "size": size, "sent": len(sent_ns), "delivered": len(delivered),
        "p50_ms": percentile(delivered, 50) / 1e6, "p95_ms": percentile(delivered, 95) / 1e6,
        "node_e2e_p50_ms": median_of(ours, "end_to_end_ms"), "pre_p50_ms": median_of(ours, "preprocess_ms"),
        "queue_p50_ms": median_of(ours, "queue_delay_ms"),
        "received": last.frames_received if last else 0, "dropped": last.frames_dropped if last else 0,
        "lost_upstream": getattr(last, "frames_lost_upstream", None) if last else None,
        "node_cpu_pct": cpu_pct, "node_rss_mb": max(rss) if rss else float("nan"),
        "camera_hz": sent["achieved_hz"], "camera_cpu_pct": sent["cpu_pct"], "publish_ms": sent["publish_ms_p50"]}


def main(argv=None) -> int:
    args = parse_args(argv)
    env = environment(args)
    if args.role == "camera":
        return run_camera(args)
    os.environ.update(env)  # this process's own participant: the same transports and domain
    workdir = Path(tempfile.mkdtemp(prefix="bench_transport_"))
    print(f"through real DDS (rmw_fastrtps_cpp), loopback only, domain {env['ROS_DOMAIN_ID']}; "
          f"{args.rate_hz:.0f} Hz bgr8 for {args.seconds:.0f} s per size; camera QoS {args.camera_qos}")
    from edge_roofline.suite.env import profile_variable
    variable = profile_variable(env)
    print(f"{variable}={env.get(variable, '(none)')}"
          + "".join(f"  {e}" for e in args.env) + "".join(f"  -p {p}" for p in args.node_param))
    print(f"load average before: {os.getloadavg()[0]:.2f} (1 min) on {os.cpu_count()} CPUs; logs in {workdir}")
    header = (f"{'run':>3} {'size':>9} {'sent':>5} {'deliv':>5} {'deliv %':>7} {'p50 ms':>7} {'p95 ms':>7} "
              f"{'node e2e':>8} {'pre':>5} {'queue':>5} {'recv':>5} {'drop':>4} {'lost up':>7} {'CPU %':>6} "
              f"{'RSS MB':>6} "
              f"{'cam Hz':>6} {'pub ms':>6}")
    print(header)
    for run in range(1, args.runs + 1):
        for size in args.sizes.split(","):
            r = measure(args, env, size, workdir)
            lost = "-" if r["lost_upstream"] is None else str(r["lost_upstream"])
            print(f"{run:>3} {size:>9} {r['sent']:>5} {r['delivered']:>5} {100 * r['delivered'] / r['sent']:>6.1f}% "
                  f"{r['p50_ms']:>7.2f} {r['p95_ms']:>7.2f} {r['node_e2e_p50_ms']:>8.2f} {r['pre_p50_ms']:>5.2f} "
                  f"{r['queue_p50_ms']:>5.2f} {r['received']:>5} "
                  f"{r['dropped']:>4} {lost:>7} {r['node_cpu_pct']:>6.1f} {r['node_rss_mb']:>6.0f} "
                  f"{r['camera_hz']:>6.1f} {r['publish_ms']:>6.2f}", flush=True)
    print(f"load average after: {os.getloadavg()[0]:.2f}; node e2e = the node's own end_to_end_ms (arrival in its "
          f"callback to outputs published); CPU % of one core")
    return 0


if __name__ == "__main__":
    sys.exit(main())
