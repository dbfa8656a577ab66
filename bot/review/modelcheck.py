"""`council models check`: one tiny structured call per model, and what worked (the
command line prints the table). It lives with the review because it talks to providers,
which the command line reaches only through `bot.review`.

Beside it, what a call to each model reserves against the cost caps
(`bot.council.reserving`): for a typical seat call (a full context of
`COUNCIL_CONTEXT_TOKENS`, the review's output limit) the input estimate and the 95th
percentile of the output tokens of the model's last 50 answers, as the store
(`DATABASE_URL`) records them, or the worst case (the whole output limit) for a model
never seen.
"""

from __future__ import annotations

import asyncio
import math
import time
from typing import Any

from pydantic import BaseModel, ConfigDict, Field

from bot.council.engine import DeliberationRequest
from bot.council.reserving import plan_for_input
from bot.providers import (
    Message,
    ModelCall,
    ModelCapabilities,
    OutputTool,
    ProviderError,
    ProviderRegistry,
    SystemBlock,
)
from bot.providers.worstcase import CALL_OVERHEAD_TOKENS
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
    finally:
        await registry.aclose()
    if not results:
        return []
    sizes = await recorded_sizes(settings, refs)
    return [with_reservation(r, caps[r.model], sizes, settings) for r in results]


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
