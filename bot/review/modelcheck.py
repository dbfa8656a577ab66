"""`council models check`: one tiny structured call per model, and what worked (the
command line prints the table). It lives with the review because it talks to providers,
which the command line reaches only through `bot.review`."""

from __future__ import annotations

import asyncio
import time

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
    structured: bool
    latency_ms: int | None
    input_tokens: int
    output_tokens: int
    error: str | None


async def check_model(registry: ProviderRegistry, ref: str) -> CheckResult:
    started = time.monotonic()
    provider = ref.partition(":")[0]
    try:
        adapter = registry.get(ref)
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
        return CheckResult(
            model=ref,
            provider=provider,
            ok=False,
            structured=False,
            latency_ms=int((time.monotonic() - started) * 1000),
            input_tokens=err.usage.total_input_tokens,
            output_tokens=err.usage.output_tokens,
            error=f"{err.kind.value}: {err}",
        )
    return CheckResult(
        model=ref,
        provider=provider,
        ok=True,
        structured=result.structured_native,
        latency_ms=result.latency_ms,
        input_tokens=result.usage.total_input_tokens,
        output_tokens=result.usage.output_tokens,
        error=None,
    )


async def check_models(settings: Settings, models: list[str]) -> list[CheckResult]:
    registry = ProviderRegistry(settings)
    try:
        refs = models or await registry.available_models()
        return list(await asyncio.gather(*(check_model(registry, ref) for ref in refs)))
    finally:
        await registry.aclose()
