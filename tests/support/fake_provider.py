"""An in-process stand-in for the model providers, for fast engine unit tests.

`FakeProviders` is a `ProviderSource` (what `Engine` takes): `get(ref)` returns a
`FakeProvider` that answers each `ModelCall` in this process - no HTTP, no SDK - with the
`CouncilScript` answer for the call's tool, read from the same seat brief the HTTP fake
reads, and validated against the call's schema as the adapters validate it. Rules script the
rest per seat, phase tool or model: another answer, an answer that does not validate, or a
typed provider error. Every call is logged, with the tokens it was charged.

    fake = FakeProviders(CouncilScript(vote="REJECT"))
    fake.on(seat="seat-2", tool="submit_assessment", reply=ProviderFault.timeout())
    advisory = await Engine(fake, load_catalog(), InMemoryLedger()).deliberate(request)
    assert fake.tools().count("submit_vote") == 4

Usage is a fixed estimate: the characters of the system blocks, messages and tool names
sent, and of the answer, at `chars_per_token` characters a token (4, as the HTTP fake counts),
priced with the model's capabilities (`FAKE_CAPABILITIES` unless `model_capabilities` gives a
model its own; a model mapped to None does not resolve). Nothing is cached. A failed call is
charged as the adapters charge it: an answer that does not validate costs its tokens (an
answer cut off at the output limit, `ProviderFault.truncated()`, a full `max_tokens` of
output), a raised error costs nothing.
"""

from __future__ import annotations

import asyncio
import json
import math
import time
from collections.abc import Callable, Iterable, Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any, TypeAlias, cast

from pydantic import ValidationError

from bot.providers import (
    CallResult,
    ConfigurationError,
    InvalidOutput,
    ModelCall,
    ModelCapabilities,
    ProviderError,
    ProviderTimeout,
    RateLimited,
    Refused,
    ServerError,
    StartedCall,
    Unreachable,
    Usage,
    cost_usd,
)
from bot.providers.adapter import TRUNCATED
from bot.providers.base import OutputT
from bot.providers.schema import extract_json
from tests.support.council_answers import CouncilScript, label_of, persona_of

__all__ = [
    "DEFAULT_MODELS",
    "FAKE_CAPABILITIES",
    "Answer",
    "FakeCall",
    "FakeProvider",
    "FakeProviders",
    "ProviderFault",
    "Raise",
    "ReplySpec",
]

DEFAULT_MODELS = ("fake:alpha", "fake:beta")
# USD 1 per million input tokens, 5 per million output tokens.
FAKE_CAPABILITIES = ModelCapabilities(
    family="openai",
    match="fake*",
    context_window=200_000,
    max_output_tokens=16_384,
    structured="json_schema",
    min_cache_tokens=1024,
    input_price=1.0,
    output_price=5.0,
    cache_write_price=0.0,
    cache_read_price=0.0,
)
# The script's answer to a call without a schema (or with a tool the script does not know).
PLAIN_ANSWER = "OK"


@dataclass(frozen=True)
class Answer:
    """A scripted answer; with no field set, the script's answer for the call's tool.

    `json` replaces the script's answer, `update` changes some of its fields, `text` answers
    with raw text instead of JSON (prose, partial JSON). An answer slower than the call's
    deadline raises `ProviderTimeout`, as the adapters do. `truncated`: the answer stopped at
    the output limit (`InvalidOutput` with `truncated`, a full `max_tokens` of output paid);
    `reasoning_tokens` are added to the output tokens, as reasoning models count them.
    """

    json: dict[str, Any] | None = None
    update: dict[str, Any] = field(default_factory=dict)
    text: str | None = None
    delay_s: float = 0.0
    truncated: bool = False
    reasoning_tokens: int = 0


@dataclass(frozen=True)
class Raise:
    """A typed provider error instead of an answer (after `delay_s`)."""

    error: type[ProviderError]
    message: str
    delay_s: float = 0.0


ReplySpec: TypeAlias = "Answer | Raise | Callable[[FakeCall], Answer | Raise]"


class ProviderFault:
    """Constructors of what goes wrong with a real provider, as the engine sees it."""

    @staticmethod
    def timeout() -> Raise:
        """The adapter gave up: the deadline passed (the SDK's retries included)."""
        return Raise(ProviderTimeout, "no answer within the deadline (retries included)")

    @staticmethod
    def hang() -> Answer:
        """An answer that never comes: the call runs into its own deadline."""
        return Answer(delay_s=math.inf)

    @staticmethod
    def rate_limited() -> Raise:
        return Raise(RateLimited, "rate limited (retries exhausted): too many requests")

    @staticmethod
    def server_error() -> Raise:
        return Raise(ServerError, "provider error 500: internal error")

    @staticmethod
    def unreachable() -> Raise:
        return Raise(Unreachable, "cannot reach the provider (connection refused)")

    @staticmethod
    def refused() -> Raise:
        return Raise(Refused, "refused: I can't help with that")

    @staticmethod
    def invalid() -> Answer:
        """JSON that does not match any council schema: `InvalidOutput`, with the tokens paid."""
        return Answer(json={"verdict": "MAYBE", "score": 11})

    @staticmethod
    def off_topic() -> Answer:
        """Prose instead of the structured answer: `InvalidOutput` (no JSON object)."""
        return Answer(text="I would need to see the rest of the repository to review this.")

    @staticmethod
    def truncated() -> Answer:
        """An answer cut off at the output limit (`length` / `max_tokens`): `InvalidOutput`
        with `truncated`, a full `max_tokens` of output paid."""
        return Answer(
            text='{"verdict": "APPROVE", "score": 8, "lens_scores": [{"lens', truncated=True
        )

    @staticmethod
    def incomplete() -> Answer:
        """An assessment that validates but scores none of the seat's lenses: the
        completeness gate, not the schema, sends it back."""
        return Answer(update={"lens_scores": []})


@dataclass
class FakeCall:
    """One call as the fake saw it; `status` and `usage` are set once it ends."""

    model: str
    label: str  # ModelCall.label: "<seat id>/<tool name>"
    seat: str  # the seat id (or "chair", "judge", "designer")
    tool: str | None  # the phase's output tool; None for a plain call
    reask: bool  # the call carries an earlier answer and the engine's re-ask
    text: str  # the messages' text (the seat's brief and task, a transcript)
    request: ModelCall[Any]
    status: str | None = None  # "ok" or the ErrorKind value; None while under way
    usage: Usage = field(default_factory=Usage)
    cost_usd: float = 0.0

    @property
    def persona(self) -> str:
        """The persona the seat is seated as ("" for the officers)."""
        return persona_of(self.text)

    @property
    def member(self) -> str:
        """The seat's anonymous label, e.g. "Member B" ("" for the officers)."""
        return label_of(self.text)


@dataclass
class _Rule:
    match: Callable[[FakeCall], bool] | None
    seats: frozenset[str] | None
    tool: str | None
    model: str | None
    reply: ReplySpec
    remaining: int | None

    def matches(self, call: FakeCall) -> bool:
        return (
            self.remaining != 0
            and (self.seats is None or call.seat in self.seats)
            and (self.tool is None or call.tool == self.tool)
            and (self.model is None or call.model == self.model)
            and (self.match is None or self.match(call))
        )


class FakeProvider:
    """One model reference of a `FakeProviders`; implements `bot.providers.Provider`."""

    def __init__(self, source: FakeProviders, ref: str) -> None:
        self._source = source
        self._ref = ref

    @property
    def ref(self) -> str:
        return self._ref

    @property
    def capabilities(self) -> ModelCapabilities:
        return self._source.capabilities_of(self._ref)

    async def call(self, request: ModelCall[OutputT]) -> CallResult[OutputT]:
        return await self._source.answer(self._ref, request, None)

    def start(self, request: ModelCall[OutputT]) -> StartedCall[OutputT]:
        """The streamed form: `began` is set as soon as the fake starts answering."""
        began = asyncio.Event()
        task = asyncio.create_task(self._source.answer(self._ref, request, began))
        return StartedCall(task=task, began=began)

    async def aclose(self) -> None:
        return None


class FakeProviders:
    """Scripted providers for every model reference, with one call log.

    `script` answers every call no rule matches. `deadline_s` applies to a call that sets
    no `deadline_s` of its own (the engine always sets one)."""

    def __init__(
        self,
        script: CouncilScript | None = None,
        *,
        models: Sequence[str] = DEFAULT_MODELS,
        chars_per_token: float = 4.0,
        capabilities: ModelCapabilities = FAKE_CAPABILITIES,
        model_capabilities: Mapping[str, ModelCapabilities | None] | None = None,
        deadline_s: float = 30.0,
    ) -> None:
        self.script = script or CouncilScript()
        self.models = list(models)
        self.chars_per_token = chars_per_token
        self.capabilities = capabilities
        # Per model reference; None: the reference does not resolve (ConfigurationError).
        self.model_capabilities = dict(model_capabilities or {})
        self.deadline_s = deadline_s
        self.calls: list[FakeCall] = []
        self._rules: list[_Rule] = []
        self._providers: dict[str, FakeProvider] = {}

    # -- ProviderSource (and what the engine's callers ask a ProviderRegistry) --------------

    def get(self, ref: str) -> FakeProvider:
        self.capabilities_of(ref)  # an unresolvable reference has no provider either
        provider = self._providers.get(ref)
        if provider is None:
            provider = self._providers[ref] = FakeProvider(self, ref)
        return provider

    def capabilities_of(self, ref: str) -> ModelCapabilities:
        if ref not in self.model_capabilities:
            return self.capabilities
        caps = self.model_capabilities[ref]
        if caps is None:
            raise ConfigurationError(f"{ref}: no such model (the fake resolves it to none)")
        return caps

    def configured_models(self) -> list[str]:
        return list(self.models)

    async def available_models(self) -> list[str]:
        return list(self.models)

    async def aclose(self) -> None:
        self._providers.clear()

    # -- scripting --------------------------------------------------------------------------

    def on(
        self,
        match: Callable[[FakeCall], bool] | None = None,
        *,
        seat: str | Iterable[str] | None = None,
        tool: str | None = None,
        model: str | None = None,
        reply: ReplySpec,
        times: int | None = None,
    ) -> None:
        """Add a rule for the calls of `seat` (one id or several), `tool`, `model` and
        `match`, all that are given. Rules are tried in the order added; one with `times` is
        used up after that many calls; a call no rule matches gets the script's answer."""
        seats = None if seat is None else frozenset([seat] if isinstance(seat, str) else seat)
        self._rules.append(_Rule(match, seats, tool, model, reply, times))

    def reset(self) -> None:
        """Forget the calls and the rules (the script stays)."""
        self.calls.clear()
        self._rules.clear()

    # -- reading the log --------------------------------------------------------------------

    def calls_for(
        self, *, seat: str | None = None, tool: str | None = None, model: str | None = None
    ) -> list[FakeCall]:
        return [
            c
            for c in self.calls
            if (seat is None or c.seat == seat)
            and (tool is None or c.tool == tool)
            and (model is None or c.model == model)
        ]

    def tools(self) -> list[str | None]:
        """The tool of every call, in the order the calls began."""
        return [c.tool for c in self.calls]

    @property
    def usage(self) -> Usage:
        total = Usage()
        for call in self.calls:
            total = total + call.usage
        return total

    @property
    def cost_usd(self) -> float:
        return sum(c.cost_usd for c in self.calls)

    def tokens(self, text: str) -> int:
        return math.ceil(len(text) / self.chars_per_token) if text else 0

    # -- answering --------------------------------------------------------------------------

    async def answer(
        self, ref: str, request: ModelCall[OutputT], began: asyncio.Event | None
    ) -> CallResult[OutputT]:
        call = self._log(ref, request)
        spec = self._choose(call)
        deadline = request.deadline_s or self.deadline_s
        started = time.monotonic()
        try:
            async with asyncio.timeout(deadline):
                if began is not None:
                    began.set()
                if spec.delay_s:
                    await asyncio.sleep(spec.delay_s)
        except TimeoutError:
            call.status = ProviderTimeout.kind.value
            raise ProviderTimeout(
                f"{ref}: no answer within the {deadline:g} s deadline (retries included)",
                model=ref,
            ) from None
        if isinstance(spec, Raise):
            call.status = spec.error.kind.value
            raise spec.error(f"{ref}: {spec.message}", model=ref)
        return self._finish(call, request, spec, int((time.monotonic() - started) * 1000))

    def _log(self, ref: str, request: ModelCall[Any]) -> FakeCall:
        call = FakeCall(
            model=ref,
            label=request.label,
            seat=request.label.split("/", 1)[0],
            tool=request.output.name if request.output is not None else None,
            reask=any(m.role == "assistant" for m in request.messages),
            text="\n\n".join(m.content for m in request.messages),
            request=request,
        )
        self.calls.append(call)
        return call

    def _choose(self, call: FakeCall) -> Answer | Raise:
        for rule in self._rules:
            if rule.matches(call):
                if rule.remaining is not None:
                    rule.remaining -= 1
                return rule.reply(call) if callable(rule.reply) else rule.reply
        return Answer(delay_s=self.script.latency_s)

    def _finish(
        self, call: FakeCall, request: ModelCall[OutputT], spec: Answer, latency_ms: int
    ) -> CallResult[OutputT]:
        data: Any = None
        if spec.text is not None:
            raw = spec.text
        else:
            data = spec.json if spec.json is not None else self.script.answer(call.tool, call.text)
            if data is not None and spec.update:
                data = {**data, **spec.update}
            raw = PLAIN_ANSWER if data is None else json.dumps(data)
        sent = [b.text for b in request.system] + [m.content for m in request.messages]
        sent += [t.name for t in request.all_tools()]
        caps = self.capabilities_of(call.model)
        output_tokens = self.tokens(raw) + spec.reasoning_tokens
        if spec.truncated:
            output_tokens = min(request.max_tokens, caps.max_output_tokens)
        call.usage = Usage(
            input_tokens=self.tokens("".join(sent)),
            output_tokens=output_tokens,
            reasoning_tokens=spec.reasoning_tokens,
        )
        call.cost_usd = cost_usd(
            caps,
            input_tokens=call.usage.input_tokens,
            output_tokens=call.usage.output_tokens,
        )
        if spec.truncated:
            error = self._invalid(call, raw, TRUNCATED)
            error.truncated = True
            raise error
        output = None
        if request.output is not None:
            output = self._validate(call, request.output.schema, raw, data)
        call.status = "ok"
        return CallResult(
            model=call.model,
            text=raw,
            output=cast("OutputT | None", output),
            usage=call.usage,
            cost_usd=call.cost_usd,
            latency_ms=latency_ms,
            structured_native=spec.text is None,
            stop_reason="end_turn",
        )

    def _validate(self, call: FakeCall, schema: type[Any], raw: str, data: Any) -> Any:
        """The adapters' validation, with their reasons (what the engine's re-ask sends)."""
        if data is None:
            try:
                data = extract_json(raw)
            except ValueError:
                raise self._invalid(
                    call,
                    raw,
                    "the answer contained no JSON object; answer with the requested structure only",
                ) from None
        try:
            return schema.model_validate(data)
        except ValidationError as err:
            detail = err.errors(include_url=False, include_input=False)
            raise self._invalid(
                call, raw, f"the answer did not match the schema: {json.dumps(detail)[:2000]}"
            ) from None

    def _invalid(self, call: FakeCall, raw: str, reason: str) -> InvalidOutput:
        call.status = InvalidOutput.kind.value
        error = InvalidOutput(
            f"{call.model}: {reason}",
            model=call.model,
            raw=raw[:4000],
            validation_error=reason,
            usage=call.usage,
        )
        error.cost_usd = call.cost_usd
        return error


def engine_request(protocol: str = "board", *, did: str = "d-1", **kw: Any) -> Any:
    """A deliberation request for engine tests on this fake: five board seats (min_size 5:
    filled from other divisions past the best-scored), one round, a short deadline."""
    from bot.council.board import BoardConfig
    from bot.council.engine import DeliberationRequest
    from bot.council.scoring import ReviewSignals

    values: dict[str, Any] = {
        "deliberation_id": did,
        "topic": "Review this pull request",
        "protocol": protocol,
        "context": "<untrusted-diff>\n+ retry(request)\n</untrusted-diff>",
        "signals": ReviewSignals(
            topic="Review this pull request",
            languages=["python"],
            areas=["security", "concurrency"],
        ),
        "models": list(DEFAULT_MODELS),
        "board": BoardConfig(default_size=5, min_size=5, discussion_rounds=1),
        "assessment_timeout_s": 5.0,
    }
    values.update(kw)
    return DeliberationRequest(**values)
