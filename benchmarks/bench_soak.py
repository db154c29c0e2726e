"""Soak (issue 23): the suite under a robot's load for a long time, on a live virtual AGX Orin
(SIMULATION board: times and power from its physics; the nodes, DDS, Foxglove and the code
paths are real). Each part runs as a robot runs it, in its own process:
- synthetic_camera: 640x480 bgr8 at 30 Hz into the inference node (virtual backend: outputs
  computed by ONNX Runtime, times from the board);
- this process switches `model` every 10 s between two zoo models through SetParameters;
- the governor, active, moves the board (presets and caps) as the models change;
- power_monitor; foxglove_bridge with a Foxglove WebSocket client connected all the time;
- this process polls the board's files (every 5 ms) for the point in force.

Checked at the end, printed (and written as JSON with --out):
- no worker death (InferenceStats.worker_restarts, the log) and no traceback in any log;
- every stats counter consistent: received = processed + dropped + rejected + failed + the frames
  still queued (0 .. queue_depth) in every message, and exactly equal in the last one;
- every switch replied true, `param get` named the model then served, each model got a report;
- the operating point in every PowerTelemetry, RooflineReport and GovernorState equal to the
  board's at the message's stamp, as this process reads it every 5 ms; a message within
  --transition-s of a board change may name a state the board passed through during the move
  (an apply writes file after file) that the 5 ms poll did not catch: counted apart;
- the Foxglove client stayed connected and received every topic.

    nice python benchmarks/bench_soak.py [--minutes 10] [--switch-every-s 10] [--out FILE]
"""

from __future__ import annotations

import argparse
import asyncio
import bisect
import json
import math
import os
import random
import signal
import socket
import struct
import subprocess
import sys
import tempfile
import threading
import time
from pathlib import Path

REPO = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(REPO))

DEVICE = "agx_orin_64gb"
QUEUE_DEPTH = 2
SUBPROTOCOLS = ["foxglove.sdk.v1", "foxglove.websocket.v1"]


def parse_args(argv=None):
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--minutes", type=float, default=10.0)
    ap.add_argument("--switch-every-s", type=float, default=10.0)
    ap.add_argument("--models", default="zoo:mobilenetv2,zoo:tiny_cnn")
    ap.add_argument("--rate-hz", type=float, default=30.0)
    ap.add_argument("--size", default="640x480")
    ap.add_argument("--target-ms", type=float, default=10.0, help="the governor's latency target")
    ap.add_argument("--transition-s", type=float, default=0.25)
    ap.add_argument("--log-dir", default="")
    ap.add_argument("--out", default="", help="write the numbers as JSON here")
    return ap.parse_args(argv)


def free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def param_args(params: dict) -> list[str]:
    out = []
    for name, value in params.items():
        if isinstance(value, bool):
            value = "true" if value else "false"
        elif isinstance(value, str):
            value = "'" + value + "'"
        out += ["-p", f"{name}:={value}"]
    return out


class FoxgloveClient(threading.Thread):
    """A Foxglove WebSocket client subscribed to every channel for the whole soak."""

    def __init__(self, port: int) -> None:
        super().__init__(daemon=True)
        self.port, self.counts, self.connected_s, self.closed_reason = port, {}, None, ""
        self.stop = threading.Event()

    def run(self) -> None:
        asyncio.run(self._run())

    async def _run(self) -> None:
        import websockets
        deadline = time.monotonic() + 120
        while True:
            try:
                ws = await websockets.connect(f"ws://127.0.0.1:{self.port}", subprotocols=SUBPROTOCOLS,
                                              max_size=None)
                break
            except OSError:
                if time.monotonic() > deadline:
                    self.closed_reason = "never connected"
                    return
                await asyncio.sleep(0.5)
        self.connected_s = time.monotonic()
        subscribed = {}
        try:
            async with ws:
                async for frame in ws:  # power telemetry alone arrives 20 times a second
                    if self.stop.is_set():
                        break
                    if not isinstance(frame, str):
                        if frame[0] == 0x01:  # message data: opcode, subscription id, time, payload
                            topic = subscribed.get(struct.unpack_from("<I", frame, 1)[0], "?")
                            self.counts[topic] = self.counts.get(topic, 0) + 1
                        continue
                    advertised = json.loads(frame)
                    if advertised.get("op") != "advertise":
                        continue
                    first = len(subscribed) + 1
                    subscribed.update((first + k, ch["topic"]) for k, ch in enumerate(advertised["channels"]))
                    await ws.send(json.dumps({"op": "subscribe", "subscriptions": [
                        {"id": first + k, "channelId": ch["id"]} for k, ch in enumerate(advertised["channels"])]}))
                self.closed_reason = "closed by the soak"
        except Exception as exc:  # noqa: BLE001 - a dropped connection is a finding, reported
            self.closed_reason = f"{type(exc).__name__}: {exc}"


class BoardPoller(threading.Thread):
    """The point in force, read from the board's files every 5 ms: each state seen, with the
    wall time it was first seen. An apply writes file after file, so the board passes through
    intermediate states for a few ms; they are states of the board too."""

    def __init__(self, root: Path) -> None:
        super().__init__(daemon=True)
        from edge_roofline.platforms import create_platform
        self.platform = create_platform(f"virtual:{DEVICE}", sysfs_root=str(root))
        self.times: list[float] = []
        self.names: list[str] = []
        self.stop = threading.Event()

    def run(self) -> None:
        while not self.stop.is_set():
            name = self.platform.current_operating_point().name
            now = time.time()
            if not self.names or self.names[-1] != name:
                self.times.append(now)
                self.names.append(name)
            self.stop.wait(0.005)

    def judge(self, stamp_s: float, name: str, transition_s: float) -> str:
        """"board": ``name`` is the state in force at ``stamp_s`` (or one seen within
        ``transition_s`` of it: the reading and this poll raced); "move": a reading taken while
        a move was under way (within ``transition_s`` of a change), naming a state this poller did
        not see (the cores go offline one by one: c11, c10, ...); "wrong": neither."""
        i = bisect.bisect_right(self.times, stamp_s) - 1
        if i >= 0 and self.names[i] == name:
            return "board"
        lo = bisect.bisect_left(self.times, stamp_s - transition_s)
        hi = bisect.bisect_right(self.times, stamp_s + transition_s)
        if name in self.names[max(0, lo - 1):hi]:
            return "board"
        return "move" if hi > max(lo, 1) else "wrong"


def percentile(values, q):
    values = sorted(values)
    return values[min(len(values) - 1, int(q / 100 * len(values)))] if values else math.nan


def main(argv=None) -> int:  # noqa: C901 - one scenario, read top to bottom
    args = parse_args(argv)
    import rclpy
    from rcl_interfaces.msg import Parameter, ParameterType, ParameterValue
    from rcl_interfaces.srv import GetParameters, SetParameters
    from rclpy.context import Context
    from rclpy.executors import SingleThreadedExecutor

    from edge_roofline.msg import GovernorState, InferenceStats, PowerTelemetry, RooflineReport
    from edge_roofline.ros import topics
    from edge_roofline.ros.stamps import stamp_s
    from edge_roofline.suite.env import localhost_environment
    from edge_roofline.virtual.live import LiveVirtualJetson

    domain = random.randint(150, 230)
    env = localhost_environment(dict(os.environ), domain_id=domain)
    env["PYTHONPATH"] = os.pathsep.join([str(REPO), env.get("PYTHONPATH", "")]).rstrip(os.pathsep)
    env["PYTHONUNBUFFERED"] = "1"
    work = Path(tempfile.mkdtemp(prefix="edge_roofline_soak_"))
    logs = Path(args.log_dir) if args.log_dir else work / "logs"
    logs.mkdir(parents=True, exist_ok=True)
    models = args.models.split(",")
    width, height = (int(v) for v in args.size.split("x"))
    board = LiveVirtualJetson(work / "board", DEVICE, mode_id=0).start()
    root = str(board.root)
    port = free_port()
    virtual = {"platform": f"virtual:{DEVICE}", "sysfs_root": root}
    nodes = {
        "power_monitor": virtual,
        "inference": {**virtual, "model": models[0], "backend": "virtual", "precision": "fp16", "device": DEVICE,
                      "engine": "gpu", "queue_depth": QUEUE_DEPTH, "profile_every_s": 5.0,
                      "profile_every_frames": 300},
        "governor": {**virtual, "mode": "active", "target_latency_ms": args.target_ms, "precision": "fp16",
                     "dwell_s": 2.0, "state_path": str(work / "governor_state.json")},
        "foxglove_bridge": {"port": port},
        "synthetic_camera": {"rate_hz": args.rate_hz, "width": width, "height": height, "encoding": "bgr8"},
    }
    procs = {}
    for name, params in nodes.items():
        cmd = [sys.executable, "-m", f"edge_roofline.nodes.{name}", "--ros-args", *param_args(params)]
        procs[name] = subprocess.Popen(cmd, env=env, cwd=REPO, stdout=open(logs / f"{name}.log", "w"),
                                       stderr=subprocess.STDOUT)
    context = Context()
    rclpy.init(context=context, domain_id=domain)
    node = rclpy.create_node("soak", context=context)
    executor = SingleThreadedExecutor(context=context)
    executor.add_node(node)
    stats, power, reports, governor = [], [], [], []

    def keep(store):
        return lambda m: store.append((time.time(), m))

    node.create_subscription(InferenceStats, topics.INFERENCE_STATS, keep(stats), 100)
    node.create_subscription(PowerTelemetry, topics.POWER_TELEMETRY, keep(power), 100)
    node.create_subscription(RooflineReport, topics.ROOFLINE_REPORT, keep(reports), 10)
    node.create_subscription(GovernorState, topics.GOVERNOR_STATE, keep(governor), 50)
    set_client = node.create_client(SetParameters, "/inference/set_parameters")
    get_client = node.create_client(GetParameters, "/inference/get_parameters")

    def spin_until(predicate, timeout_s):
        deadline = time.monotonic() + timeout_s
        while time.monotonic() < deadline:
            executor.spin_once(timeout_sec=0.05)
            if predicate():
                return True
        return False

    def call(client, request, timeout_s=60.0):
        if not spin_until(client.service_is_ready, 60):
            return None
        future = client.call_async(request)
        return future.result() if spin_until(future.done, timeout_s) else None

    poller, fox = BoardPoller(board.root), FoxgloveClient(port)
    switches, served_mismatch = [], 0
    try:
        if not spin_until(lambda: len(stats) > 30 and power and governor, 180):
            raise RuntimeError("the suite did not start: see " + str(logs))
        poller.start()
        fox.start()
        start_s = time.monotonic()
        end_s = start_s + 60 * args.minutes
        i = 0
        while time.monotonic() < end_s:
            spin_until(lambda: time.monotonic() >= start_s + (i + 1) * args.switch_every_s, args.switch_every_s + 1)
            i += 1
            model = models[i % len(models)]
            t0 = time.monotonic()
            value = ParameterValue(type=ParameterType.PARAMETER_STRING, string_value=model)
            reply = call(set_client, SetParameters.Request(parameters=[Parameter(name="model", value=value)]))
            replied = time.time()
            got = call(get_client, GetParameters.Request(names=["model"]))
            ok = reply is not None and reply.results[0].successful
            param = got.values[0].string_value if got is not None else "?"
            switches.append({"to": model, "ok": ok, "reason": reply.results[0].reason if reply else "no reply",
                             "reply_s": time.monotonic() - t0, "param_get": param, "replied_at": replied})
            spin_until(lambda: False, 1.0)
            after = [m for _, m in stats if stamp_s(m.header.stamp) > replied]
            served_mismatch += sum(m.model_id != param for m in after)
    finally:
        procs["synthetic_camera"].send_signal(signal.SIGINT)
        spin_until(lambda: False, 3.0)  # the queue drains
        fox.stop.set()
        poller.stop.set()
        codes = {}
        for name in ("governor", "inference", "power_monitor", "foxglove_bridge", "synthetic_camera"):
            proc = procs[name]
            if proc.poll() is None:
                proc.send_signal(signal.SIGINT)
            try:
                codes[name] = proc.wait(30)
            except subprocess.TimeoutExpired:
                proc.kill()
                codes[name] = "killed"
        executor.shutdown()
        node.destroy_node()
        rclpy.shutdown(context=context)
        fox.join(5)
        board.stop()

    # ---- what the soak found ------------------------------------------------------------
    texts = {name: (logs / f"{name}.log").read_text(errors="replace") for name in nodes}
    tracebacks = {name: text.count("Traceback") for name, text in texts.items() if "Traceback" in text}
    slack = [m.frames_received - (m.frames_processed + m.frames_dropped + m.frames_rejected + m.frames_failed)
             for _, m in stats]
    last = stats[-1][1]
    point_checks = {}
    for label, items, point_of in (("PowerTelemetry", power, lambda m: m.operating_point.name),
                                   ("RooflineReport", reports, lambda m: m.operating_point.name),
                                   ("GovernorState", governor, lambda m: m.current_point.name)):
        within = [m for _, m in items if poller.times and stamp_s(m.header.stamp) >= poller.times[0]]
        verdicts = [(poller.judge(stamp_s(m.header.stamp), point_of(m), args.transition_s), stamp_s(m.header.stamp),
                     point_of(m)) for m in within]
        point_checks[label] = {"messages": len(within),
                               "the board's": sum(v == "board" for v, *_ in verdicts),
                               "an intermediate state during a move": sum(v == "move" for v, *_ in verdicts),
                               "not the board's": sum(v == "wrong" for v, *_ in verdicts),
                               "examples": [(t, n) for v, t, n in verdicts if v != "board"][:3]}
    report_models = {}
    for _, r in reports:
        report_models[r.model_id] = report_models.get(r.model_id, 0) + 1
    switch_reported = 0
    for s in switches:
        if any(r.model_id == s["to"] and t > s["replied_at"] for t, r in reports
               if t < s["replied_at"] + args.switch_every_s):
            switch_reported += 1
    report_times = [t for t, _ in reports]
    gaps = [b - a for a, b in zip(report_times, report_times[1:])]
    latencies = [m.latency_ms for _, m in stats if m.latency_ms > 0]
    power_nan = sum(1 for _, m in power if not math.isfinite(m.average_power_w) or m.samples_in_window == 0)
    result = {
        "minutes": args.minutes, "models": models, "frames": f"{args.size} bgr8 at {args.rate_hz:g} Hz",
        "exit_codes": codes, "tracebacks": tracebacks,
        "worker_restarts": max(m.worker_restarts for _, m in stats),
        "worker_died_in_log": "died" in texts["inference"],
        "stats_messages": len(stats), "received": last.frames_received, "processed": last.frames_processed,
        "dropped": last.frames_dropped, "rejected": last.frames_rejected, "failed": last.frames_failed,
        "lost_upstream": last.frames_lost_upstream, "errors": last.errors, "last_error": last.last_error,
        "counter_slack_range": [min(slack), max(slack)], "counter_slack_last": slack[-1],
        "latency_ms_p50_p95": [percentile(latencies, 50), percentile(latencies, 95)],
        "switches": len(switches), "switch_replies_true": sum(s["ok"] for s in switches),
        "param_get_matches": sum(s["param_get"] == s["to"] for s in switches),
        "stats_after_reply_not_param_get": served_mismatch,
        "switch_reply_s_p50_max": [percentile([s["reply_s"] for s in switches], 50),
                                   max((s["reply_s"] for s in switches), default=math.nan)],
        "switches_with_a_report_of_the_new_model": switch_reported,
        "reports": len(reports), "reports_per_model": report_models,
        "report_gap_s_median_max": [percentile(gaps, 50), max(gaps, default=math.nan)],
        "power_messages": len(power), "power_windows_nan": power_nan,
        "board_points_seen": len(poller.names), "board_changes": max(0, len(poller.names) - 1),
        "governor_switches": max((m.switches for _, m in governor), default=0),
        "operating_point": point_checks,
        "foxglove": {"closed": fox.closed_reason, "messages": fox.counts},
        "logs": str(logs),
    }
    print(json.dumps(result, indent=1, default=str))
    if args.out:
        Path(args.out).write_text(json.dumps(result, indent=1, default=str))
    return 0


if __name__ == "__main__":
    sys.exit(main())
