"""The SIMULATION label on a virtual Jetson read through the real Jetson backend: every sample
and the identity say they are simulated, so no output can pass for a real measurement."""

from __future__ import annotations

from dataclasses import replace
from pathlib import Path
from typing import Any, Callable

from edge_roofline.platforms.base import (SIMULATION_SOURCE, DeviceIdentity, OperatingPoint, Platform,
                                          TelemetrySample)


class SimulationLabelled(Platform):
    """A platform reading a virtual Jetson's tree: everything it reports is marked simulated."""

    def __init__(self, inner: Platform, device_key: str, root: str | Path,
                 board_client: Callable[[Path], Any]) -> None:
        self.inner = inner
        self.device_key = device_key
        self.root = Path(root)
        self._board_client = board_client
        self._board = None

    @property
    def board(self):
        """The live board's client, for the virtual backend (times inferences with its physics)."""
        if self._board is None:
            self._board = self._board_client(self.root)
        return self._board

    def identity(self) -> DeviceIdentity:
        ident = self.inner.identity()
        model = ident.model if "virtual" in ident.model.lower() else f"virtual {ident.model}"
        return replace(ident, kind="virtual", model=model, simulated=True)

    def device_spec(self):
        return self.inner.device_spec()

    def operating_points(self) -> list[OperatingPoint]:
        return self.inner.operating_points()

    def current_operating_point(self) -> OperatingPoint:
        return self.inner.current_operating_point()

    def apply(self, point: OperatingPoint) -> None:
        self.inner.apply(point)

    @staticmethod
    def _label(sample: TelemetrySample) -> TelemetrySample:
        # Not dataclasses.replace: this runs at every power reading, and replace costs 3x this.
        return TelemetrySample(**{**vars(sample), "simulated": True,
                                  "source": f"{SIMULATION_SOURCE} via {sample.source}"})

    def sample(self) -> TelemetrySample:
        return self._label(self.inner.sample())

    def sample_power(self) -> TelemetrySample:
        return self._label(self.inner.sample_power())

    def power_update_interval_s(self) -> float | None:
        return self.inner.power_update_interval_s()

    def restore(self) -> str:
        return self.inner.restore()

    def refind(self) -> None:
        self.inner.refind()

    def found_record(self) -> dict | None:
        return self.inner.found_record()

    def restore_record(self, record: dict) -> str:
        return self.inner.restore_record(record)

    def close(self) -> None:
        if self._board is not None:
            self._board.close()
        self.inner.close()
