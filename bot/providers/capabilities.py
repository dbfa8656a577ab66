"""The model capability table: the one place that knows what each model accepts and costs.

Entries match a model name by exact name or by prefix (longest prefix wins), so dated
snapshots (`claude-sonnet-4-5-20250929`) find their family. Operators extend or override
the table with `COUNCIL_MODEL_CAPABILITIES`. An unknown model gets conservative defaults, a
warning, and the highest known price: cost is never under-reported as zero.
"""

from __future__ import annotations

from typing import Literal

import structlog
from pydantic import BaseModel, ConfigDict, Field

log = structlog.get_logger(__name__)

Family = Literal["anthropic", "openai"]
StructuredMode = Literal["tool", "json_schema", "json_object", "text"]


class ModelCapabilities(BaseModel):
    model_config = ConfigDict(extra="forbid", frozen=True)

    family: Family
    # Exact model name, or a prefix ending in "*" ("claude-sonnet-4*").
    match: str
    context_window: int = Field(gt=0)
    max_output_tokens: int = Field(default=8192, gt=0)
    accepts_temperature: bool = True
    max_tokens_param: Literal["max_tokens", "max_completion_tokens"] = "max_tokens"
    structured: StructuredMode = "text"
    # Shortest prefix the provider will cache; breakpoints on shorter prefixes are skipped.
    min_cache_tokens: int = 1024
    # USD per million tokens.
    input_price: float = Field(ge=0)
    output_price: float = Field(ge=0)
    cache_write_price: float = Field(ge=0)
    cache_read_price: float = Field(ge=0)
    known: bool = True

    def matches(self, family: Family, model: str) -> int:
        """Length of the match (0: no match) so the most specific entry wins."""
        if family != self.family:
            return 0
        if self.match.endswith("*"):
            prefix = self.match[:-1]
            return len(prefix) if model.startswith(prefix) else 0
        return len(self.match) + 1000 if model == self.match else 0


def _anthropic(match: str, window: int, out: int, price_in: float, price_out: float,
               min_cache: int) -> ModelCapabilities:
    return ModelCapabilities(
        family="anthropic", match=match, context_window=window, max_output_tokens=out,
        structured="tool", min_cache_tokens=min_cache, input_price=price_in,
        output_price=price_out, cache_write_price=price_in * 1.25,
        cache_read_price=price_in * 0.1,
    )


def _openai(match: str, window: int, out: int, price_in: float, price_out: float,
            cached: float, *, reasoning: bool = False) -> ModelCapabilities:
    return ModelCapabilities(
        family="openai", match=match, context_window=window, max_output_tokens=out,
        accepts_temperature=not reasoning, max_tokens_param="max_completion_tokens",
        structured="json_schema", min_cache_tokens=1024, input_price=price_in,
        output_price=price_out, cache_write_price=price_in, cache_read_price=cached,
    )


# Published list prices (USD / million tokens). Anthropic: cache writes (5-minute TTL) at
# 1.25x input, reads at 0.1x. OpenAI: no write surcharge; cached input at the listed rate.
BUILTIN_CAPABILITIES: tuple[ModelCapabilities, ...] = (
    _anthropic("claude-opus-4*", 200_000, 32_000, 15.0, 75.0, 1024),
    _anthropic("claude-opus-4-5*", 200_000, 64_000, 5.0, 25.0, 4096),
    _anthropic("claude-opus-4-1*", 200_000, 32_000, 15.0, 75.0, 1024),
    _anthropic("claude-sonnet-4*", 200_000, 64_000, 3.0, 15.0, 1024),
    _anthropic("claude-3-7-sonnet*", 200_000, 64_000, 3.0, 15.0, 1024),
    _anthropic("claude-haiku-4-5*", 200_000, 64_000, 1.0, 5.0, 4096),
    _anthropic("claude-3-5-haiku*", 200_000, 8_192, 0.8, 4.0, 2048),
    _openai("gpt-4.1*", 1_047_576, 32_768, 2.0, 8.0, 0.5),
    _openai("gpt-4.1-mini*", 1_047_576, 32_768, 0.4, 1.6, 0.1),
    _openai("gpt-4.1-nano*", 1_047_576, 32_768, 0.1, 0.4, 0.025),
    _openai("gpt-4o*", 128_000, 16_384, 2.5, 10.0, 1.25),
    _openai("gpt-4o-mini*", 128_000, 16_384, 0.15, 0.6, 0.075),
    _openai("gpt-5*", 400_000, 128_000, 1.25, 10.0, 0.125, reasoning=True),
    _openai("gpt-5-mini*", 400_000, 128_000, 0.25, 2.0, 0.025, reasoning=True),
    _openai("gpt-5-nano*", 400_000, 128_000, 0.05, 0.4, 0.005, reasoning=True),
    _openai("o3*", 200_000, 100_000, 2.0, 8.0, 0.5, reasoning=True),
    _openai("o4-mini*", 200_000, 100_000, 1.1, 4.4, 0.275, reasoning=True),
)


def _unknown(family: Family, model: str) -> ModelCapabilities:
    """Safe defaults: a small window, text-fallback structured output, the top price."""
    top = max(BUILTIN_CAPABILITIES, key=lambda c: c.input_price + c.output_price)
    return ModelCapabilities(
        family=family, match=model, context_window=32_000, max_output_tokens=4096,
        accepts_temperature=True,
        max_tokens_param="max_tokens",
        structured="tool" if family == "anthropic" else "text",
        min_cache_tokens=4096, input_price=top.input_price, output_price=top.output_price,
        cache_write_price=top.cache_write_price, cache_read_price=top.cache_read_price,
        known=False,
    )


class CapabilityTable:
    """Built-in entries plus the operator's; the operator's win on an equal match."""

    def __init__(self, extra: list[ModelCapabilities] | None = None) -> None:
        self._entries = list(BUILTIN_CAPABILITIES)
        self._extra = list(extra or [])
        self._warned: set[tuple[str, str]] = set()

    def lookup(self, family: Family, model: str) -> ModelCapabilities:
        best: ModelCapabilities | None = None
        best_len = 0
        for entry in [*self._entries, *self._extra]:
            length = entry.matches(family, model)
            if length and length >= best_len:
                best, best_len = entry, length
        if best is not None:
            return best
        if (family, model) not in self._warned:
            self._warned.add((family, model))
            log.warning("unknown_model", family=family, model=model,
                        note="using safe defaults and the highest known price")
        return _unknown(family, model)


def cost_usd(caps: ModelCapabilities, *, input_tokens: int, output_tokens: int,
             cache_write_tokens: int = 0, cache_read_tokens: int = 0) -> float:
    """Cost of one call; `input_tokens` excludes cache writes and reads."""
    return (
        input_tokens * caps.input_price
        + output_tokens * caps.output_price
        + cache_write_tokens * caps.cache_write_price
        + cache_read_tokens * caps.cache_read_price
    ) / 1_000_000
