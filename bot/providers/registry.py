"""Builds providers from settings: one SDK client per provider, one concurrency limit per
provider, one adapter per model reference."""

from __future__ import annotations

import asyncio
import hashlib
import os
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any

import structlog
from pydantic import SecretStr

from bot.providers.base import ConfigurationError
from bot.providers.capabilities import CapabilityTable, ModelCapabilities
from bot.providers.negotiation import PROCESS_MODES, ModeMemory
from bot.providers.refs import OLLAMA, ModelRef, parse_model_ref
from bot.settings import Settings
from bot.tokens import TokenEstimator, default_estimator

if TYPE_CHECKING:  # the adapters import their SDK, which the first client of a family loads
    from bot.providers.adapter import Adapter, Slot

log = structlog.get_logger(__name__)

KEYLESS = "not-needed"  # the OpenAI SDK insists on a key; local servers ignore it


@dataclass
class ProviderRegistry:
    settings: Settings
    estimator: TokenEstimator = field(default_factory=default_estimator)
    table: CapabilityTable | None = None
    _adapters: dict[str, Adapter] = field(default_factory=dict)
    # Builds the concurrency limit of one provider; default: a semaphore in this process.
    limiter: Callable[[str, int], Slot] | None = None
    _limits: dict[str, Slot] = field(default_factory=dict)
    # Where OpenAI-compatible endpoints' working structured modes are kept (workers: Redis).
    modes: ModeMemory = field(default_factory=lambda: PROCESS_MODES)
    # OpenAI-format calls send every phase's tool (measured by bench/deliberation.py).
    shared_tools: bool = False

    def __post_init__(self) -> None:
        if self.table is None:
            self.table = CapabilityTable(self.settings.model_capabilities)

    def resolve(self, text: str, *, allow_urls: bool = True) -> ModelRef:
        return parse_model_ref(text, self.settings, allow_urls=allow_urls)

    def get(self, text: str) -> Adapter:
        """The adapter for a model reference (built once). Raises ConfigurationError."""
        adapter = self._adapters.get(text)
        if adapter is None:
            adapter = self._build(self.resolve(text))
            self._adapters[text] = adapter
        return adapter

    def capabilities_of(self, text: str) -> ModelCapabilities:
        """The capability entry of a reference, without building its SDK client."""
        return self._capabilities(self.resolve(text))

    def _capabilities(self, ref: ModelRef) -> ModelCapabilities:
        """The table's entry, with what the endpoint says of its model: its limits and its
        prices (which win), or free when it is local and nothing else prices it."""
        assert self.table is not None
        caps = self.table.lookup(ref.family, ref.model, local=ref.local)
        endpoint = ref.endpoint
        if endpoint is None:
            return caps
        update: dict[str, Any] = {}
        if endpoint.context_window is not None:
            update["context_window"] = endpoint.context_window
        if endpoint.max_output_tokens is not None:
            update["max_output_tokens"] = endpoint.max_output_tokens
        if endpoint.input_price is not None or endpoint.output_price is not None:
            input_price = endpoint.input_price or 0.0
            update.update(
                input_price=input_price,
                output_price=endpoint.output_price or 0.0,
                cache_write_price=input_price,
                cache_read_price=input_price,
                price_source="endpoint",
            )
        return caps.model_copy(update=update) if update else caps

    def concurrency(self, ref: ModelRef) -> int:
        """Calls in flight at once to this provider, over all workers (an `ollama:` model
        without an entry has an endpoint marked local)."""
        default = self.settings.provider_concurrency
        return ref.endpoint.slots(default) if ref.endpoint is not None else default

    def configured_models(self) -> list[str]:
        """COUNCIL_MODELS, else one default model per provider that has a key."""
        if self.settings.models:
            return list(self.settings.models)
        models: list[str] = []
        if _secret(self.settings.anthropic_api_key):
            models.append(f"anthropic:{self.settings.default_anthropic_model}")
        if _secret(self.settings.openai_api_key):
            models.append(f"openai:{self.settings.default_openai_model}")
        return models

    async def available_models(self) -> list[str]:
        """Configured models; with none, a local Ollama server's first model if it answers."""
        models = self.configured_models()
        if models:
            return models
        ollama = await detect_ollama(self.settings.ollama_url)
        if ollama:
            log.info("ollama_default", model=ollama, url=self.settings.ollama_url)
            return [f"{OLLAMA}:{ollama}"]
        return []

    async def aclose(self) -> None:
        for adapter in self._adapters.values():
            await adapter.aclose()
        self._adapters.clear()

    def _limit(self, ref: ModelRef) -> Slot:
        provider = ref.provider
        if provider not in self._limits:
            limit = self.concurrency(ref)
            if self.limiter is not None:
                self._limits[provider] = self.limiter(provider, limit)
            else:
                semaphore = asyncio.Semaphore(limit)
                self._limits[provider] = lambda: semaphore
        return self._limits[provider]

    def _build(self, ref: ModelRef) -> Adapter:
        """An adapter and its SDK client. Each family's adapter module, and with it the SDK
        (the larger part of a command's start-up), is imported here, by the first client
        of that family: a dry run, a `--help` or a context never loads either."""
        assert self.table is not None
        common: dict[str, Any] = {
            "ref": ref,
            "capabilities": self._capabilities(ref),
            "limit": self._limit(ref),
            "deadline_s": self.settings.call_deadline_s,
            "estimator": self.estimator,
        }
        if ref.family == "anthropic":
            from bot.providers.anthropic_adapter import AnthropicAdapter, anthropic_client

            key = self._key(self.settings.anthropic_api_key, "ANTHROPIC_API_KEY", ref)
            client = anthropic_client(
                key,
                ref.base_url,
                max_retries=self.settings.max_retries,
                timeout_s=self.settings.request_timeout_s,
            )
            return _keyed(AnthropicAdapter(client, [key], **common), key)
        key, key_env = self._openai_key(ref)
        structured = ref.endpoint.structured if ref.endpoint is not None else "auto"
        if structured == "format":
            from bot.providers.ollama_adapter import OllamaAdapter

            ollama = OllamaAdapter(
                ollama_root(ref.base_url or self.settings.ollama_url),
                [key],
                max_retries=self.settings.max_retries,
                timeout_s=self.settings.request_timeout_s,
                **common,
            )
            return _keyed(ollama, key)
        from bot.providers.openai_adapter import OpenAIAdapter, openai_client

        oai = openai_client(
            key,
            ref.base_url,
            max_retries=self.settings.max_retries,
            timeout_s=self.settings.request_timeout_s,
            api_version=ref.api_version,
            local=ref.local,
        )
        adapter = OpenAIAdapter(
            oai,
            [key],
            key_env,
            structured=structured,
            modes=self.modes,
            shared_tools=self.shared_tools,
            **common,
        )
        return _keyed(adapter, key)

    def _key(self, secret: SecretStr | None, env: str, ref: ModelRef) -> str:
        value = _secret(secret)
        if not value:
            raise ConfigurationError(f"{ref.text}: {env} is not set", model=ref.text)
        return value

    def _openai_key(self, ref: ModelRef) -> tuple[str, str | None]:
        if ref.provider == "openai":
            return self._key(self.settings.openai_api_key, "OPENAI_API_KEY", ref), "OPENAI_API_KEY"
        if ref.api_key_env is None:
            return KEYLESS, None
        value = os.environ.get(ref.api_key_env, "")
        if not value and ref.provider == OLLAMA:
            return KEYLESS, None
        if not value and ref.provider != "openai-compatible":
            raise ConfigurationError(f"{ref.text}: {ref.api_key_env} is not set", model=ref.text)
        return value or KEYLESS, ref.api_key_env


def _keyed(adapter: Adapter, key: str) -> Adapter:
    adapter.key_id = hashlib.sha256(key.encode()).hexdigest()[:16]
    return adapter


def ollama_root(url: str) -> str:
    """Ollama's own API lives at the server's root; its OpenAI API under /v1."""
    root = url.rstrip("/")
    return root[: -len("/v1")] if root.endswith("/v1") else root


def _secret(value: SecretStr | None) -> str:
    return value.get_secret_value().strip() if value is not None else ""


async def detect_ollama(url: str, timeout_s: float = 0.5) -> str | None:
    """The first model a local Ollama server lists, or None if nothing answers."""
    import httpx  # only a command that looks for a model pays for it

    try:
        async with httpx.AsyncClient(timeout=timeout_s) as client:
            response = await client.get(f"{url.rstrip('/')}/api/tags")
            response.raise_for_status()
            models = response.json().get("models") or []
    except (httpx.HTTPError, ValueError):
        return None
    names = [m.get("name") for m in models if isinstance(m, dict) and m.get("name")]
    return str(names[0]) if names else None
