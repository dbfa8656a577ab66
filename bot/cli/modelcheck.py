"""`council models check`: one tiny structured call per model, and what worked (the
command `bot/cli/models.py` prints the table).

Beside it, what a call to each model reserves against the cost caps
(`bot.council.reserving`): for a typical seat call (a full context of
`COUNCIL_CONTEXT_TOKENS`, the review's output limit) the input estimate and the 95th
percentile of the output tokens of the model's last 50 answers, as the store
(`DATABASE_URL`) records them, or the worst case (the whole output limit) for a model
never seen.

And, for a model on a local server, its speed (bot/providers/speed.py: one short streamed
probe): tokens per second of prompt evaluation and of generation, the endpoint entry that
sets them, what a typical seat call (the context budget, the rules, a seat's brief and the
schema in; the assessment's answer out) takes at that speed, the deadline such a call gets,
and a warning when it would not finish within the limits in force.
"""

from __future__ import annotations

import asyncio
import math
import time
from dataclasses import dataclass
from functools import lru_cache
from typing import Any

from pydantic import BaseModel, ConfigDict, Field

from bot.council import prompts
from bot.council.engine import DeliberationRequest
from bot.council.personas import load_catalog
from bot.council.protocols.board import BOARD
from bot.council.reserving import plan_for_input
from bot.council.seats import seat_from_persona
from bot.providers import (
    Message,
    ModelCall,
    ModelCapabilities,
    OutputTool,
    ProviderError,
    ProviderRegistry,
    SystemBlock,
)
from bot.providers.adapter import Adapter
from bot.providers.errors import scrub
from bot.providers.refs import ModelRef
from bot.providers.schema import schema_instructions, tool_schema
from bot.providers.speed import Deadline, Speed, deadline_for, measure, rate, remember, speed_of
from bot.providers.worstcase import CALL_OVERHEAD_TOKENS, max_output_tokens, worst_case_input
from bot.settings import Settings
from bot.tokens import default_estimator

CHECK_DEADLINE_S = 60.0
NEVER_SEEN = "worst case (never seen)"
UNREADABLE = "unknown (the store could not be read)"
# A seat call's output limit: the review's (DeliberationRequest.max_tokens).
SEAT_MAX_TOKENS: int = DeliberationRequest.model_fields["max_tokens"].default


class Ping(BaseModel):
    """The smallest structured answer that still exercises the schema path."""

    model_config = ConfigDict(extra="forbid")

    ok: bool = Field(description="Always true.")
    word: str = Field(description="The single word 'ready'.")


PING_TOOL = OutputTool("ping", "Confirm you can answer in this structure.", Ping)


class CheckResult(BaseModel):
    model: str
    provider: str = ""
    ok: bool
    # The endpoint answered (its model list, or the check's own call).
    reachable: bool
    structured: bool
    # How structured answers are asked for: json_schema, json_object, tools, text, format.
    structured_mode: str | None
    latency_ms: int | None
    input_tokens: int
    output_tokens: int
    context_window: int | None
    max_output_tokens: int | None
    # Where its price came from: table, operator, endpoint, local (free) or unknown.
    price_source: str | None
    input_price: float | None  # USD per million tokens
    output_price: float | None
    error: str | None
    # What a typical seat call reserves: the p95 of the output tokens of the model's last
    # answers (None: none recorded), how many answers that is, the output tokens and the
    # dollars held (None: the model does not resolve, or its price is unknown), and on what
    # basis ("p95 of the last N answers", or NEVER_SEEN: the whole output limit).
    p95_output_tokens: int | None = None
    recorded_answers: int = 0
    reserve_output_tokens: int | None = None
    reserve_usd: float | None = None
    reserve_basis: str | None = None
    # A local server's speed as this check measured it (None: not local, or not measured:
    # `speed_error` says why), and the entry that sets it in COUNCIL_ENDPOINTS.
    prompt_tokens_per_s: float | None = None
    output_tokens_per_s: float | None = None
    speed_error: str | None = None
    endpoint_entry: dict[str, Any] | None = None
    # A typical seat call: its prompt (`seat_context_tokens` of it the context budget, the
    # rest the rules, a seat's brief and the schema), the max_tokens it asks for, the answer
    # its time is estimated for (`seat_answer_basis`), that time at the speed (None: no speed
    # known), and the deadline it gets (`seat_deadline`: where that comes from).
    seat_prompt_tokens: int | None = None
    seat_context_tokens: int | None = None
    seat_max_tokens: int | None = None
    seat_answer_tokens: int | None = None
    seat_answer_basis: str | None = None
    seat_call_s: float | None = None
    seat_deadline_s: float | None = None
    seat_deadline: str | None = None
    # What would stop such a call, in words; empty: nothing.
    warnings: list[str] = Field(default_factory=list)


async def check_model(registry: ProviderRegistry, ref: str) -> CheckResult:
    started = time.monotonic()
    provider = ref.partition(":")[0]
    try:
        adapter = registry.get(ref)
    except ProviderError as err:
        return _failed(ref, provider, started, err, reachable=False)
    caps = adapter.capabilities
    described = {
        "context_window": caps.context_window,
        "max_output_tokens": caps.max_output_tokens,
        "price_source": caps.price_source,
        "input_price": caps.input_price if caps.priced else None,
        "output_price": caps.output_price if caps.priced else None,
    }
    try:
        await adapter.list_models()
    except ProviderError as err:
        return _failed(ref, provider, started, err, reachable=False, **described)
    started = time.monotonic()
    try:
        result = await adapter.call(
            ModelCall[Ping](
                system=[SystemBlock(text="You are a connectivity check. Answer briefly.")],
                messages=[Message(role="user", content="Reply with ok=true and word='ready'.")],
                output=PING_TOOL,
                max_tokens=64,
                deadline_s=CHECK_DEADLINE_S,
                label="models-check",
            )
        )
    except ProviderError as err:
        return _failed(ref, provider, started, err, reachable=True, **described)
    measured = await speed_fields(adapter, registry.resolve(ref))
    return CheckResult(
        model=ref,
        provider=provider,
        ok=True,
        reachable=True,
        structured=result.structured_native,
        structured_mode=_mode_seen(adapter.structured_mode, result.structured_native),
        latency_ms=result.latency_ms,
        input_tokens=result.usage.total_input_tokens,
        output_tokens=result.usage.output_tokens,
        error=None,
        **described,
        **measured,
    )


def _failed(
    ref: str,
    provider: str,
    started: float,
    err: ProviderError,
    *,
    reachable: bool,
    **described: Any,
) -> CheckResult:
    return CheckResult(
        model=ref,
        provider=provider,
        ok=False,
        reachable=reachable,
        structured=False,
        structured_mode=None,
        latency_ms=int((time.monotonic() - started) * 1000),
        input_tokens=err.usage.total_input_tokens,
        output_tokens=err.usage.output_tokens,
        error=f"{err.kind.value}: {err}",
        **{
            "context_window": None,
            "max_output_tokens": None,
            "price_source": None,
            "input_price": None,
            "output_price": None,
            **described,
        },
    )


async def check_models(settings: Settings, models: list[str]) -> list[CheckResult]:
    registry = ProviderRegistry(settings)
    try:
        refs = models or await registry.available_models()
        results = list(await asyncio.gather(*(check_model(registry, ref) for ref in refs)))
        caps = {ref: _capabilities(registry, ref) for ref in refs}
        seats: dict[str, SeatCall | None] = {ref: seat_call(registry, ref) for ref in refs}
    finally:
        await registry.aclose()
    if not results:
        return []
    sizes = await recorded_sizes(settings, refs)
    return [
        with_seat_call(with_reservation(r, caps[r.model], sizes, settings), seats[r.model])
        for r in results
    ]


Recorded = dict[str, tuple[int | None, int]]  # model -> (p95 or None, answers recorded)


async def recorded_sizes(settings: Settings, models: list[str]) -> Recorded | None:
    """The p95 of each model's recorded answers in the store; None: it could not be read."""
    from sqlalchemy.exc import SQLAlchemyError

    from bot.store.answer_sizes import StoreAnswerSizes
    from bot.store.db import Database

    db = Database(settings.database_url)
    try:
        await db.connect()
        return await StoreAnswerSizes(db).p95_of(models)
    except (SQLAlchemyError, OSError):
        return None
    finally:
        await db.dispose()


def _capabilities(registry: ProviderRegistry, ref: str) -> ModelCapabilities | None:
    try:
        return registry.capabilities_of(ref)
    except ProviderError:
        return None


def with_reservation(
    result: CheckResult, caps: ModelCapabilities | None, sizes: Recorded | None, settings: Settings
) -> CheckResult:
    """`result` with what a typical seat call to its model reserves."""
    if caps is None:
        return result
    if sizes is None:
        return result.model_copy(update={"reserve_basis": UNREADABLE})
    p95, answers = sizes.get(result.model, (None, 0))
    estimator = default_estimator()
    input_tokens = math.ceil(settings.context_tokens * (1 + estimator.margin))
    plan = plan_for_input(
        caps,
        input_tokens + CALL_OVERHEAD_TOKENS,
        min(SEAT_MAX_TOKENS, caps.max_output_tokens),
        p95,
    )
    return result.model_copy(
        update={
            "p95_output_tokens": p95,
            "recorded_answers": answers,
            "reserve_output_tokens": plan.expected_output,
            "reserve_usd": round(plan.hold_usd, 6) if caps.priced else None,
            "reserve_basis": f"p95 of the last {answers} answers" if plan.seen else NEVER_SEEN,
        }
    )


def _mode_seen(mode: str, native: bool) -> str:
    """The mode the check saw work: a server that took a format but answered prose ignores
    it (a review reads such answers, and after a few in a row puts the schema in the prompt:
    bot/providers/negotiation.py `IGNORED_TO_GIVE_UP`), so it is reported as text."""
    if not native and mode in ("json_schema", "json_object", "tools"):
        return "text"
    return mode


async def speed_fields(adapter: Adapter, ref: ModelRef) -> dict[str, Any]:
    """A local server's speed, measured now (and remembered in this process, as a review's
    preflight does), and the COUNCIL_ENDPOINTS entry that sets it; {} for any other."""
    if not ref.local:
        return {}
    try:
        probe = await measure(adapter)
    except ProviderError as err:
        return {"speed_error": f"not measured: the probe failed: {err.kind.value}: {err}"}
    if probe.speed is None:
        return {"speed_error": f"not measured: {probe.problem}"}
    remember(adapter.base_url, ref.model, probe.speed)
    prompt, output = probe.speed.prompt_tokens_per_s, probe.speed.output_tokens_per_s
    setting = ref.endpoint.model_dump(exclude_defaults=True) if ref.endpoint else {}
    if "base_url" in setting:
        setting["base_url"] = scrub(setting["base_url"])  # a URL's credentials are not shown
    setting.update(prompt_tokens_per_s=float(rate(prompt)), output_tokens_per_s=float(rate(output)))
    return {
        "prompt_tokens_per_s": round(prompt, 2),
        "output_tokens_per_s": round(output, 2),
        "endpoint_entry": {ref.provider: setting},
    }


@dataclass(frozen=True)
class SeatCall:
    """A typical seat call to one model, and the deadline it gets."""

    local: bool
    context_tokens: int  # the context budget, of the prompt
    prompt_tokens: int  # the context, the rules, a seat's brief and the schema
    max_tokens: int  # what it asks for (the assessment's output limit)
    deadline: Deadline
    call_deadline_s: float  # COUNCIL_CALL_DEADLINE_S
    request_timeout_s: float  # COUNCIL_REQUEST_TIMEOUT_S
    speed: Speed | None  # the speed its deadline follows (set, or measured here)
    speed_set: bool  # the endpoint sets its speeds or its call_deadline_s


TYPICAL_TOPIC = "Should this pull request be merged as it is?"


@lru_cache(maxsize=1)
def typical_seat_call() -> ModelCall[Any]:
    """A seat's assessment call without its context: the board's rules, the median brief of
    the built-in personas, the assessment task and its schema."""
    personas = load_catalog().personas.values()
    briefs = sorted((prompts.seat_brief(seat_from_persona(1, p, "")) for p in personas), key=len)
    brief = briefs[len(briefs) // 2] if briefs else ""
    return ModelCall(
        system=prompts.system_blocks(BOARD.name, "")[:1],
        messages=prompts.messages("", brief, prompts.assess_task(TYPICAL_TOPIC)),
        output=prompts.ASSESS_TOOL,
        tools=prompts.tools_for(BOARD.name),
        max_tokens=prompts.ASSESS_TOOL.output_tokens(SEAT_MAX_TOKENS),
    )


def seat_call(registry: ProviderRegistry, ref: str) -> SeatCall | None:
    """What a typical seat call to `ref` sends and asks for, at the defaults (the context
    budget: COUNCIL_CONTEXT_TOKENS within half the model's window), and the deadline a
    review gives it; None for a reference that does not resolve."""
    try:
        adapter = registry.get(ref)
        resolved = registry.resolve(ref)
    except ProviderError:
        return None
    settings, caps, estimator = registry.settings, adapter.capabilities, registry.estimator
    call = typical_seat_call()
    context = min(settings.context_tokens, caps.context_window // 2)
    tool = prompts.ASSESS_TOOL  # its schema goes into the prompt (json_object, text modes)
    schema = schema_instructions(tool.name, tool_schema(tool.schema, strict=True))
    prompt = context + estimator.estimate_chars(len(schema), "data")
    prompt += sum(estimator.estimate(text) for text in _texts(call))
    max_tokens = max_output_tokens(caps, call)
    deadline = deadline_for(  # as the adapter counts the call: every tool's schema, a margin
        resolved,
        adapter.base_url,
        requested_s=settings.call_deadline_s,
        default_s=settings.call_deadline_s,
        prompt_tokens=math.ceil(context * (1 + estimator.margin))
        + worst_case_input(call, estimator),
        output_tokens=max_tokens,
    )
    endpoint = resolved.endpoint
    return SeatCall(
        local=resolved.local,
        context_tokens=context,
        prompt_tokens=prompt,
        max_tokens=max_tokens,
        deadline=deadline,
        call_deadline_s=settings.call_deadline_s,
        request_timeout_s=settings.request_timeout_s,
        speed=speed_of(resolved, adapter.base_url),
        speed_set=endpoint is not None and endpoint.own_deadline_s(prompt, max_tokens) is not None,
    )


def _texts(call: ModelCall[Any]) -> list[str]:
    return [*(b.text for b in call.system), *(m.content for m in call.messages)]


def with_seat_call(result: CheckResult, seat: SeatCall | None) -> CheckResult:
    """`result` with the typical seat call: its time at the speed measured now (else the
    endpoint's setting), its deadline, and what would stop it."""
    if seat is None:
        return result
    answer, basis = seat.max_tokens, "the call's max_tokens"
    if result.p95_output_tokens is not None and result.p95_output_tokens < seat.max_tokens:
        answer = result.p95_output_tokens
        basis = f"p95 of the last {result.recorded_answers} answers"
    if result.prompt_tokens_per_s and result.output_tokens_per_s:
        speed: Speed | None = Speed(
            result.prompt_tokens_per_s, result.output_tokens_per_s, "measured"
        )
    else:
        speed = seat.speed
    call_s = None
    if speed is not None:
        work = seat.prompt_tokens / speed.prompt_tokens_per_s
        call_s = round(work + answer / speed.output_tokens_per_s, 1)
    return result.model_copy(
        update={
            "seat_prompt_tokens": seat.prompt_tokens,
            "seat_context_tokens": seat.context_tokens,
            "seat_max_tokens": seat.max_tokens,
            "seat_answer_tokens": answer,
            "seat_answer_basis": basis,
            "seat_call_s": call_s,
            "seat_deadline_s": seat.deadline.seconds,
            "seat_deadline": seat.deadline.described,
            "warnings": seat_warnings(seat, call_s),
        }
    )


def seat_warnings(seat: SeatCall, call_s: float | None) -> list[str]:
    """What would stop a typical seat call that takes `call_s` seconds (None: unknown)."""
    if call_s is None:
        return []
    warnings: list[str] = []
    took = f"a seat call takes about {call_s:,.0f} s at this speed"
    if call_s > seat.deadline.seconds:
        fix = (
            "raise the endpoint's call_deadline_s"
            if "call_deadline_s" in seat.deadline.described
            else "set the endpoint's prompt_tokens_per_s and output_tokens_per_s (its entry "
            "with the speed measured) or its call_deadline_s"
        )
        warnings.append(f"{took}: past {seat.deadline.described}; {fix}")
    if not seat.local and call_s > seat.request_timeout_s:
        warnings.append(
            f"{took}: past the {seat.request_timeout_s:g} s request timeout "
            "(COUNCIL_REQUEST_TIMEOUT_S, each attempt); mark the endpoint local or raise it"
        )
    if seat.local and not seat.speed_set and seat.deadline.seconds > seat.call_deadline_s:
        warnings.append(
            f"reviews measure this server and give its calls {seat.deadline.seconds:g} s, but "
            f"the App's job timeout counts {seat.call_deadline_s:g} s a call "
            "(COUNCIL_CALL_DEADLINE_S): set its entry with the speed measured so it covers them"
        )
    return warnings
