"""What every adapter shares: the deadline, the concurrency limit, validation, usage, cost.

Subclasses implement one method, `_exchange`, that performs one request through the
official SDK and returns the raw answer; everything else happens here, once.
"""

from __future__ import annotations

import asyncio
import json
import time
from abc import ABC, abstractmethod
from collections.abc import Callable
from contextlib import AbstractAsyncContextManager
from dataclasses import dataclass
from typing import Any, TypeVar

import structlog
from pydantic import BaseModel, ValidationError

from bot.metrics import MODEL_CALL_ERRORS, MODEL_CALL_SECONDS, MODEL_COST, MODEL_TOKENS
from bot.providers.base import (
    CallResult,
    InvalidOutput,
    ModelCall,
    OutputT,
    ProviderError,
    ProviderTimeout,
    Refused,
    StartedCall,
    Usage,
)
from bot.providers.capabilities import ModelCapabilities, cost_usd
from bot.providers.errors import scrub
from bot.providers.ranges import conformed
from bot.providers.refs import ModelRef
from bot.providers.salvage import cut_note, whole_parts
from bot.providers.schema import extract_json
from bot.providers.speed import Deadline, deadline_for
from bot.providers.worstcase import max_output_tokens, worst_case_input
from bot.tokens import KINDS, TextKind, TokenEstimator, kinds_of

log = structlog.get_logger(__name__)
ErrorT = TypeVar("ErrorT", bound=ProviderError)
# A fresh async context manager per call that holds one of the provider's concurrency slots:
# an asyncio.Semaphore in one process, a Redis semaphore across workers.
Slot = Callable[[], AbstractAsyncContextManager[Any]]

TRUNCATED = "the answer was cut off at the max-tokens limit before it was complete"
LOOPED = "the answer repeated itself and was cut off before it was complete"


@dataclass
class RawAnswer:
    text: str  # prose, or the structured answer as JSON text
    structured: object | None  # parsed tool input / JSON content when native mode produced it
    usage: Usage
    stop_reason: str | None
    truncated: bool = False
    refusal: str | None = None
    retries: int = 0
    sent_chars: int = 0
    # The server said nothing of the tokens (a stream without a usage chunk, as
    # llama-cpp-python's): `usage` is the estimator's count of what was sent and received.
    usage_estimated: bool = False
    # Reading stopped here (characters) because the answer repeated itself
    # (bot/providers/repetition.py); `truncated` is then True too. None: read to its end.
    looped_at: int | None = None


class Adapter(ABC):
    """One model reference behind one SDK client. Implements `bot.providers.base.Provider`."""

    # Tells keys apart without holding one (a digest; set by the registry).
    key_id: str = ""

    def __init__(
        self,
        ref: ModelRef,
        capabilities: ModelCapabilities,
        *,
        limit: Slot,
        deadline_s: float,
        estimator: TokenEstimator,
    ) -> None:
        self._ref = ref
        self._caps = capabilities
        self._limit = limit
        self._deadline_s = deadline_s
        self._estimator = estimator

    @property
    def ref(self) -> str:
        return self._ref.text

    @property
    def capabilities(self) -> ModelCapabilities:
        return self._caps

    @abstractmethod
    async def _exchange(
        self, request: ModelCall[OutputT], began: asyncio.Event | None
    ) -> RawAnswer: ...

    @abstractmethod
    async def aclose(self) -> None: ...

    @property
    def base_url(self) -> str:
        """The address calls go to (named by errors and the preflight)."""
        return self._ref.base_url or ""

    @property
    def shown_url(self) -> str:
        """`base_url` as messages show it: without credentials a URL may carry."""
        return scrub(self.base_url)

    @property
    def structured_mode(self) -> str:
        """How structured answers are asked for (shown by `council models check`)."""
        return "text"

    async def list_models(self) -> list[str] | None:
        """The models the endpoint serves (its model list), or None where it serves no list.
        Raises ProviderError when the endpoint does not answer or refuses the key."""
        return None

    async def call(self, request: ModelCall[OutputT]) -> CallResult[OutputT]:
        return await self._run(request, None)

    def start(self, request: ModelCall[OutputT]) -> StartedCall[OutputT]:
        """Start a streamed call; `began` is set when the provider's response begins."""
        began = asyncio.Event()
        task = asyncio.create_task(self._run(request, began))
        return StartedCall(task=task, began=began)

    async def _run(
        self, request: ModelCall[OutputT], began: asyncio.Event | None
    ) -> CallResult[OutputT]:
        """One call, counted in the per-model metrics (bot.metrics) under this adapter's
        own reference: its latency from the slot taken to the answer, and its error kind."""
        started: list[float] = []
        try:
            return await self._timed(request, began, started)
        except ProviderError as error:
            MODEL_CALL_ERRORS.labels(self.ref, error.kind.value).inc()
            raise
        finally:
            if started:
                MODEL_CALL_SECONDS.labels(self.ref).observe(time.monotonic() - started[0])

    async def _timed(
        self, request: ModelCall[OutputT], began: asyncio.Event | None, started_at: list[float]
    ) -> CallResult[OutputT]:
        deadline = self.deadline(request)
        async with self._limit():
            started = time.monotonic()
            started_at.append(started)
            try:
                async with asyncio.timeout(deadline.seconds):
                    raw = await self._exchange(request, began)
            except TimeoutError:
                raise ProviderTimeout(
                    f"{self.ref}: no answer within {deadline.described} (retries included)",
                    model=self.ref,
                ) from None
        latency_ms = int((time.monotonic() - started) * 1000)
        sent = sent_kinds(request, raw.sent_chars)
        if raw.usage == Usage() and (raw.text or raw.structured is not None):
            # No usage from the server: counted, not taken as zero (a zero would also teach
            # the estimator that the request cost nothing).
            raw.usage = Usage(
                input_tokens=self._estimator.estimate_kinds(sent),
                output_tokens=self._estimator.estimate(raw.text),
            )
            raw.usage_estimated = True
        else:
            self._estimator.observe(sent, raw.usage.total_input_tokens)
        return self._finish(request, raw, latency_ms)

    def deadline(self, request: ModelCall[Any]) -> Deadline:
        """The deadline of `request` (bot/providers/speed.py): the endpoint's call_deadline_s;
        else the call's own or COUNCIL_CALL_DEADLINE_S, or, where longer, the one the local
        server's speed gives for the request's estimated prompt and its max_tokens."""
        return deadline_for(
            self._ref,
            self.base_url,
            requested_s=request.deadline_s,
            default_s=self._deadline_s,
            prompt_tokens=worst_case_input(request, self._estimator),
            output_tokens=max_output_tokens(self._caps, request),
        )

    def _count_tokens(self, raw: RawAnswer, cost: float) -> None:
        """What the provider billed for this call, under this model's own reference."""
        usage = raw.usage
        MODEL_TOKENS.labels(self.ref, "input").inc(usage.input_tokens)
        MODEL_TOKENS.labels(self.ref, "output").inc(usage.output_tokens)
        MODEL_TOKENS.labels(self.ref, "cache_write").inc(usage.cache_write_tokens)
        MODEL_TOKENS.labels(self.ref, "cache_read").inc(usage.cache_read_tokens)
        MODEL_COST.labels(self.ref).inc(cost)

    def _finish(
        self, request: ModelCall[OutputT], raw: RawAnswer, latency_ms: int
    ) -> CallResult[OutputT]:
        cost = cost_usd(
            self._caps,
            input_tokens=raw.usage.input_tokens,
            output_tokens=raw.usage.output_tokens,
            cache_write_tokens=raw.usage.cache_write_tokens,
            cache_read_tokens=raw.usage.cache_read_tokens,
        )
        self._count_tokens(raw, cost)  # billed, whatever becomes of the answer
        if raw.refusal is not None:
            raise self._paid(Refused(f"{self.ref} refused: {raw.refusal[:300]}"), raw, cost)
        output: OutputT | None = None
        adjusted: list[str] = []
        if request.output is not None:
            validated, adjusted = self._validate(request.output.schema, raw, cost)
            output = validated  # type: ignore[assignment]
        elif raw.truncated:
            log.info("answer_truncated", model=self.ref, label=request.label)
        return CallResult(
            model=self.ref,
            text=raw.text,
            output=output,
            usage=raw.usage,
            cost_usd=cost,
            latency_ms=latency_ms,
            structured_native=raw.structured is not None,
            stop_reason=raw.stop_reason,
            attempts=raw.retries + 1,
            adjusted=tuple(adjusted),
            usage_estimated=raw.usage_estimated,
        )

    def _validate(
        self, schema: type[BaseModel], raw: RawAnswer, cost: float
    ) -> tuple[BaseModel, list[str]]:
        """The answer as `schema`, and a note per change made to read it: a list cut to its
        bound, a number brought into its range (bot/providers/ranges.py), a cut answer read
        as far as it was whole (bot/providers/salvage.py); InvalidOutput when it cannot be
        read as one."""
        if raw.truncated:
            return self._whole_part(schema, raw, cost)
        data = raw.structured
        if data is None:
            try:
                data = extract_json(raw.text)
            except ValueError:
                raise self._invalid(
                    "the answer contained no JSON object; answer with the requested structure only",
                    raw,
                    cost,
                ) from None
        try:
            return conformed(schema, data)
        except ValidationError as err:
            detail = err.errors(include_url=False, include_input=False)
            raise self._invalid(
                f"the answer did not match the schema: {json.dumps(detail)[:2000]}", raw, cost
            ) from None

    def _whole_part(
        self, schema: type[BaseModel], raw: RawAnswer, cost: float
    ) -> tuple[BaseModel, list[str]]:
        """A cut answer (at the max-tokens limit, or stopped looping) read as far as it is
        whole: kept, with a note, when that much validates; else InvalidOutput marked
        `truncated` (the re-ask asks for a shorter answer)."""
        looped = raw.looped_at is not None
        for part in whole_parts(raw.text):
            try:
                output, notes = conformed(schema, part.value)
            except ValidationError:
                continue
            note = cut_note(len(raw.text), looped=looped, repeats=part.repeats)
            log.info("answer_read_as_far_as_whole", model=self.ref, looped=looped)
            return output, [note, *notes]
        error = self._invalid(LOOPED if looped else TRUNCATED, raw, cost)
        error.truncated = True
        raise error

    def _invalid(self, reason: str, raw: RawAnswer, cost: float) -> InvalidOutput:
        error = InvalidOutput(
            f"{self.ref}: {reason}",
            model=self.ref,
            raw=raw.text[:4000],
            validation_error=reason,
            usage=raw.usage,
        )
        return self._paid(error, raw, cost)

    def _paid(self, error: ErrorT, raw: RawAnswer, cost: float) -> ErrorT:
        """A failed call still cost tokens: carry them so the engine can account for them."""
        error.usage = raw.usage
        error.cost_usd = cost
        error.model = self.ref
        return error


def sent_kinds(request: ModelCall[Any], sent_chars: int) -> dict[TextKind, int]:
    """What a request sent, per kind of text: its system blocks and messages split line by
    line; the rest of what the adapter counted (tool schemas, JSON framing) is data."""
    kinds: dict[TextKind, int] = dict.fromkeys(KINDS, 0)
    for text in [*(b.text for b in request.system), *(m.content for m in request.messages)]:
        for kind, n in kinds_of(text).items():
            kinds[kind] += n
    kinds["data"] = max(sent_chars - sum(kinds.values()), 0)
    return kinds
