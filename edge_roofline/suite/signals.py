"""Ctrl-C and SIGTERM for every long-running process of the suite (the nodes, ``edge-roofline
up``/``demo``, ``virtual-jetson``). A terminal's Ctrl-C reaches each process of a ``ros2 launch``
twice (from the terminal and forwarded by launch), and launch follows with SIGTERM; none of them
may cut into a teardown (the governor's restore of the board) or leave a traceback.

- ``StopSignals``: from ``install()`` on, each signal sets ``requested`` (the main loop ends at
  its next look); until ``started()``, the first one instead raises ``StartInterrupted`` (a
  model can take long to load), and only the first, at the first safe point: never inside an
  import or a library's code. There the exception could leave native state half made, which a
  teardown or the interpreter's exit then touches: Ctrl-C landing after onnx's C++ module had
  initialised, inside its import, made `inference` die with SIGSEGV. Held there, the signal is
  raised once the main thread is back in our own code (looked at every RETRY_S).
- ``start_signals()``: the process's interrupting StopSignals, made on the first call: a node's
  entry point installs it before the node's imports, ``run_node`` takes it over. It enables
  faulthandler too: a crash in native code (SIGSEGV, SIGABRT, ...) then prints every thread's
  Python stack, where a user's report would otherwise say only "exit code -11".
- ``ignore_stop_signals()``: once the teardown is done. Python restores the default handlers
  while it finalises (a late signal would then kill the exiting process: exit -2 or -15, not
  0) but leaves ignored ones ignored."""

from __future__ import annotations

import _thread
import faulthandler
import os
import signal
import threading
import time

STOP_SIGNALS = (signal.SIGINT, signal.SIGTERM)
RETRY_S = 0.02  # how often a held signal looks again for a safe point
_OWN_CODE = os.path.dirname(os.path.dirname(os.path.abspath(__file__))) + os.sep  # edge_roofline/, wherever installed
_LIBRARY_DIRS = (f"{os.sep}site-packages{os.sep}", f"{os.sep}dist-packages{os.sep}")


class StartInterrupted(BaseException):
    """Ctrl-C or SIGTERM while the process was still starting. A BaseException, like
    KeyboardInterrupt: no ``except Exception`` on the way takes it for an error."""


def unsafe_to_interrupt(frame) -> str:
    """Where the main thread is, if an exception raised there could leave native state half made
    ("" where it cannot): inside an import (a native extension's initialisation, or what it runs),
    or in a library's code (a native object between its construction steps, a callback from native
    code), anywhere down the stack. Our own code and the standard library's are safe."""
    while frame is not None:
        filename = frame.f_code.co_filename
        if filename.startswith("<frozen importlib"):
            return "an import"
        if any(part in filename for part in _LIBRARY_DIRS) and not filename.startswith(_OWN_CODE):
            return "a library"
        frame = frame.f_back
    return ""


class StopSignals:
    def __init__(self, *, interrupt_start: bool = False) -> None:
        self.requested = False
        self.interrupt_start = interrupt_start
        self._held: int | None = None  # a signal waiting for a safe point to interrupt the start

    def install(self) -> StopSignals:
        for signum in STOP_SIGNALS:
            signal.signal(signum, self._handle)
        if self.interrupt_start:  # made now, not in the handler: it may run inside threading's own locks
            threading.Thread(target=self._retry_held, name="held-stop-signal", daemon=True).start()
        # A node's executable blocks them from its first line (CMakeLists.txt): one sent since comes now.
        signal.pthread_sigmask(signal.SIG_UNBLOCK, STOP_SIGNALS)
        return self

    def started(self) -> None:
        """Signals no longer interrupt: they only ask the loop to end."""
        self.interrupt_start = False

    def _handle(self, signum, frame) -> None:
        self.requested = True
        if not self.interrupt_start:
            return
        if unsafe_to_interrupt(frame):
            self._held = signum
            return
        self.interrupt_start = False  # once: a second signal never interrupts the clean-up
        raise StartInterrupted(signal.Signals(signum).name)

    def _retry_held(self) -> None:
        while self.interrupt_start:
            time.sleep(RETRY_S)
            if self._held is not None and self.interrupt_start:
                _thread.interrupt_main(self._held)  # the handler again, in the main thread; no real signal


_start: StopSignals | None = None


def start_signals() -> StopSignals:
    global _start
    if _start is None:
        faulthandler.enable()
        _start = StopSignals(interrupt_start=True).install()
    return _start


def ignore_stop_signals() -> None:
    for signum in STOP_SIGNALS:
        signal.signal(signum, signal.SIG_IGN)
