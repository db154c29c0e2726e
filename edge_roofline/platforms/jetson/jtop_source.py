"""Power rails from jetson-stats' client where ``jtop.service`` runs, else from sysfs.

jtop's root service can read rails an unprivileged process cannot; where it is not running
(``JtopException``), the sysfs readers are used and the reason is logged once. jtop's values
refresh at its own interval (the ``jtop()`` client asks for 1 s), whatever rate they are read at.
"""

from __future__ import annotations

import logging
from collections.abc import Callable
from pathlib import Path

from edge_roofline.platforms.base import PlatformError, RailSample
from edge_roofline.platforms.jetson import power

log = logging.getLogger(__name__)


def default_client():
    from jtop import jtop
    return jtop()


class RailOfflineError(PlatformError):
    """A rail of the board that jtop gives no reading of: missing from the sample until it does."""

    def __init__(self, rail: str, reason: str) -> None:
        self.rail, self.reason = rail, reason
        super().__init__(f"power rail {rail} missing: {reason}")


class RailSource:
    """``read()`` -> (rails, typed errors of the rails that did not read)."""

    def __init__(self, root: str | Path = "/", client_factory: Callable[[], object] | None = default_client):
        """``client_factory=None``: sysfs only (a generated or virtual tree, where the host's
        jtop would describe another machine)."""
        from jtop import JtopException
        self._channels = power.find_rails(root)
        self._reader: power.RailReader | None = None
        self.client = None
        self.fallback_reason = None if client_factory else "sysfs tree given; jtop not used"
        if client_factory is not None:
            try:
                client = client_factory()
                client.start()
                self.client = client
            except JtopException as exc:
                self.fallback_reason = f"jtop unavailable ({exc}); reading INA3221 from sysfs"
                log.info(self.fallback_reason)
        if self.client is None:
            self._reader = power.RailReader(self._channels)

    @property
    def name(self) -> str:
        return "jtop" if self.client else "jetson-sysfs"

    @property
    def labels(self) -> tuple[str, ...]:
        """The rails the board's power monitors are labelled with (sysfs, read at start)."""
        return tuple(c.label for c in self._channels)

    @property
    def update_interval_s(self) -> float | None:
        """The INA3221s' conversion period on the sysfs path; None with jtop (left at its own rate)."""
        return None if self._reader is None else power.update_interval_s(self._channels)

    def read(self, labels: tuple[str, ...] | None = None, check_paths: bool = False
             ) -> tuple[tuple[RailSample, ...], tuple[power.RailReadError | RailOfflineError, ...]]:
        """The rails in ``labels`` (None: all; jtop always gives all); ``check_paths``: first
        notice rail files removed or replaced (a stat each; sysfs path)."""
        if self._reader is not None:
            if check_paths:
                self._reader.check_paths()
            return self._reader.read(labels)
        reported = self.client.power["rail"]
        rails = tuple(RailSample(name, r["volt"] / 1e3, r["curr"] / 1e3, r["power"] / 1e3)
                      for name, r in reported.items() if r.get("online", True))
        # A rail the board has that gives no reading is jtop's to explain; one no channel is labelled
        # with and jtop does not know is the platform's to name (RailNotFoundError).
        read, known = {r.name for r in rails}, set(self.labels) | set(reported)
        silent = [name for name in (labels if labels is not None else sorted(known)) if name in known - read]
        return rails, tuple(RailOfflineError(name, "jtop reports it offline" if name in reported
                                             else "jtop does not report it") for name in silent)

    def close(self) -> None:
        if self._reader is not None:
            self._reader.close()
        if self.client is not None:
            self.client.close()
