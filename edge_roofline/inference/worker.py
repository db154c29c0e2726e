"""The inference worker under supervision: a thread runs ``step`` in a loop; if it dies (any
exception a step lets through: a bug, a runtime fault no boundary caught), the supervisor says
so in one line, waits a moment and starts a new one. A worker can therefore never stop serving
in silence (issue 23: a FileNotFoundError killed it and nothing said so).

ROS-free; the node reports ``restarts``/``last_death`` on /diagnostics and in InferenceStats.
"""

from __future__ import annotations

import threading
import traceback
from typing import Callable

from edge_roofline.clock import Clock
from edge_roofline.telemetry.diagnostics import OK, WARN, Status

RECENT_DEATH_S = 60.0  # /diagnostics stays WARN this long after a restart
BUSY_WARN_S = 10.0  # a step (a frame or a profile) running longer than this is reported


def describe_death(exc: BaseException) -> str:
    """One line: the exception and where it was raised (file:line in function)."""
    frames = traceback.extract_tb(exc.__traceback__)
    where = f" at {frames[-1].filename.rsplit('/', 1)[-1]}:{frames[-1].lineno} in {frames[-1].name}" if frames else ""
    text = " ".join(str(exc).split())
    return f"{type(exc).__name__}{': ' + text if text else ''}{where}"


class SupervisedWorker:
    def __init__(self, step: Callable[[], None], *, name: str, on_restart: Callable[[str], None],
                 backoff_s: float = 0.5, clock: Clock | None = None) -> None:
        """``step``: one unit of work (one frame); it should return within about a second so a
        stop is prompt. ``on_restart(message)``: called on the supervisor's thread after a death."""
        self.step, self.name, self.on_restart, self.backoff_s = step, name, on_restart, backoff_s
        self.clock = clock or Clock()
        self.restarts = 0
        self.last_death = ""
        self.last_restart_s = -float("inf")
        self._step_started_s: float | None = None
        self._stop = threading.Event()
        self._supervisor: threading.Thread | None = None

    def start(self) -> "SupervisedWorker":
        self._supervisor = threading.Thread(target=self._supervise, name=f"{self.name}-supervisor", daemon=True)
        self._supervisor.start()
        return self

    def stop(self, timeout_s: float = 10.0) -> bool:
        """Ask the worker to stop after its current step; True once it has."""
        self._stop.set()
        if self._supervisor is not None:
            self._supervisor.join(timeout_s)
            return not self._supervisor.is_alive()
        return True

    def busy_s(self) -> float:
        """How long the current step has been running (0 between steps)."""
        started = self._step_started_s
        return 0.0 if started is None else self.clock.now_s() - started

    def _supervise(self) -> None:
        while not self._stop.is_set():
            died: list[BaseException] = []
            worker = threading.Thread(target=self._work, args=(died,), name=self.name, daemon=True)
            worker.start()
            worker.join()
            if not died:  # stopped on request
                return
            self.restarts += 1
            self.last_death = describe_death(died[0])
            self.last_restart_s = self.clock.now_s()
            self.on_restart(f"{self.name} died ({self.last_death}); restarted it "
                            f"({self.restarts} restart{'s' if self.restarts > 1 else ''} so far)")
            self._stop.wait(self.backoff_s)

    def _work(self, died: list) -> None:
        try:
            while not self._stop.is_set():
                self._step_started_s = self.clock.now_s()
                self.step()
                self._step_started_s = None
        except BaseException as exc:  # noqa: BLE001 - whatever kills the thread is reported, not printed
            self._step_started_s = None
            died.append(exc)


def worker_status(name: str, worker: SupervisedWorker) -> Status:
    """The worker's health for /diagnostics: WARN for a minute after a restart, and while one
    step has run longer than BUSY_WARN_S (a hung backend call cannot be killed, only reported)."""
    busy_s = worker.busy_s()
    values = {"restarts": str(worker.restarts), "last death": worker.last_death or "none",
              "current step (s)": f"{busy_s:.1f}"}
    if worker.clock.now_s() - worker.last_restart_s < RECENT_DEATH_S:
        return Status(name, WARN, f"worker died and was restarted ({worker.restarts} in all): "
                                  f"{worker.last_death}", values)
    if busy_s > BUSY_WARN_S:
        return Status(name, WARN, f"worker busy in one frame or profile for {busy_s:.0f} s", values)
    return Status(name, OK, "serving" if not worker.restarts else f"serving ({worker.restarts} restarts earlier)",
                  values)
