"""Token generation with a KV cache through an inference backend (ONNX Runtime here), with
per-token timings: time to first token (TTFT), time per output token (TPOT), tokens/s.

One decoder graph serves both phases (``roofline/decoder.py`` tells its inputs' roles): the
prefill runs the prompt from an empty cache (past length 0) and yields the first token; each
decode step feeds one token and the cache the previous step returned (``present*`` outputs
become the ``past*`` inputs, in order). Tokens are chosen greedily (argmax) or sampled with
a seeded temperature.

``stream`` yields a ``TokenEvent`` per token as it is produced, so a node can publish it at
once and stop early; ``generate`` collects a ``Generation`` with its ``GenerationStats``. Each
event names its phase, new tokens and context, which is what ``DecoderCostModel.step`` costs:
``phase_bounds`` puts the measured prefill and decode on the roofline of an operating point.
Energy per token needs a power measurement over ``[started_s, finished_s]``
(``GenerationStats.with_energy``); none is taken here.
"""

from __future__ import annotations

from dataclasses import dataclass, replace
from typing import Iterator, Sequence

import numpy as np

from edge_roofline.clock import Clock
from edge_roofline.roofline.decoder import (DecoderCostModel, DecoderSignature, decoder_signature,
                                            is_kv_output)


class GenerationError(RuntimeError):
    """The model cannot generate (not a decoder, an input this loop cannot feed) or a step failed."""


@dataclass(frozen=True)
class TokenEvent:
    index: int          # 0 for the first generated token
    token_id: int
    phase: str          # "prefill" (the first token) | "decode"
    new_tokens: int     # tokens the step fed (the prompt, or 1)
    context: int        # tokens in the KV cache before the step
    step_s: float       # the step's time: the backend run, sampling and cache hand-over (a
                        # simulated backend: the time it reports, the board's)
    since_start_s: float  # from the request's start to this token
    stop_reason: str = ""  # on the request's last token: "eos" | "length" | "context"


@dataclass(frozen=True)
class GenerationStats:
    prompt_tokens: int
    output_tokens: int
    ttft_s: float                 # request start -> first token (the prefill)
    tpot_s: tuple[float, ...]     # each decode step (one per token after the first)
    total_s: float
    started_s: float              # clock readings, to integrate power over the request
    finished_s: float
    stop_reason: str              # "length" | "eos" | "context"
    energy_j: float | None = None

    @property
    def tpot_p50_s(self) -> float | None:
        return float(np.percentile(self.tpot_s, 50)) if self.tpot_s else None

    @property
    def tpot_p95_s(self) -> float | None:
        return float(np.percentile(self.tpot_s, 95)) if self.tpot_s else None

    @property
    def decode_tokens_per_s(self) -> float | None:
        """Decode throughput: tokens after the first over their time."""
        return len(self.tpot_s) / sum(self.tpot_s) if self.tpot_s and sum(self.tpot_s) > 0 else None

    @property
    def tokens_per_s(self) -> float:
        """End to end: every output token over the request's whole time (prefill included)."""
        return self.output_tokens / self.total_s if self.total_s > 0 else 0.0

    @property
    def energy_per_token_j(self) -> float | None:
        return self.energy_j / self.output_tokens if self.energy_j is not None and self.output_tokens else None

    def with_energy(self, energy_j: float) -> "GenerationStats":
        """These stats with the energy measured over ``[started_s, finished_s]``."""
        return replace(self, energy_j=energy_j)


@dataclass(frozen=True)
class Generation:
    prompt: tuple[int, ...]
    tokens: tuple[int, ...]
    events: tuple[TokenEvent, ...]
    stats: GenerationStats


class Generator:
    """Generates tokens from a decoder graph loaded into ``backend`` (ONNX Runtime on the CPU
    by default)."""

    def __init__(self, model, backend=None, clock: Clock | None = None,
                 max_context: int | None = None):
        from edge_roofline.models.source import load_model

        self.model = model if hasattr(model, "graph") else load_model(str(model))
        signature = decoder_signature(self.model)
        if signature is None or not signature.has_kv_cache:
            raise GenerationError("not a decoder with KV-cache inputs (past_key_values.* / "
                                  "past_* / *cache*) and an input_ids-like token input")
        self.signature: DecoderSignature = signature
        if backend is None:
            from edge_roofline.backends import create_backend
            backend = create_backend("ort", providers=["CPUExecutionProvider"])
        self.backend = backend
        self.backend.load(self.model)
        # A simulated backend (the virtual Jetson) reports the device's time for each step; this
        # host's own time computing the outputs stands for that and is not counted.
        self.simulated = getattr(self.backend, "kind", "") == "virtual"
        self.clock = clock or Clock()
        self.max_context = max_context
        self._dtypes = {t.name: np.dtype(t.dtype) for t in self.backend.inputs()}
        self._check_inputs()
        outputs = [t.name for t in self.backend.outputs()]
        self._cache_map = _cache_map(self.signature.past_inputs, [o for o in outputs if is_kv_output(o)])
        self._logits = "logits" if "logits" in outputs else next(
            o for o in outputs if o not in self._cache_map.values())

    def _check_inputs(self) -> None:
        sig = self.signature
        if not np.issubdtype(self._dtypes[sig.token_input], np.integer):
            raise GenerationError(f"input {sig.token_input!r} takes embeddings; this loop feeds "
                                  "token ids")
        for name in self._dtypes:
            if name == sig.token_input or name in sig.past_inputs:
                continue
            role = [r for (n, _), r in sig.roles.items() if n == name]
            if not role or len(sig.declared[name]) != 2:
                raise GenerationError(f"input {name!r}: this loop feeds input_ids, position_ids, "
                                      f"a 2-D attention_mask and the KV cache, nothing else")

    @property
    def vocab_size(self) -> int | None:
        """The logits' last dimension when the graph fixes it (token ids must be below it)."""
        shape = next(t.shape for t in self.backend.outputs() if t.name == self._logits)
        return shape[-1] if shape and isinstance(shape[-1], int) and shape[-1] > 0 else None

    def step_feeds(self, new_tokens: int, context: int) -> dict:
        """The inputs of one step of ``new_tokens`` at ``context`` (token 0, an all-zero cache):
        a step of that size to profile, without a request."""
        return self._feeds([0] * new_tokens, context, {}, zero_cache=True)

    def _feeds(self, tokens: Sequence[int], context: int, past: dict[str, np.ndarray],
               zero_cache: bool = False) -> dict:
        sig = self.signature
        n = len(tokens)
        shapes = sig.input_shapes(n, context)
        feeds = {sig.token_input: np.asarray([tokens], dtype=self._dtypes[sig.token_input])}
        for name, shape in shapes.items():
            if name == sig.token_input or name in sig.past_inputs:
                continue
            role = next(r for (m, _), r in sig.roles.items() if m == name)
            if role == "new":  # position ids of the new tokens
                feeds[name] = np.arange(context, context + n, dtype=self._dtypes[name])[None]
            else:  # an all-ones attention mask over cache and new tokens
                feeds[name] = np.ones(shape, dtype=self._dtypes[name])
        for name in sig.past_inputs:
            feeds[name] = past[name] if context and not zero_cache else np.zeros(shapes[name], self._dtypes[name])
        return feeds

    def stream(self, prompt: Sequence[int], max_new_tokens: int, *, eos_token_id: int | None = None,
               temperature: float = 0.0, seed: int = 0) -> Iterator[TokenEvent]:
        """Yield each generated token as soon as it is produced (greedy when ``temperature`` is
        0). Stops after ``max_new_tokens``, at ``eos_token_id``, or at ``max_context``."""
        prompt = [int(t) for t in prompt]
        if not prompt:
            raise GenerationError("the prompt is empty: give at least one token")
        if max_new_tokens < 1:
            raise GenerationError(f"max_new_tokens must be >= 1, got {max_new_tokens}")
        rng = np.random.default_rng(seed)
        started_s = self.clock.now_s()
        simulated_s = 0.0  # a simulated backend's time since the start
        past: dict[str, np.ndarray] = {}
        feed, context = prompt, 0
        for index in range(max_new_tokens):
            if self.max_context is not None and context + len(feed) > self.max_context:
                return
            step_start_s = self.clock.now_s()
            try:
                result = self.backend.run(self._feeds(feed, context, past))
                logits = np.asarray(result.outputs[self._logits])[0, -1]
            except Exception as exc:  # noqa: BLE001 - the backend's own error types vary
                raise GenerationError(f"step {index} (context {context}, {len(feed)} new "
                                      f"tokens) failed: {exc}") from exc
            token = _choose(logits, temperature, rng)
            past = {p: result.outputs[o] for p, o in self._cache_map.items()}
            now_s = self.clock.now_s()
            if self.simulated:
                step_s = result.latency_s
                simulated_s += step_s
            else:
                step_s = now_s - step_start_s
            yield TokenEvent(index=index, token_id=token, phase="decode" if index else "prefill",
                             new_tokens=len(feed), context=context, step_s=step_s,
                             since_start_s=simulated_s if self.simulated else now_s - started_s,
                             stop_reason=self._stop_reason(token, index, context + len(feed),
                                                           max_new_tokens, eos_token_id))
            if token == eos_token_id:
                return
            context += len(feed)
            feed = [token]

    def _stop_reason(self, token: int, index: int, context_after: int, max_new_tokens: int,
                     eos_token_id: int | None) -> str:
        """Why the request ends after this token ("" when it goes on): the stream knows it before
        it yields, so the last token can say so."""
        if token == eos_token_id:
            return "eos"
        if index + 1 >= max_new_tokens:
            return "length"
        if self.max_context is not None and context_after + 1 > self.max_context:
            return "context"
        return ""

    def generate(self, prompt: Sequence[int], max_new_tokens: int, *, eos_token_id: int | None = None,
                 temperature: float = 0.0, seed: int = 0) -> Generation:
        started_s = self.clock.now_s()
        events = tuple(self.stream(prompt, max_new_tokens, eos_token_id=eos_token_id,
                                   temperature=temperature, seed=seed))
        finished_s = self.clock.now_s()
        total_s = events[-1].since_start_s if self.simulated and events else finished_s - started_s
        stats = GenerationStats(
            prompt_tokens=len(prompt), output_tokens=len(events),
            ttft_s=events[0].since_start_s if events else 0.0,
            tpot_s=tuple(e.step_s for e in events[1:]), total_s=total_s,
            started_s=started_s, finished_s=finished_s,
            stop_reason=events[-1].stop_reason if events else "context")
        return Generation(prompt=tuple(int(t) for t in prompt),
                          tokens=tuple(e.token_id for e in events), events=events, stats=stats)

    def close(self) -> None:
        self.backend.close()


def _cache_map(past: Sequence[str], presents: Sequence[str]) -> dict[str, str]:
    """past input -> the output that holds it after a step: by name (``present`` for
    ``past_key_values`` / ``past``), else in order."""
    if len(presents) != len(past):
        raise GenerationError(f"{len(past)} KV-cache inputs but {len(presents)} present/cache "
                              f"outputs ({list(presents)}): cannot carry the cache")
    by_name = {}
    for out in presents:
        for guess in (out.replace("present", "past_key_values"), out.replace("present", "past")):
            if guess in past:
                by_name[guess] = out
                break
    return by_name if len(by_name) == len(past) else dict(zip(past, presents))


def _choose(logits: np.ndarray, temperature: float, rng: np.random.Generator) -> int:
    if not np.isfinite(logits).all():
        raise GenerationError("the model produced NaN or Inf logits")
    if temperature <= 0:
        return int(np.argmax(logits))
    z = (logits - logits.max()) / temperature
    p = np.exp(z)
    return int(rng.choice(len(p), p=p / p.sum()))


def phase_bounds(generation: Generation, costs: DecoderCostModel, ceilings) -> list:
    """The measured prefill and decode of ``generation`` on the roofline of ``ceilings``
    (``roofline.phases.PhaseBound``, measured times set). Decode is reported at the mean
    context of its steps, with the mean TPOT: a decode step's cost is linear in the context,
    so that step's cost is the average step's exactly (to the rounding of the mean)."""
    from edge_roofline.roofline.phases import bound_phase

    events = generation.events
    if not events:
        return []
    first = events[0]
    out = [bound_phase(costs.step(first.new_tokens, first.context), ceilings,
                       measured_time_s=first.step_s)]
    decode = events[1:]
    if decode:
        mean_context = round(sum(e.context for e in decode) / len(decode))
        out.append(bound_phase(costs.step(1, mean_context), ceilings,
                               measured_time_s=sum(e.step_s for e in decode) / len(decode)))
    return out
