"""A language-model node we did not write, measured from its request and token topics alone (the
latency_probe node's generation mode), in the generation node's own terms: one TokenOut per token
seen (a per-step InferenceStats) and one RequestEnd per request (its GenerationStats).

The stamp contract: every token message carries its request's ``header.stamp`` (as
GeneratedToken does); that stamp is the pairing key. Times are the probe's: a request seen, each
token seen. The first token is the prefill step as a subscriber sees it (the node's queue and
both transports included, so ``prefill_s`` is the TTFT); each later token's gap is a decode step
(TPOT). Fields the token type may have are used when present: ``done`` and ``stop_reason`` (the
end, and how), ``token_id``, ``context_tokens``; a request's ``prompt_token_ids`` gives the prompt
length and so each decode step's context. Without ``done``, a request ends when no token came
for ``idle_s`` (stop reason ``idle``); a request with no token within ``timeout_s`` is dropped.
"""

from __future__ import annotations

import collections
from dataclasses import dataclass, field, replace

from edge_roofline.inference.generation import GenerationStats, TokenEvent
from edge_roofline.inference.generation_requests import (COMPLETED, DROPPED, FAILED, REJECTED, Request,
                                                         RequestCounters, RequestEnd, Served, TokenOut)

_OUTCOMES = {REJECTED: REJECTED, DROPPED: DROPPED, FAILED: FAILED, "error": FAILED}


@dataclass
class _Open:
    request: Request
    prompt_tokens: int  # 0: unknown
    seen_wall_s: float
    times_s: list[float] = field(default_factory=list)  # each token seen
    last_wall_s: float = 0.0


class TokenProbe:
    def __init__(self, served: Served, timeout_s: float = 5.0, idle_s: float = 2.0, max_open: int = 1000) -> None:
        if timeout_s <= 0 or idle_s <= 0:
            raise ValueError(f"timeout_s and idle_s must be > 0, got {timeout_s} and {idle_s}")
        self.served, self.timeout_s, self.idle_s, self.max_open = served, timeout_s, idle_s, max_open
        self.counters = RequestCounters()
        self._open: collections.OrderedDict[int, _Open] = collections.OrderedDict()
        self._steps = 0

    def request_seen(self, key: int, request: Request, prompt_tokens: int = 0) -> list[RequestEnd]:
        """A request on the node's request topic; returns those pushed out by a full table."""
        if key in self._open:
            return []  # the same stamp twice: cannot be told apart
        self.counters.received += 1
        self._open[key] = _Open(request, prompt_tokens, request.arrival_wall_s)
        ends = []
        while len(self._open) > self.max_open:
            _, oldest = self._open.popitem(last=False)
            ends.append(self._end(oldest, DROPPED, f"no token within {self.max_open} newer requests"))
        return ends

    def token_seen(self, key: int, now_s: float, wall_s: float, *, token_id: int = 0, done: bool = False,
                   stop_reason: str = "", context: int | None = None) -> list:
        """A message on the token topic: TokenOut (when it holds a token) and, at the end, RequestEnd."""
        entry = self._open.get(key)
        if entry is None:
            self.counters.errors += 1
            self.counters.last_error = "a token's stamp matched no open request (the node must stamp tokens " \
                                       "with its request's header.stamp)"
            return []
        out = []
        if token_id >= 0:
            out.append(self._token(entry, now_s, wall_s, token_id, stop_reason if done else "", context))
        if done:
            del self._open[key]
            outcome = _OUTCOMES.get(stop_reason, COMPLETED)
            out.append(self._end(entry, outcome, "" if outcome == COMPLETED else f"the node ended it: {stop_reason}",
                                 stop_reason or "done"))
        return out

    def _token(self, entry: _Open, now_s: float, wall_s: float, token_id: int, stop_reason: str,
               context: int | None) -> TokenOut:
        index = len(entry.times_s)
        previous_s = entry.times_s[-1] if entry.times_s else entry.request.arrival_s
        entry.times_s.append(now_s)
        entry.last_wall_s = wall_s
        prefill = index == 0
        if context is None:
            context = 0 if prefill or not entry.prompt_tokens else entry.prompt_tokens + index - 1
        event = TokenEvent(index=index, token_id=token_id, phase="prefill" if prefill else "decode",
                           new_tokens=entry.prompt_tokens if prefill else 1, context=context,
                           step_s=now_s - previous_s, since_start_s=now_s - entry.request.arrival_s,
                           stop_reason=stop_reason)
        self._steps += 1
        self.counters.tokens += 1
        return TokenOut(entry.request, event, "", event.since_start_s, 0.0, 0.0, self._steps,
                        replace(self.counters), self.served, done=bool(stop_reason), stop_reason=stop_reason)

    def expire(self, now_s: float) -> list[RequestEnd]:
        """Requests never answered within ``timeout_s`` (dropped), and those whose tokens stopped
        for ``idle_s`` without a done message (ended: completed, stop reason ``idle``)."""
        ends = []
        for key, entry in list(self._open.items()):
            if not entry.times_s and now_s - entry.request.arrival_s > self.timeout_s:
                ends.append(self._end(entry, DROPPED, f"no token within {self.timeout_s} s"))
            elif entry.times_s and now_s - entry.times_s[-1] > self.idle_s:
                ends.append(self._end(entry, COMPLETED, "", "idle"))
            else:
                continue
            del self._open[key]
        return ends

    def _end(self, entry: _Open, outcome: str, error: str, stop_reason: str | None = None) -> RequestEnd:
        c = self.counters
        setattr(c, outcome, getattr(c, outcome) + 1)
        if error:
            c.last_error = f"request {entry.request.request_id}: {error}"
        request, times = entry.request, entry.times_s
        stats = span = None
        if times:
            stats = GenerationStats(
                prompt_tokens=entry.prompt_tokens, output_tokens=len(times), ttft_s=times[0] - request.arrival_s,
                tpot_s=tuple(b - a for a, b in zip(times, times[1:])), total_s=times[-1] - request.arrival_s,
                started_s=request.arrival_s, finished_s=times[-1], stop_reason=stop_reason or outcome)
            span = (entry.seen_wall_s, entry.last_wall_s)
        return RequestEnd(request, outcome, stop_reason or outcome, error, stats, 0.0, replace(c), self.served, span,
                          prefill_s=stats.ttft_s if stats else float("nan"))

    def __len__(self) -> int:
        return len(self._open)
