"""`edge-roofline up` starts the suite with a parameter file (the demo's: a virtual AGX Orin with
the governor active); a real WebSocket client speaking the Foxglove protocol subscribes and
receives roofline, power and governor messages; Ctrl-C stops every node cleanly and the
governor has put the device's original mode and caps back."""

import asyncio
import json
import signal
import socket
import struct
import subprocess
import sys
import time

import yaml
from rclpy.serialization import deserialize_message

from edge_roofline.ros import topics
from edge_roofline.paths import config_file
from edge_roofline.ros.schema import message_class
from edge_roofline.virtual.live import LiveVirtualJetson
from test.nodes.virtual_rig import cap_files

# foxglove-sdk servers speak "foxglove.sdk.v1"; older ones (ROS foxglove_bridge) "foxglove.websocket.v1".
SUBPROTOCOLS = ["foxglove.sdk.v1", "foxglove.websocket.v1"]


def free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


async def receive(port: int, wanted: set[str], timeout_s: float) -> dict[str, bytes]:
    import websockets
    deadline = time.monotonic() + timeout_s
    while True:  # the server comes up a moment after the process starts
        try:
            ws = await websockets.connect(f"ws://127.0.0.1:{port}", subprotocols=SUBPROTOCOLS)
            break
        except OSError:
            if time.monotonic() > deadline:
                raise
            await asyncio.sleep(0.2)
    got, channels, subscribed = {}, {}, {}
    async with ws:
        assert ws.subprotocol in SUBPROTOCOLS
        while time.monotonic() < deadline and set(got) != wanted:
            try:
                frame = await asyncio.wait_for(ws.recv(), timeout=1.0)
            except asyncio.TimeoutError:
                continue
            if isinstance(frame, str):
                msg = json.loads(frame)
                if msg.get("op") == "unadvertise":  # a channel the bridge dropped may come back under its id
                    for channel_id in msg.get("channelIds", []):
                        channels.pop(channel_id, None)
                elif msg.get("op") == "advertise":
                    new = []
                    for ch in msg["channels"]:
                        topic = ch["topic"].lstrip("/")
                        if topic in wanted and ch["id"] not in channels:
                            channels[ch["id"]] = ch
                            sub_id = len(subscribed) + 1
                            subscribed[sub_id] = ch
                            new.append({"id": sub_id, "channelId": ch["id"]})
                    if new:
                        await ws.send(json.dumps({"op": "subscribe", "subscriptions": new}))
            elif frame[0] == 0x01:  # message data: opcode, subscription id, timestamp, payload
                sub_id, = struct.unpack_from("<I", frame, 1)
                ch = subscribed[sub_id]
                got.setdefault(ch["topic"].lstrip("/"), (ch, frame[13:]))
    return got


def decode(channel: dict, payload: bytes):
    assert channel["encoding"] == "cdr" and "MSG: " in channel["schema"]  # ros2msg with its dependencies
    return deserialize_message(payload, message_class(channel["schemaName"]))


def test_up_on_the_virtual_orin_serves_foxglove_and_ctrl_c_restores_the_device(ros_env, tmp_path):
    """The demo's configuration (virtual AGX Orin, governor active) under `edge-roofline up`:
    Foxglove clients get rooflines, power and governor state; Ctrl-C stops every node cleanly
    and the board's mode and caps are as a freshly started board has them."""
    root = tmp_path / "virtual_agx_orin"
    fresh = cap_files(LiveVirtualJetson(tmp_path / "fresh", "agx_orin_64gb").root)  # the mode and caps found
    params = yaml.safe_load(config_file("demo_virtual_agx_orin.yaml").read_text())
    port = free_port()
    for node in params.values():
        if "sysfs_root" in node["ros__parameters"]:
            node["ros__parameters"]["sysfs_root"] = str(root)
    params["foxglove_bridge"]["ros__parameters"]["port"] = port
    params["inference"]["ros__parameters"].update(model="zoo:tiny_cnn", profile_every_s=1.0,
                                                  profile_budget_fraction=1.0)
    params["governor"]["ros__parameters"].update(model="zoo:tiny_cnn", dwell_s=1.0)
    params["synthetic_camera"]["ros__parameters"].update(width=64, height=64)
    cfg = tmp_path / "params.yaml"
    cfg.write_text(yaml.safe_dump(params))
    up = subprocess.Popen([sys.executable, "-m", "edge_roofline.cli", "up", "--config", str(cfg),
                           "--with", "synthetic_camera,foxglove_bridge", "--log-dir", str(tmp_path / "logs"),
                           "--target-latency-ms", "20"],
                          env=ros_env, stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True)
    moved = False
    try:
        wanted = {topics.ROOFLINE_REPORT, topics.POWER_TELEMETRY, topics.GOVERNOR_STATE}
        got = asyncio.run(receive(port, wanted, timeout_s=120))
        deadline = time.monotonic() + 90
        while not moved and time.monotonic() < deadline and up.poll() is None:
            moved = cap_files(root) != fresh  # the governor changed the device
            time.sleep(0.5)
    finally:
        up.send_signal(signal.SIGINT)
        out, _ = up.communicate(timeout=90)
    logs = "\n".join(f"--- {p.name}\n{p.read_text()[-2000:]}" for p in sorted((tmp_path / "logs").glob("*.log")))
    assert set(got) == wanted, out + logs
    report = decode(*got[topics.ROOFLINE_REPORT])
    power = decode(*got[topics.POWER_TELEMETRY])
    governor = decode(*got[topics.GOVERNOR_STATE])
    assert report.model_id == "zoo:tiny_cnn" and len(report.layers) > 5 and report.simulated
    assert power.simulated and "SIMULATION" in power.source
    assert governor.simulated and governor.mode == "active" and governor.target_latency_ms == 20.0
    assert moved, "the governor never changed the operating point\n" + logs
    assert up.returncode == 0, out + logs
    stopped = next(line for line in out.splitlines() if line.startswith("stopped:"))
    assert all(part.endswith("=0") for part in stopped[len("stopped: "):].split(", ")), stopped + "\n" + logs
    assert "governor=0" in stopped
    assert cap_files(root) == fresh, out + logs  # Ctrl-C put back the mode and every cap
