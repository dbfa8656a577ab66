"""`council models check`: one tiny structured call per model, and what worked (the
command line prints the table). It lives with the review because it talks to providers,
which the command line reaches only through `bot.review`."""

from __future__ import annotations

import asyncio
import time
from typing import Any

from pydantic import BaseModel, ConfigDict, Field

from bot.providers import (
    Message,
    ModelCall,
    OutputTool,
    ProviderError,
    ProviderRegistry,
    SystemBlock,
)
from bot.settings import Settings

CHECK_DEADLINE_S = 60.0


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
        structured_mode=adapter.structured_mode,
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
        return list(await asyncio.gather(*(check_model(registry, ref) for ref in refs)))
    finally:
        await registry.aclose()
