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
  raised at the next line of our own code that called the import or library.
- ``start_signals()``: the process's interrupting StopSignals, made on the first call: a node's
  entry point installs it before the node's imports, ``run_node`` takes it over. It enables
  faulthandler too: a crash in native code (SIGSEGV, SIGABRT, ...) then prints every thread's
  Python stack, where a user's report would otherwise say only "exit code -11".
- ``ignore_stop_signals()``: once the teardown is done. Python restores the default handlers
  while it finalises (a late signal would then kill the exiting process: exit -2 or -15, not
  0) but leaves ignored ones ignored."""

from __future__ import annotations

import faulthandler
import os
import signal
import sys

STOP_SIGNALS = (signal.SIGINT, signal.SIGTERM)
_OWN_CODE = os.path.dirname(os.path.dirname(os.path.abspath(__file__))) + os.sep  # edge_roofline/, wherever installed
_LIBRARY_DIRS = (f"{os.sep}site-packages{os.sep}", f"{os.sep}dist-packages{os.sep}")


class StartInterrupted(BaseException):
    """Ctrl-C or SIGTERM while the process was still starting. A BaseException, like
    KeyboardInterrupt: no ``except Exception`` on the way takes it for an error."""


def _unsafe(frame) -> bool:
    """Whether an exception raised in this frame could leave native state half made: inside an
    import (a native extension's initialisation, or what it runs) or a library's code (a native
    object between its construction steps, a callback from native code). Our own code and the
    standard library's are safe."""
    filename = frame.f_code.co_filename
    return filename.startswith("<frozen importlib") or (
        any(part in filename for part in _LIBRARY_DIRS) and not filename.startswith(_OWN_CODE))


def safe_caller(frame):
    """Where an interrupt held at ``frame`` can be raised: the frame that called the outermost
    unsafe one down the stack (it runs on once that returns); ``frame`` itself where none is
    unsafe; None where the stack is unsafe to its bottom."""
    safe = frame
    while frame is not None:
        if _unsafe(frame):
            safe = frame.f_back
        frame = frame.f_back
    return safe


class StopSignals:
    def __init__(self, *, interrupt_start: bool = False) -> None:
        self.requested = False
        self.interrupt_start = interrupt_start
        self._untrace = None  # while a held signal waits for its frame: puts the tracing back

    def install(self) -> StopSignals:
        for signum in STOP_SIGNALS:
            signal.signal(signum, self._handle)
        # A node's executable blocks them from its first line (CMakeLists.txt): one sent since comes now.
        signal.pthread_sigmask(signal.SIG_UNBLOCK, STOP_SIGNALS)
        return self

    def started(self) -> None:
        """Signals no longer interrupt: they only ask the loop to end."""
        self.interrupt_start = False
        if self._untrace is not None:  # held to the end of the start: the loop ends at once (requested)
            self._untrace()

    def _handle(self, signum, frame) -> None:
        self.requested = True
        if not self.interrupt_start:
            return
        where = safe_caller(frame)
        if where is frame:
            self._interrupt(signum)
        elif where is not None:
            self._raise_on_return_to(where, signum)
        # else: held to the end of the start, and then the loop ends at once (requested)

    def _interrupt(self, signum) -> None:
        self.interrupt_start = False  # once: a second signal never interrupts the clean-up
        raise StartInterrupted(signal.Signals(signum).name)

    def _raise_on_return_to(self, where, signum) -> None:
        """Raise in ``where`` at its next line (or its return), once the unsafe frames above it
        are done: a trace function of that frame alone (the global one only turns it on)."""
        previous = self._untrace_previous()

        def untrace() -> None:
            self._untrace, where.f_trace = None, None
            sys.settrace(previous)

        def trace(frame, event, arg):
            untrace()
            if self.interrupt_start:
                self._interrupt(signum)
        where.f_trace = trace
        self._untrace = untrace
        sys.settrace(lambda frame, event, arg: None)

    def _untrace_previous(self):
        """The trace function before ours (a debugger's), a held signal's own undone first."""
        if self._untrace is not None:
            self._untrace()
        return sys.gettrace()


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
