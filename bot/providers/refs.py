"""Model references: `anthropic:<model>`, `openai:<model>`, `<endpoint>:<model>` and, on the
command line, `openai-compatible:<model>@<base_url>`."""

from __future__ import annotations

from dataclasses import dataclass

from bot.providers.base import ConfigurationError
from bot.providers.capabilities import Family
from bot.settings import EndpointConfig, Settings

COMPATIBLE = "openai-compatible"
OLLAMA = "ollama"


@dataclass(frozen=True)
class ModelRef:
    text: str  # as written, e.g. "ollama:llama3.1:8b"
    provider: str  # "anthropic", "openai", an endpoint name, or "openai-compatible"
    family: Family
    model: str
    base_url: str | None = None
    api_key_env: str | None = None
    api_version: str | None = None
    # The endpoint's configuration (None for anthropic:/openai: and the command line's
    # openai-compatible:<model>@<url>).
    endpoint: EndpointConfig | None = None

    @property
    def is_builtin(self) -> bool:
        return self.provider in ("anthropic", "openai")

    @property
    def local(self) -> bool:
        """A server on the operator's own machines: Ollama, or an endpoint marked local."""
        return self.provider == OLLAMA or bool(self.endpoint and self.endpoint.local)


def parse_model_ref(text: str, settings: Settings, *, allow_urls: bool = True) -> ModelRef:
    """Parse a reference; `allow_urls=False` for repo config, which may never name a URL."""
    provider, sep, model = text.strip().partition(":")
    if not sep or not provider or not model:
        raise ConfigurationError(
            f"model reference {text!r} is not of the form provider:model "
            "(anthropic:<model>, openai:<model>, <endpoint>:<model>)"
        )
    if provider == "anthropic":
        return ModelRef(text, provider, "anthropic", model, settings.anthropic_base_url)
    if provider == "openai":
        return ModelRef(text, provider, "openai", model, settings.openai_base_url)
    if provider == COMPATIBLE:
        if not allow_urls:
            raise ConfigurationError(f"{text!r}: repository config may not name an endpoint URL")
        return _compatible(text, model)
    endpoint = settings.endpoints.get(provider)
    if endpoint is None and provider == OLLAMA:
        # A local Ollama server needs no configuration: its OpenAI-compatible API.
        endpoint = EndpointConfig(base_url=f"{settings.ollama_url.rstrip('/')}/v1", local=True)
    if endpoint is None:
        known = ", ".join(sorted(settings.endpoints)) or "none configured (COUNCIL_ENDPOINTS)"
        raise ConfigurationError(f"unknown provider {provider!r} in {text!r}; endpoints: {known}")
    return _endpoint(text, provider, model, endpoint)


def _compatible(text: str, rest: str) -> ModelRef:
    model, sep, url = rest.rpartition("@")
    if not sep or not model or not url.startswith(("http://", "https://")):
        raise ConfigurationError(f"{text!r}: expected openai-compatible:<model>@<http(s) base URL>")
    return ModelRef(text, COMPATIBLE, "openai", model, url, "OPENAI_COMPATIBLE_API_KEY")


def _endpoint(text: str, name: str, model: str, endpoint: EndpointConfig) -> ModelRef:
    return ModelRef(
        text,
        name,
        "openai",
        model,
        endpoint.base_url,
        endpoint.api_key_env,
        endpoint.api_version,
        endpoint,
    )
