"""Ctrl-C and SIGTERM for every long-running process of the suite (the nodes, ``edge-roofline
up``/``demo``, ``virtual-jetson``). A terminal's Ctrl-C reaches each process of a ``ros2 launch``
twice (from the terminal and forwarded by launch), and launch follows with SIGTERM; none of them
may cut into a teardown (the governor's restore of the board) or leave a traceback.

- ``StopSignals``: from ``install()`` on, each signal sets ``requested`` (the main loop ends at
  its next look); until ``started()``, the first one instead raises ``StartInterrupted`` (a
  model can take long to load), and only the first.
- ``ignore_stop_signals()``: once the teardown is done. Python restores the default handlers
  while it finalises (a late signal would then kill the exiting process: exit -2 or -15, not
  0) but leaves ignored ones ignored."""

from __future__ import annotations

import signal

STOP_SIGNALS = (signal.SIGINT, signal.SIGTERM)


class StartInterrupted(BaseException):
    """Ctrl-C or SIGTERM while the process was still starting. A BaseException, like
    KeyboardInterrupt: no ``except Exception`` on the way takes it for an error."""


class StopSignals:
    def __init__(self, *, interrupt_start: bool = False) -> None:
        self.requested = False
        self.interrupt_start = interrupt_start

    def install(self) -> StopSignals:
        for signum in STOP_SIGNALS:
            signal.signal(signum, self._handle)
        return self

    def started(self) -> None:
        """Signals no longer interrupt: they only ask the loop to end."""
        self.interrupt_start = False

    def _handle(self, signum, frame) -> None:
        self.requested = True
        if self.interrupt_start:
            self.interrupt_start = False  # once: a second signal never interrupts the clean-up
            raise StartInterrupted(signal.Signals(signum).name)


def ignore_stop_signals() -> None:
    for signum in STOP_SIGNALS:
        signal.signal(signum, signal.SIG_IGN)
