"""Forward CDR-serialised ROS 2 messages to Foxglove: a WebSocket server (for Foxglove on
machines without foxglove_bridge, i.e. pip-only installs) and/or an MCAP recording, through
foxglove-sdk. ROS-free: callers hand over (topic, type name, CDR bytes, time).

The server speaks the WebSocket subprotocol ``foxglove.sdk.v1`` only (foxglove-sdk's handshake
refuses any other with HTTP 400, and has no option for more): Foxglove's app and ROS
foxglove_bridge 3.x use it; clients that offer only the older ``foxglove.websocket.v1``
(Lichtblick before its Dec 2025 release, @foxglove/ws-protocol's FoxgloveClient as documented)
cannot connect. ``describe_server()`` says so in the line the bridge prints at start."""

from __future__ import annotations

from collections import Counter
from pathlib import Path

import foxglove

from edge_roofline.ros.schema import schema_text

SUBPROTOCOL = "foxglove.sdk.v1"  # checked against a real client in test/suite/test_foxglove_client.py


class FoxgloveServerError(OSError):
    """The WebSocket server could not start (most often: its port is taken)."""


class RecordPathError(OSError):
    """The MCAP file to record cannot be opened for writing."""


class FoxgloveSink:
    def __init__(self, *, serve: bool = True, host: str = "127.0.0.1", port: int = 8765,
                 mcap_path: str | Path | None = None, name: str = "edge_roofline") -> None:
        if not serve and mcap_path is None:
            raise ValueError("FoxgloveSink needs a WebSocket server, an MCAP path, or both")
        if serve and not 0 <= port <= 65535:  # the SDK's bind raises OverflowError, a traceback
            raise FoxgloveServerError(f"Foxglove port {port} is not a TCP port: give 1-65535, or 0 for any free one "
                                      f"(-p port:=N)")
        self.context = foxglove.Context()
        self.mcap_path = Path(mcap_path) if mcap_path is not None else None
        try:  # before the server, so a refused path leaves no server behind
            self.mcap = (foxglove.open_mcap(str(mcap_path), allow_overwrite=True, context=self.context)
                         if mcap_path is not None else None)
        except OSError as exc:  # the SDK's text names no file: "Is a directory (os error 21)"
            raise RecordPathError(f"cannot record to {mcap_path}: {exc}; give a file in an existing, writable "
                                  f"directory (edge-roofline up --record FILE, or -p mcap_path:=FILE)") from None
        try:
            self.server = _start_server(name, host, port, self.context) if serve else None
        except BaseException:
            if self.mcap is not None:
                self.mcap.close()
            raise
        self._channels: dict[str, foxglove.Channel] = {}
        self.logged: Counter[str] = Counter()  # messages per topic, since start

    @property
    def port(self) -> int | None:
        return self.server.port if self.server else None

    def channel(self, topic: str, type_name: str) -> foxglove.Channel:
        """The channel for a topic, created (with its ros2msg schema) on first use."""
        ch = self._channels.get(topic)
        if ch is None:
            schema = foxglove.Schema(name=type_name.replace("/msg/", "/"), encoding="ros2msg",
                                     data=schema_text(type_name).encode())
            ch = foxglove.Channel(topic, schema=schema, message_encoding="cdr", context=self.context)
            self._channels[topic] = ch
        return ch

    def log(self, topic: str, type_name: str, cdr: bytes, log_time_ns: int) -> None:
        self.channel(topic, type_name).log(cdr, log_time=log_time_ns)
        self.logged[topic] += 1

    def close(self) -> None:
        for ch in self._channels.values():
            ch.close()
        if self.mcap is not None:
            self.mcap.close()
        if self.server is not None:
            self.server.stop()

    def recording_summary(self) -> str | None:
        """What the recording holds, on one line; None without one. A recording that captured
        nothing says so and why that usually is (its topics never published where it listened)."""
        if self.mcap_path is None:
            return None
        if not self.logged:
            return (f"recorded NOTHING to {self.mcap_path}: no message arrived on any of its {len(self._channels)} "
                    "topics (is the suite running on this ROS_DOMAIN_ID and namespace?)")
        return (f"recorded {sum(self.logged.values())} messages on {len(self.logged)} of {len(self._channels)} "
                f"topics to {self.mcap_path}")


def describe_server(host: str, port: int) -> str:
    """Where a Foxglove client connects, and which clients can."""
    return (f"Foxglove WebSocket on ws://{host}:{port} (subprotocol {SUBPROTOCOL}: the Foxglove app, or Lichtblick "
            "from its Dec 2025 release; clients offering only foxglove.websocket.v1 get HTTP 400)")


def _start_server(name: str, host: str, port: int, context: foxglove.Context):
    try:
        return foxglove.start_server(name=name, host=host, port=port, context=context)
    except RuntimeError as exc:  # foxglove-sdk raises FoxgloveError as RuntimeError
        if "in use" in str(exc):
            raise FoxgloveServerError(
                f"Foxglove port {port} on {host} is in use (another Foxglove bridge, or a running `edge-roofline "
                "demo`): give this bridge another port (its port parameter, -p port:=0 for any free one), record "
                "only with -p serve:=false, or start the suite without a bridge (edge-roofline demo "
                "--no-foxglove)") from None
        raise FoxgloveServerError(f"Foxglove server on {host}:{port} could not start: {exc}") from None
