"""The supervised inference worker: a death is said in one line (what and where) and the worker
restarts; a stop ends it after the step in hand; /diagnostics says WARN after a death and while
a step hangs."""

import threading
import time

from edge_roofline.clock import SimClock
from edge_roofline.inference.worker import BUSY_WARN_S, RECENT_DEATH_S, SupervisedWorker, worker_status
from edge_roofline.telemetry.diagnostics import OK, WARN


def wait_for(predicate, timeout_s=10.0):
    deadline = time.monotonic() + timeout_s
    while time.monotonic() < deadline:
        if predicate():
            return True
        time.sleep(0.01)
    return False


def test_a_dying_worker_is_restarted_and_says_why():
    steps, restarts = [], []

    def step():
        steps.append(1)
        if len(steps) in (3, 5):
            raise FileNotFoundError(2, "No such file or directory", "/tmp/edge_roofline_ort_x/profile_1.json")
        time.sleep(0.001)

    worker = SupervisedWorker(step, name="inference-worker", on_restart=restarts.append, backoff_s=0.01).start()
    try:
        assert wait_for(lambda: len(steps) > 20), "the worker did not come back after dying"
    finally:
        assert worker.stop()
    assert worker.restarts == 2 and len(restarts) == 2
    assert "inference-worker died (FileNotFoundError" in restarts[0] and "profile_1.json" in restarts[0]
    assert "test_worker.py" in restarts[0] and "in step" in restarts[0]  # where it was raised
    assert "2 restarts so far" in restarts[1] and "\n" not in restarts[1]


def test_stop_waits_for_the_step_in_hand():
    inside, release = threading.Event(), threading.Event()
    finished = []

    def step():
        inside.set()
        release.wait(5)
        finished.append(1)

    worker = SupervisedWorker(step, name="w", on_restart=lambda m: None).start()
    assert inside.wait(5)
    threading.Timer(0.2, release.set).start()
    assert worker.stop(timeout_s=5) and finished


def test_diagnostics_warn_after_a_death_and_while_a_step_hangs():
    clock = SimClock(100.0)
    worker = SupervisedWorker(lambda: None, name="w", on_restart=lambda m: None, clock=clock)
    assert worker_status("inference: worker", worker).level == OK
    worker.restarts, worker.last_death, worker.last_restart_s = 1, "RuntimeError: boom at x.py:1 in f", 100.0
    status = worker_status("inference: worker", worker)
    assert status.level == WARN and "boom" in status.message and status.values["restarts"] == "1"
    clock.advance(RECENT_DEATH_S + 1)
    assert worker_status("inference: worker", worker).level == OK
    worker._step_started_s = clock.now_s()
    clock.advance(BUSY_WARN_S + 1)
    assert "busy" in worker_status("inference: worker", worker).message
