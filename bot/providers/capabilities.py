"""The model capability table: the one place that knows what each model accepts and costs.

Entries match a model name by exact name or by prefix (longest prefix wins), so dated
snapshots (`claude-sonnet-4-5-20250929`) find their family, and a gateway's vendor-prefixed
name (`openai/gpt-5.4`, `anthropic/claude-sonnet-5-5` on OpenRouter) or a known name behind
any address (a gateway on a private address may forward to a paid API) keeps its price.
Operators extend or override the table with `COUNCIL_MODEL_CAPABILITIES`. A model nothing
prices costs 0 on a local server (Ollama, an endpoint marked `local`) and "unknown"
elsewhere: it is shown so, and the token cap bounds it where a dollar cap cannot.
"""

from __future__ import annotations

import structlog

from bot.capabilities import Family, ModelCapabilities, StructuredMode

__all__ = [
    "BUILTIN_CAPABILITIES",
    "LOCAL_CONTEXT_WINDOW",
    "UNKNOWN_CONTEXT_WINDOW",
    "CapabilityTable",
    "Family",
    "ModelCapabilities",
    "StructuredMode",
    "cost_usd",
]

log = structlog.get_logger(__name__)


def _anthropic(
    match: str,
    price_in: float,
    price_out: float,
    *,
    read: float = 0.1,
    min_cache: int = 1024,
    out: int = 64_000,
    window: int = 200_000,
    temperature: bool = False,
) -> ModelCapabilities:
    return ModelCapabilities(
        family="anthropic",
        match=match,
        context_window=window,
        max_output_tokens=out,
        # anthropic 2.x has no `temperature` argument; older models still take it as a body field.
        accepts_temperature=temperature,
        structured="tool",
        min_cache_tokens=min_cache,
        input_price=price_in,
        output_price=price_out,
        cache_write_price=price_in * 1.25,
        cache_read_price=price_in * read,
    )


def _openai(
    match: str,
    price_in: float,
    price_out: float,
    cached: float,
    *,
    window: int = 1_000_000,
    out: int = 128_000,
    reasoning: bool = True,
) -> ModelCapabilities:
    return ModelCapabilities(
        family="openai",
        match=match,
        context_window=window,
        max_output_tokens=out,
        # Reasoning models refuse `temperature`.
        accepts_temperature=not reasoning,
        max_tokens_param="max_completion_tokens",
        structured="json_schema",
        min_cache_tokens=1024,
        input_price=price_in,
        output_price=price_out,
        cache_write_price=price_in,
        cache_read_price=cached,
    )


# Published list prices, USD per million tokens (platform.claude.com pricing page and
# OpenAI's pricing page, read 2026-11). Anthropic: 5-minute cache writes at 1.25x input.
# OpenAI: no write surcharge; cached input at its listed rate.
BUILTIN_CAPABILITIES: tuple[ModelCapabilities, ...] = (
    _anthropic("claude-fable-5*", 10.0, 50.0),
    _anthropic("claude-fable-5-1*", 10.0, 50.0, read=0.025),
    _anthropic("claude-fable-5-2*", 10.0, 50.0, read=0.025),
    _anthropic("claude-mythos-5*", 10.0, 50.0),
    _anthropic("claude-mythos-5-1*", 10.0, 50.0, read=0.025),
    _anthropic("claude-mythos-5-2*", 10.0, 50.0, read=0.025),
    _anthropic("claude-opus-5*", 5.0, 25.0, min_cache=4096),
    _anthropic("claude-opus-5-5*", 4.0, 20.0, read=0.05, min_cache=4096),
    _anthropic("claude-opus-4-5*", 5.0, 25.0, min_cache=4096, temperature=True),
    _anthropic("claude-opus-4-6*", 5.0, 25.0, min_cache=4096, temperature=True),
    _anthropic("claude-opus-4-7*", 5.0, 25.0, min_cache=4096),
    _anthropic("claude-opus-4-8*", 5.0, 25.0, min_cache=4096),
    _anthropic("claude-sonnet-5*", 2.0, 10.0),
    _anthropic("claude-sonnet-5-5*", 2.0, 10.0),
    _anthropic("claude-sonnet-4-5*", 3.0, 15.0, temperature=True),
    _anthropic("claude-sonnet-4-6*", 3.0, 15.0, temperature=True),
    _anthropic("claude-haiku-4-5*", 1.0, 5.0, min_cache=4096, temperature=True),
    _anthropic("claude-haiku-5-5*", 0.1, 0.5, min_cache=4096),
    _openai("gpt-5.5*", 5.0, 30.0, 0.5),
    _openai("gpt-5.5-pro*", 30.0, 180.0, 30.0),
    _openai("gpt-5.4*", 2.5, 15.0, 0.25),
    _openai("gpt-5.4-mini*", 0.75, 4.5, 0.075),
    _openai("gpt-5.4-nano*", 0.2, 1.25, 0.02),
    _openai("gpt-5*", 1.25, 10.0, 0.125, window=400_000),
    _openai("gpt-5-mini*", 0.25, 2.0, 0.025, window=400_000),
    _openai("gpt-5-nano*", 0.05, 0.4, 0.005, window=400_000),
    _openai("gpt-4.1*", 2.0, 8.0, 0.5, out=32_768, reasoning=False),
    _openai("gpt-4.1-mini*", 0.4, 1.6, 0.1, out=32_768, reasoning=False),
    _openai("gpt-4.1-nano*", 0.1, 0.4, 0.025, out=32_768, reasoning=False),
    _openai("gpt-4o*", 2.5, 10.0, 1.25, window=128_000, out=16_384, reasoning=False),
    _openai("gpt-4o-mini*", 0.15, 0.6, 0.075, window=128_000, out=16_384, reasoning=False),
)


# The window assumed for a model the table does not know, where its server says nothing of
# it (bot/providers/window.py asks the server first): on a local server a conservative one
# (llama.cpp and Ollama run small windows by default), elsewhere a common one.
LOCAL_CONTEXT_WINDOW = 8192
UNKNOWN_CONTEXT_WINDOW = 32_000


def _unknown(family: Family, model: str, *, local: bool) -> ModelCapabilities:
    """Safe defaults for a model the table does not know: priced 0, and marked free (a local
    server) or unknown; the window `LOCAL_CONTEXT_WINDOW` on a local server."""
    return ModelCapabilities(
        family=family,
        match=model,
        context_window=LOCAL_CONTEXT_WINDOW if local else UNKNOWN_CONTEXT_WINDOW,
        max_output_tokens=8192,
        accepts_temperature=True,
        max_tokens_param="max_tokens",
        structured="tool" if family == "anthropic" else "json_schema",
        min_cache_tokens=4096,
        input_price=0.0,
        output_price=0.0,
        cache_write_price=0.0,
        cache_read_price=0.0,
        known=False,
        price_source="local" if local else "unknown",
    )


class CapabilityTable:
    """Built-in entries plus the operator's; the operator's win on an equal match."""

    def __init__(self, extra: list[ModelCapabilities] | None = None) -> None:
        self._entries = list(BUILTIN_CAPABILITIES)
        self._extra = [e.model_copy(update={"price_source": "operator"}) for e in extra or []]
        self._warned: set[tuple[str, str]] = set()

    def _best(self, family: Family, model: str) -> ModelCapabilities | None:
        best: ModelCapabilities | None = None
        best_len = 0
        for entry in [*self._entries, *self._extra]:
            length = entry.matches(family, model)
            if length and length >= best_len:
                best, best_len = entry, length
        return best

    def lookup(self, family: Family, model: str, *, local: bool = False) -> ModelCapabilities:
        """The entry for `model` spoken to through `family`'s API. A name the table knows
        under the other family (a Claude model behind an OpenAI-compatible gateway) keeps its
        price and limits, with this family's way of asking for structure."""
        name = model.rsplit("/", 1)[-1]  # "openai/gpt-5.4" on a gateway
        for candidate in dict.fromkeys((model, name)):
            found = self._best(family, candidate)
            if found is not None:
                return found
        other: Family = "openai" if family == "anthropic" else "anthropic"
        for candidate in dict.fromkeys((model, name)):
            found = self._best(other, candidate)
            if found is not None:
                return found.model_copy(
                    update={
                        "family": family,
                        "structured": "tool" if family == "anthropic" else "json_schema",
                        "max_tokens_param": "max_tokens",
                    }
                )
        if not local and (family, model) not in self._warned:
            self._warned.add((family, model))
            log.warning(
                "unknown_model",
                family=family,
                model=model,
                note="no price known: its cost is shown as unknown; the token cap applies",
            )
        return _unknown(family, model, local=local)


def cost_usd(
    caps: ModelCapabilities,
    *,
    input_tokens: int,
    output_tokens: int,
    cache_write_tokens: int = 0,
    cache_read_tokens: int = 0,
) -> float:
    """Cost of one call; `input_tokens` excludes cache writes and reads."""
    return (
        input_tokens * caps.input_price
        + output_tokens * caps.output_price
        + cache_write_tokens * caps.cache_write_price
        + cache_read_tokens * caps.cache_read_price
    ) / 1_000_000
