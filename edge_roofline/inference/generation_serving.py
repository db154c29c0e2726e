"""The generation server behind the generation node: prompts in, tokens streamed out one step at a
time, a request's statistics at its end, and roofline reports of both phases.

- Queue: bounded, drop-oldest (counted, and the dropped request is told so).
- Every request ends in one counter: completed, dropped, rejected (a prompt that cannot be
  served: empty, too long, ids outside the vocabulary, ...) or failed (the backend raised); the
  caller always gets a last message with ``done`` and the reason.
- One step per ``process_next``: the supervised worker returns between tokens, so a stop is
  prompt and a hung step is reported; a model switch waits for the request in hand.
- Reports (inference/schedule.py, as the inference node's: at start, after a model switch, when
  the operating point changes, at the cadence, within the budget) are made between requests:
  a prefill of the last request's prompt length and a decode step at the last context it
  reached, profiled on the backend and joined to the decoder's cost at that length
  (``DecoderCostModel.step``), at the operating point read from the board then.
ROS-free: the node feeds it ``Request`` objects and publishes what ``process_next`` returns.
"""

from __future__ import annotations

import collections
import threading
from dataclasses import dataclass, replace
from typing import Any, Callable, Iterator

from edge_roofline.backends import create_backend
from edge_roofline.clock import Clock
from edge_roofline.inference.generation import GenerationError, GenerationStats, Generator, TokenEvent
from edge_roofline.inference.generation_requests import (COMPLETED, DROPPED, FAILED, REJECTED, GenerationConfig,
                                                         Prompt, Request, RequestCounters, RequestEnd, Served,
                                                         TokenOut, check_prompt)
from edge_roofline.inference.schedule import MODEL_SWITCH, POINT_CHANGE, START, PointWatch, ProfileSchedule
from edge_roofline.inference.serving import describe
from edge_roofline.inference.tokenizer import TextStream, Tokenizer, TokenizerError
from edge_roofline.roofline.ceilings import Ceilings
from edge_roofline.roofline.decoder import DecoderCostModel
from edge_roofline.roofline.phases import PhaseBound, bound_phase
from edge_roofline.roofline.model import RooflineAnalysis


class LoadedGenerator:
    """A decoder loaded on a backend, ready to generate, with its cost model per phase, its
    tokenizer and the roofs its reports are drawn against."""

    def __init__(self, config: GenerationConfig, backend_factory: Callable, ceilings: Callable[[], Ceilings]) -> None:
        from edge_roofline.models.source import load_model

        config.validate()
        model = load_model(config.model)
        backend = backend_factory(config.backend, **config.backend_options)
        try:
            self.generator = Generator(model, backend=backend, max_context=config.max_context or None)
            self.costs = DecoderCostModel(model, precision=config.precision)
            vocab = self.generator.vocab_size
            if vocab is not None and config.eos_token_id >= vocab:
                raise ValueError(f"eos_token_id {config.eos_token_id} is outside {config.model}'s vocabulary "
                                 f"(0-{vocab - 1})")
            # The profiling machinery's one-time set-up happens here, on the loading thread.
            backend.describe_layers()
        except Exception:
            backend.close()
            raise
        self.config, self.backend, self.ceilings = config, backend, ceilings
        self.tokenizer, self.vocab_size = Tokenizer(config.tokenizer), vocab
        self.served = Served(config.model, backend.kind, backend.kind == "virtual")
        self.roofs_note = ""  # set by the node: how the roofs differ from where the model runs

    def close(self) -> None:
        self.backend.close()


@dataclass(frozen=True)
class PhaseReport:
    """One phase's roofline: a profiled step joined to its cost at the operating point."""

    phase: PhaseBound  # phase, new tokens, context, bound; .analysis per layer with measured times
    served: Served
    runs: int
    reason: str
    point: Any = None
    roofs_note: str = ""

    @property
    def analysis(self) -> RooflineAnalysis:
        return self.phase.analysis


@dataclass
class _Active:
    request: Request
    loaded: LoadedGenerator
    prompt: Prompt
    stream: Iterator[TokenEvent]
    text: TextStream
    start_s: float  # taken from the queue
    preprocess_s: float
    events: list[TokenEvent]


class GenerationServer:
    def __init__(self, config: GenerationConfig, ceilings: Callable[[], Ceilings], *,
                 backend_factory: Callable = create_backend, join_profile: Callable | None = None,
                 clock: Clock | None = None, point_source: Callable[[], Any] | None = None,
                 point_poll_s: float = 0.5) -> None:
        self.clock = clock or Clock()
        if join_profile is None:
            from edge_roofline.inference.profile_join import join_profile
        self.join_profile, self.backend_factory = join_profile, backend_factory
        self.loaded = LoadedGenerator(config, backend_factory, ceilings)
        self.counters = RequestCounters()
        self._queue: collections.deque[Request] = collections.deque()
        self._cond = threading.Condition()
        self._pending: LoadedGenerator | None = None
        self._active: _Active | None = None
        self._step_index = 0
        self._requests_started = 0
        # (prompt tokens, decode context) the reports are made at: the last request's
        self.report_shape = (config.report_prompt_tokens, config.report_prompt_tokens)
        self.schedule = self._schedule(config, START)
        self.points = PointWatch(point_source, point_poll_s, self.note_error)

    def _schedule(self, config: GenerationConfig, first: str) -> ProfileSchedule:
        return ProfileSchedule(config.profile_every_requests, config.profile_every_s, config.profile_budget_fraction,
                               self.clock.now_s(), first)

    # ---- input ----------------------------------------------------------------------
    def submit(self, request: Request) -> list[RequestEnd]:
        """Queue a request; returns the requests the full queue dropped (the oldest), to tell."""
        dropped = []
        with self._cond:
            self.counters.received += 1
            self._queue.append(request)
            while len(self._queue) > self.loaded.config.queue_depth:
                old = self._queue.popleft()
                self.counters.dropped += 1
                error = (f"dropped: {self.loaded.config.queue_depth} requests were waiting and a newer one came "
                         f"(raise queue_depth, or send requests no faster than they are served)")
                dropped.append(self._end(old, DROPPED, DROPPED, error, None, self.clock.now_s() - old.arrival_s))
            self._cond.notify()
        return dropped

    def note_error(self, message: str, worker_died: bool = False) -> None:
        with self._cond:
            self.counters.errors += 1
            self.counters.worker_restarts += int(worker_died)
            self.counters.last_error = message

    def worker_died(self, message: str) -> list[RequestEnd]:
        """The worker died (a bug no boundary caught): counted, and the request in hand fails."""
        self.note_error(message, worker_died=True)
        active, self._active = self._active, None
        if active is None:
            return []
        active.stream.close()
        with self._cond:
            self.counters.failed += 1
        return [self._finish_end(active, FAILED, FAILED, f"the worker died during the request: {message}")]

    # ---- model switch ---------------------------------------------------------------
    def prepare(self, config: GenerationConfig, ceilings: Callable[[], Ceilings] | None = None) -> LoadedGenerator:
        """Load ``config`` beside the model in service (raises, changing nothing, when it cannot)."""
        return LoadedGenerator(config, self.backend_factory, ceilings or self.loaded.ceilings)

    def hand_over(self, new: LoadedGenerator, wait_s: float = 0.0) -> bool:
        """Give the worker a prepared model, taken after the request in hand; with ``wait_s``,
        waits that long for it. True once ``new`` serves."""
        with self._cond:
            stale, self._pending = self._pending, new
            self._cond.notify_all()
            if wait_s > 0:
                self._cond.wait_for(lambda: self._pending is not new, wait_s)
            swapped = self.loaded is new
        if stale is not None:
            stale.close()
        return swapped

    def _adopt_pending(self) -> None:
        with self._cond:
            new, self._pending = self._pending, None
            if new is None:
                return
            old, self.loaded = self.loaded, new
            self.schedule = self._schedule(new.config, MODEL_SWITCH)
            self._cond.notify_all()
        try:
            old.close()
        except Exception as exc:  # noqa: BLE001 - the backend boundary: a close that fails is reported
            self.note_error(f"closing {old.config.model} failed: {describe(exc)}")

    def close(self) -> None:
        active, self._active = self._active, None
        if active is not None:
            active.stream.close()
        with self._cond:
            pending, self._pending = self._pending, None
        for loaded in (pending, self.loaded):
            if loaded is not None:
                loaded.close()

    # ---- serving --------------------------------------------------------------------
    def process_next(self, timeout_s: float = 0.1) -> list:
        """One unit of work: the next token of the request in hand, else the roofline reports due,
        else the next request's first token. Returns TokenOut / RequestEnd / PhaseReport items."""
        if self._active is not None:
            return self._step(self._active)
        self._adopt_pending()
        now_s = self.clock.now_s()
        if self.points.poll(now_s):
            self.schedule.request(POINT_CHANGE)
        reason = self.schedule.due(now_s)
        if reason:
            return self._reports(self.loaded, reason)
        with self._cond:
            if not self._queue and self._pending is None:
                self._cond.wait(timeout_s)
            request = self._queue.popleft() if self._queue and self._pending is None else None
        return [] if request is None else self._start(request)

    def _start(self, request: Request) -> list:
        loaded, start_s = self.loaded, self.clock.now_s()
        try:
            prompt = check_prompt(request, loaded.config, loaded.tokenizer, loaded.vocab_size)
        except TokenizerError as exc:
            error = f"request {request.request_id} rejected: {exc}"
            with self._cond:
                self.counters.rejected += 1
                self.counters.last_error = error
            return [self._end(request, REJECTED, REJECTED, error, None, start_s - request.arrival_s, loaded)]
        self._requests_started += 1
        stream = loaded.generator.stream(prompt.token_ids, prompt.max_new_tokens, eos_token_id=prompt.eos_token_id,
                                         temperature=loaded.config.temperature, seed=self._requests_started)
        self._active = _Active(request, loaded, prompt, stream, loaded.tokenizer.stream(), start_s,
                               self.clock.now_s() - start_s, [])
        return self._step(self._active)

    def _step(self, a: _Active) -> list:
        try:
            event = next(a.stream)
        except StopIteration:  # the context limit before any token (the prompt's check prevents it)
            return [self._finish(a, COMPLETED, "context")]
        except GenerationError as exc:
            error = f"request {a.request.request_id} failed after {len(a.events)} tokens: {exc}"
            with self._cond:
                self.counters.failed += 1
                self.counters.errors += 1
                self.counters.last_error = error
            return [self._finish(a, FAILED, FAILED, error)]
        a.events.append(event)
        self._step_index += 1
        with self._cond:
            self.counters.tokens += 1
            counters = replace(self.counters)
        text = a.text.piece(event.token_id) + (a.text.flush() if event.stop_reason else "")
        queue_s = a.start_s - a.request.arrival_s
        out = [TokenOut(a.request, event, text, queue_s + a.preprocess_s + event.since_start_s, queue_s,
                        a.preprocess_s, self._step_index, counters, a.loaded.served,
                        done=bool(event.stop_reason), stop_reason=event.stop_reason)]
        if event.stop_reason:
            out.append(self._finish(a, COMPLETED, event.stop_reason))
        return out

    def _finish(self, a: _Active, outcome: str, stop_reason: str, error: str = "") -> RequestEnd:
        self._active = None
        if outcome == COMPLETED:
            with self._cond:
                self.counters.completed += 1
            self.schedule.served()
            if a.events:
                last = a.events[-1]
                self.report_shape = (len(a.prompt.token_ids), last.context if last.phase == "decode"
                                     else last.context + last.new_tokens)
        return self._finish_end(a, outcome, stop_reason, error)

    def _finish_end(self, a: _Active, outcome: str, stop_reason: str, error: str) -> RequestEnd:
        request, events = a.request, a.events
        queue_s = a.start_s - request.arrival_s
        if not events:
            return self._end(request, outcome, stop_reason, error, None, queue_s, a.loaded)
        to_prefill_s = queue_s + a.preprocess_s
        stats = GenerationStats(
            prompt_tokens=len(a.prompt.token_ids), output_tokens=len(events),
            ttft_s=to_prefill_s + events[0].since_start_s, tpot_s=tuple(e.step_s for e in events[1:]),
            total_s=to_prefill_s + events[-1].since_start_s, started_s=request.arrival_s,
            finished_s=self.clock.now_s(), stop_reason=stop_reason)
        # The span on the power monitor's clock: from the prefill's start to now (the last token).
        wall = request.arrival_wall_s - request.arrival_s
        span = (a.start_s + a.preprocess_s + wall, stats.finished_s + wall)
        with self._cond:
            counters = replace(self.counters)
        return RequestEnd(request, outcome, stop_reason, error, stats, queue_s, counters, a.loaded.served, span,
                          prefill_s=events[0].step_s)

    def _end(self, request: Request, outcome: str, stop_reason: str, error: str, stats, queue_s: float,
             loaded: LoadedGenerator | None = None) -> RequestEnd:
        """A request that generated nothing (rejected, dropped, failed at its first step)."""
        with self._cond:  # re-entrant: submit holds it
            counters = replace(self.counters)
        return RequestEnd(request, outcome, stop_reason, error, stats, queue_s, counters,
                          (loaded or self.loaded).served)

    # ---- roofline reports -----------------------------------------------------------
    def _reports(self, loaded: LoadedGenerator, reason: str) -> list[PhaseReport]:
        """Both phases profiled at the point in force now: a prefill of the last prompt length,
        a decode step at the last context reached."""
        start_s = self.clock.now_s()
        prompt_tokens, context = self.report_shape
        reports = []
        try:
            point = self.points.read()
            ceilings = loaded.ceilings()
            for new_tokens, at in ((prompt_tokens, 0), (1, context)):
                profile = loaded.backend.profile(loaded.generator.step_feeds(new_tokens, at), runs=1)
                step = loaded.costs.step(new_tokens, at)
                analysis = self.join_profile(step.cost, profile, ceilings)
                phase = replace(bound_phase(step, ceilings, measured_time_s=profile.total_time_s), analysis=analysis)
                reports.append(PhaseReport(phase, loaded.served, profile.runs, reason, point, loaded.roofs_note))
        except Exception as exc:  # noqa: BLE001 - the backend boundary: ORT's own types, a board read
            with self._cond:
                self.counters.errors += 1
                self.counters.last_error = f"profiling {loaded.config.model} failed: {describe(exc)}"
            reports = []
        end_s = self.clock.now_s()
        # Profiled steps are all extra work: their whole time counts against the budget.
        self.schedule.done(start_s, end_s, end_s - start_s + getattr(loaded.backend, "profiler_prepare_s", 0.0))
        if reports:
            self.points.reported(reports[0].point)
        return reports
