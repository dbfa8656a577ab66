"""Process settings, from the environment (pydantic-settings). The one settings object.

Provider keys are read under the SDKs' own names (`ANTHROPIC_API_KEY`, `OPENAI_API_KEY`,
`ANTHROPIC_BASE_URL`, `OPENAI_BASE_URL`); everything of ours is `COUNCIL_*`, plus the
conventional `REDIS_URL` and `DATABASE_URL`.
"""

from __future__ import annotations

import json
import os
from functools import lru_cache
from pathlib import Path
from typing import Annotated

from pydantic import AliasChoices, BaseModel, ConfigDict, Field, SecretStr, field_validator
from pydantic_settings import BaseSettings, NoDecode, SettingsConfigDict

from bot.providers.capabilities import ModelCapabilities


class EndpointConfig(BaseModel):
    """An OpenAI-compatible endpoint the operator names (Ollama, vLLM, OpenRouter, ...)."""

    model_config = ConfigDict(extra="forbid", frozen=True)

    base_url: str
    # Name of the environment variable holding the key; None for keyless local servers.
    api_key_env: str | None = None
    # False for servers without `response_format: json_schema` (JSON is then read from text).
    json_schema: bool = True
    # Azure OpenAI wants an api-version query parameter.
    api_version: str | None = None


class Settings(BaseSettings):
    model_config = SettingsConfigDict(
        env_prefix="COUNCIL_", extra="forbid", frozen=True, populate_by_name=True
    )

    # --- provider keys and URLs (the SDKs' own variable names) ---
    anthropic_api_key: SecretStr | None = Field(
        default=None, validation_alias=AliasChoices("ANTHROPIC_API_KEY", "anthropic_api_key")
    )
    anthropic_base_url: str | None = Field(
        default=None, validation_alias=AliasChoices("ANTHROPIC_BASE_URL", "anthropic_base_url")
    )
    openai_api_key: SecretStr | None = Field(
        default=None, validation_alias=AliasChoices("OPENAI_API_KEY", "openai_api_key")
    )
    openai_base_url: str | None = Field(
        default=None, validation_alias=AliasChoices("OPENAI_BASE_URL", "openai_base_url")
    )

    # --- models ---
    endpoints: dict[str, EndpointConfig] = Field(
        default_factory=dict,
        description="COUNCIL_ENDPOINTS: JSON object, name -> {base_url, api_key_env, ...}.",
    )
    models: Annotated[list[str], NoDecode] = Field(
        default_factory=list,
        description="COUNCIL_MODELS: model references seats take in turn (JSON list or "
        "comma-separated). Empty: one default per provider that has a key.",
    )
    allowed_models: Annotated[list[str], NoDecode] = Field(
        default_factory=list,
        description="COUNCIL_ALLOWED_MODELS: the only models a repo config may choose.",
    )
    model_capabilities: list[ModelCapabilities] = Field(
        default_factory=list,
        description="COUNCIL_MODEL_CAPABILITIES: JSON list extending the capability table.",
    )
    default_anthropic_model: str = "claude-sonnet-5-5"
    default_openai_model: str = "gpt-5.4"
    ollama_url: str = Field(
        default="http://127.0.0.1:11434",
        description="Offered as the default provider when no key is set and it answers.",
    )

    # --- calls ---
    call_deadline_s: float = Field(
        default=300.0, gt=0, description="One deadline per model call, SDK retries included."
    )
    request_timeout_s: float = Field(default=120.0, gt=0, description="One HTTP attempt.")
    max_retries: int = Field(default=2, ge=0, le=10, description="SDK retries per call.")
    provider_concurrency: int = Field(
        default=8, ge=1, description="Simultaneous calls per provider (per process)."
    )

    # --- deliberations ---
    context_tokens: int = Field(
        default=60_000, ge=1_000, description="Token budget for the packed PR context."
    )
    max_cost_usd: float | None = Field(
        default=None, gt=0, description="Cost cap per deliberation (repo config may lower it)."
    )

    # --- storage and queue ---
    redis_url: str = Field(
        default="redis://127.0.0.1:6379/0", validation_alias=AliasChoices("REDIS_URL")
    )
    database_url: str = Field(
        default_factory=lambda: f"sqlite+aiosqlite:///{_state_dir() / 'council.db'}",
        validation_alias=AliasChoices("DATABASE_URL"),
    )

    # --- logging ---
    log_level: str = "INFO"
    log_json: bool = False

    @field_validator("models", "allowed_models", mode="before")
    @classmethod
    def _model_list(cls, value: object) -> object:
        """Accept a JSON list or a comma-separated string."""
        if isinstance(value, str):
            text = value.strip()
            if text.startswith("["):
                return json.loads(text)
            return [part.strip() for part in text.split(",") if part.strip()]
        return value


def _state_dir() -> Path:
    """Where the command line keeps its SQLite ledger by default (XDG state home)."""
    base = os.environ.get("XDG_STATE_HOME") or str(Path.home() / ".local" / "state")
    path = Path(base) / "pr-council"
    path.mkdir(parents=True, exist_ok=True)
    return path


@lru_cache(maxsize=1)
def get_settings() -> Settings:
    return Settings()
