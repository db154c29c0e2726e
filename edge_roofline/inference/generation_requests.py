"""What the generation server takes and gives: its configuration, a request, the prompt's checks,
the request counters, one streamed token, a request's end, and a request's end waiting for the
power telemetry that covers it (energy per token). ROS-free; the generation node converts these
to GenerationRequest / GeneratedToken / GenerationStats / InferenceStats messages."""

from __future__ import annotations

import math
from dataclasses import dataclass, field, replace
from typing import Any, Sequence

from edge_roofline.inference.generation import GenerationStats, TokenEvent
from edge_roofline.inference.tokenizer import TOKENIZERS, Tokenizer, TokenizerError
from edge_roofline.telemetry.energy_meter import EnergyReading

BACKENDS = ("ort", "virtual")  # generation needs a backend that returns the KV cache as outputs
COMPLETED, REJECTED, DROPPED, FAILED = "completed", "rejected", "dropped", "failed"


@dataclass(frozen=True)
class GenerationConfig:
    model: str = "zoo:tiny_decoder"
    backend: str = "ort"
    precision: str = "fp32"  # of the cost model (and the virtual board's timing)
    tokenizer: str = "bytes"
    max_new_tokens: int = 64  # a request's default (it may ask for fewer or more, up to the limit)
    max_new_tokens_limit: int = 1024
    max_prompt_tokens: int = 1024
    max_context: int = 0  # tokens in the KV cache at most (0: no limit but the model's own)
    eos_token_id: int = -1  # -1: none
    temperature: float = 0.0  # 0: greedy
    queue_depth: int = 8
    profile_every_requests: int = 50  # 0: off
    profile_every_s: float = 10.0  # 0: off
    profile_budget_fraction: float = 0.02
    report_prompt_tokens: int = 32  # the prefill (and decode context) reported before any request
    backend_options: dict = field(default_factory=dict)

    def validate(self) -> None:
        problems = []
        if not self.model:
            problems.append("model is empty: give a decoder's .onnx path or zoo:tiny_decoder")
        if self.backend not in BACKENDS:
            problems.append(f"backend must be {' or '.join(BACKENDS)} for generation, got {self.backend!r}")
        if self.precision not in ("fp32", "fp16", "int8"):
            problems.append(f"precision must be fp32, fp16 or int8, got {self.precision!r}")
        if self.tokenizer not in TOKENIZERS:
            problems.append(f"tokenizer must be one of {', '.join(TOKENIZERS)}, got {self.tokenizer!r}")
        for name in ("max_new_tokens", "max_new_tokens_limit", "max_prompt_tokens", "queue_depth",
                     "report_prompt_tokens"):
            if getattr(self, name) < 1:
                problems.append(f"{name} must be >= 1, got {getattr(self, name)}")
        if self.max_new_tokens > self.max_new_tokens_limit:
            problems.append(f"max_new_tokens ({self.max_new_tokens}) exceeds max_new_tokens_limit "
                            f"({self.max_new_tokens_limit})")
        if self.max_context < 0 or self.eos_token_id < -1 or not self.temperature >= 0:  # NaN: no sampling
            problems.append(f"max_context must be >= 0 (got {self.max_context}), eos_token_id >= -1 (got "
                            f"{self.eos_token_id}) and temperature >= 0 (got {self.temperature})")
        if self.backend_options.get("intra_op_threads", 0) < 0:
            problems.append(f"ort_threads must be >= 0 (0: ONNX Runtime's default), got "
                            f"{self.backend_options['intra_op_threads']}")
        if self.profile_every_requests < 0 or self.profile_every_s < 0:
            problems.append("profile_every_requests and profile_every_s must be >= 0")
        if not 0 < self.profile_budget_fraction <= 1:
            problems.append(f"profile_budget_fraction must be in (0, 1], got {self.profile_budget_fraction}")
        if problems:
            raise ValueError("invalid generation parameters: " + "; ".join(problems))


@dataclass(frozen=True)
class Request:
    arrival_s: float  # on the server's clock
    arrival_wall_s: float  # on the power monitor's clock (ROS time), to find its energy
    stamp: Any = None  # the request's header stamp, carried back on everything about it
    frame_id: str = ""
    request_id: str = ""
    prompt: str = ""
    prompt_token_ids: Sequence[int] = ()
    max_new_tokens: int = 0  # 0: the configured default
    stop_token_id: int = -1  # -1: the configured eos_token_id


@dataclass(frozen=True)
class Prompt:
    token_ids: list[int]
    max_new_tokens: int
    eos_token_id: int | None


def check_prompt(request: Request, config: GenerationConfig, tokenizer: Tokenizer, vocab_size: int | None) -> Prompt:
    """The request's token ids and limits, or a TokenizerError naming what is wrong and the fix."""
    if request.prompt and len(request.prompt_token_ids):
        raise TokenizerError("give prompt (text) or prompt_token_ids, not both")
    if request.prompt:
        problem = tokenizer.check_vocabulary(vocab_size)
        if problem:
            raise TokenizerError(problem)
        ids = tokenizer.encode(request.prompt)
    else:
        ids = [int(t) for t in request.prompt_token_ids]
    if not ids:
        raise TokenizerError("the prompt is empty: give prompt (text) or prompt_token_ids")
    top = vocab_size if vocab_size is not None else 2 ** 31
    bad = next((i for i, t in enumerate(ids) if not 0 <= t < top), None)
    if bad is not None:
        raise TokenizerError(f"prompt_token_ids[{bad}] = {ids[bad]} is outside the model's vocabulary (0-{top - 1})")
    if len(ids) > config.max_prompt_tokens:
        raise TokenizerError(f"the prompt has {len(ids)} tokens, more than max_prompt_tokens "
                             f"({config.max_prompt_tokens}): shorten it or raise max_prompt_tokens")
    if config.max_context and len(ids) + 1 > config.max_context:
        raise TokenizerError(f"the prompt has {len(ids)} tokens: no room for an answer within max_context "
                             f"({config.max_context})")
    max_new = request.max_new_tokens or config.max_new_tokens
    if max_new > config.max_new_tokens_limit:
        raise TokenizerError(f"max_new_tokens {max_new} is over this node's max_new_tokens_limit "
                             f"({config.max_new_tokens_limit}): ask for fewer")
    stop = request.stop_token_id if request.stop_token_id >= 0 else config.eos_token_id
    if request.stop_token_id < -1 or (vocab_size is not None and stop >= vocab_size):
        raise TokenizerError(f"stop_token_id {request.stop_token_id} is not a token id of the model "
                             f"(0-{top - 1}, or -1 for the node's eos_token_id)")
    return Prompt(ids, max_new, stop if stop >= 0 else None)


@dataclass
class RequestCounters:
    """received = completed + dropped + rejected + failed + in_flight (queued or generating)."""

    received: int = 0
    completed: int = 0
    dropped: int = 0
    rejected: int = 0
    failed: int = 0
    tokens: int = 0
    errors: int = 0  # failed requests, failed profiles, worker deaths
    worker_restarts: int = 0
    last_error: str = ""

    @property
    def in_flight(self) -> int:
        return self.received - self.completed - self.dropped - self.rejected - self.failed


@dataclass(frozen=True)
class Served:
    """What every output about a request names: the model and backend that served it."""

    model_id: str
    backend: str
    simulated: bool


@dataclass(frozen=True)
class TokenOut:
    """One generated token as it leaves the server (a GeneratedToken and a per-step InferenceStats)."""

    request: Request
    event: TokenEvent  # phase, context, new tokens, step time
    text: str
    since_request_s: float  # arrival to this token
    queue_delay_s: float  # arrival to the start of the prefill (the same on every token)
    preprocess_s: float  # the tokenizer and the prompt's checks
    step_index: int  # steps served over the node's life
    counters: RequestCounters  # a snapshot
    served: Served
    done: bool = False
    stop_reason: str = ""


@dataclass(frozen=True)
class RequestEnd:
    """A request's end, whatever its outcome (a done GeneratedToken without a token unless it
    completed, and its GenerationStats)."""

    request: Request
    outcome: str  # completed | rejected | dropped | failed
    stop_reason: str
    error: str
    stats: GenerationStats | None  # None when nothing was generated
    queue_delay_s: float
    counters: RequestCounters
    served: Served
    span_wall_s: tuple[float, float] | None = None  # prefill start -> last token (power's clock)
    prefill_s: float = math.nan  # the prefill step
    energy: EnergyReading | None = None  # None until the telemetry has covered span_wall_s

    @property
    def tokens_sent(self) -> int:
        return self.stats.output_tokens if self.stats else 0


def not_measured(end: RequestEnd) -> RequestEnd:
    """A request with nothing generated draws no energy of its own: NaN, with the reason."""
    return replace(end, energy=EnergyReading(math.nan, f"nothing was generated ({end.outcome})"))
