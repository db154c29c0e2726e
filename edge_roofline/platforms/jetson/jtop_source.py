"""Power rails from jetson-stats' client where ``jtop.service`` runs, else from sysfs.

jtop's root service can read rails an unprivileged process cannot; where it is not running
(``JtopException``), the sysfs readers are used and the reason is logged once.
"""

from __future__ import annotations

import logging
from collections.abc import Callable
from pathlib import Path

from edge_roofline.platforms.base import RailSample
from edge_roofline.platforms.jetson import power

log = logging.getLogger(__name__)


def default_client():
    from jtop import jtop
    return jtop()


class RailSource:
    """``read()`` -> (rails, problems, source name)."""

    def __init__(self, root: str | Path = "/", client_factory: Callable[[], object] | None = default_client):
        """``client_factory=None``: sysfs only (a generated or virtual tree, where the host's
        jtop would describe another machine)."""
        from jtop import JtopException
        self._channels = power.find_rails(root)
        self.client = None
        self.fallback_reason = None if client_factory else "sysfs tree given; jtop not used"
        if client_factory is None:
            return
        try:
            client = client_factory()
            client.start()
            self.client = client
        except JtopException as exc:
            self.fallback_reason = f"jtop unavailable ({exc}); reading INA3221 from sysfs"
            log.info(self.fallback_reason)

    @property
    def name(self) -> str:
        return "jtop" if self.client else "jetson-sysfs"

    def read(self) -> tuple[tuple[RailSample, ...], list[str]]:
        if self.client is None:
            return power.read_rails(self._channels)
        rails = tuple(RailSample(name, r["volt"] / 1e3, r["curr"] / 1e3, r["power"] / 1e3)
                      for name, r in self.client.power["rail"].items() if r.get("online", True))
        return rails, []

    def close(self) -> None:
        if self.client is not None:
            self.client.close()
