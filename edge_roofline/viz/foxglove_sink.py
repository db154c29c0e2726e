"""Forward CDR-serialised ROS 2 messages to Foxglove: a WebSocket server (for Foxglove on
machines without foxglove_bridge, i.e. pip-only installs) and/or an MCAP recording, through
foxglove-sdk. ROS-free: callers hand over (topic, type name, CDR bytes, time)."""

from __future__ import annotations

from pathlib import Path

import foxglove

from edge_roofline.ros.schema import schema_text


class FoxgloveSink:
    def __init__(self, *, serve: bool = True, host: str = "127.0.0.1", port: int = 8765,
                 mcap_path: str | Path | None = None, name: str = "edge_roofline") -> None:
        if not serve and mcap_path is None:
            raise ValueError("FoxgloveSink needs a WebSocket server, an MCAP path, or both")
        self.context = foxglove.Context()
        self.server = (foxglove.start_server(name=name, host=host, port=port, context=self.context)
                       if serve else None)
        self.mcap = (foxglove.open_mcap(str(mcap_path), allow_overwrite=True, context=self.context)
                     if mcap_path is not None else None)
        self._channels: dict[str, foxglove.Channel] = {}

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

    def close(self) -> None:
        for ch in self._channels.values():
            ch.close()
        if self.mcap is not None:
            self.mcap.close()
        if self.server is not None:
            self.server.stop()
