"""Process settings, from the environment (pydantic-settings). The one settings object.

Provider keys are read under the SDKs' own names (`ANTHROPIC_API_KEY`, `OPENAI_API_KEY`,
`ANTHROPIC_BASE_URL`, `OPENAI_BASE_URL`); everything of ours is `COUNCIL_*`, plus the
conventional `REDIS_URL` and `DATABASE_URL`.
"""

from __future__ import annotations

import json
import math
import os
from pathlib import Path
from typing import Annotated, ClassVar, Literal

from pydantic import AliasChoices, BaseModel, ConfigDict, Field, SecretStr, field_validator
from pydantic_settings import BaseSettings, NoDecode, SettingsConfigDict

from bot import COMMAND
from bot.capabilities import ModelCapabilities

StructuredSetting = Literal["auto", "json_schema", "json_object", "tools", "text", "format"]


class EndpointConfig(BaseModel):
    """An OpenAI-compatible endpoint the operator names (Ollama, vLLM, OpenRouter, ...)."""

    model_config = ConfigDict(extra="forbid", frozen=True)

    base_url: str
    # Name of the environment variable holding the key; None for keyless local servers.
    api_key_env: str | None = None
    # How answers are made structured: "auto" tries strict json_schema, then json_object with
    # a schema, then a forced tool call, then free text with the schema in the prompt, and
    # remembers what worked. "format" is Ollama's native /api/chat `format` (only when set).
    structured: StructuredSetting = "auto"
    # Older setting: false starts "auto" after json_schema (kept so old configs still work).
    json_schema: bool = True
    # Azure OpenAI wants an api-version query parameter.
    api_version: str | None = None
    # A server on the operator's own machines: free unless prices are set, one call at a time.
    local: bool = False
    # USD per million tokens; set, they win over the capability table.
    input_price: float | None = Field(default=None, ge=0)
    output_price: float | None = Field(default=None, ge=0)
    # Calls in flight at once over all workers; default 1 for local servers, else
    # COUNCIL_PROVIDER_CONCURRENCY.
    concurrency: int | None = Field(default=None, ge=1)
    # The served model's limits, where the capability table cannot know them.
    context_window: int | None = Field(default=None, gt=0)
    max_output_tokens: int | None = Field(default=None, gt=0)
    # The server's speed, tokens per second of prompt evaluation and of generation, as
    # `council models check` measured it (it prints the entry to paste). With both set a
    # call's deadline follows them where that is longer than COUNCIL_CALL_DEADLINE_S (and the
    # App's job timeout covers it); a local server without them is measured once per process.
    prompt_tokens_per_s: float | None = Field(default=None, gt=0)
    output_tokens_per_s: float | None = Field(default=None, gt=0)
    # Seconds for one call to this endpoint, the SDK's retries included: wins over the speeds,
    # COUNCIL_CALL_DEADLINE_S and the deadline a call asks for.
    call_deadline_s: float | None = Field(default=None, gt=0)

    # A deadline from speeds: SPEED_MARGIN x (prompt tokens / prompt speed + the call's
    # max_tokens / output speed) + SPEED_OVERHEAD_S (connecting, a model loading, the SDK's
    # backoff), never under SPEED_FLOOR_S. The margin covers a server slower than measured
    # (a longer prompt evaluates slower; another process on the machine).
    SPEED_MARGIN: ClassVar[float] = 1.5
    SPEED_OVERHEAD_S: ClassVar[float] = 30.0
    SPEED_FLOOR_S: ClassVar[float] = 30.0

    @classmethod
    def speed_deadline_s(
        cls, prompt_per_s: float, output_per_s: float, prompt_tokens: int, output_tokens: int
    ) -> float:
        """Whole seconds for a call of that size at those speeds (tokens per second)."""
        work = prompt_tokens / prompt_per_s + output_tokens / output_per_s
        return float(
            max(math.ceil(cls.SPEED_MARGIN * work + cls.SPEED_OVERHEAD_S), cls.SPEED_FLOOR_S)
        )

    def own_deadline_s(self, prompt_tokens: int, output_tokens: int) -> float | None:
        """This endpoint's own deadline for a call of that size: `call_deadline_s`, else one
        from its speeds; None when it sets neither."""
        if self.call_deadline_s is not None:
            return self.call_deadline_s
        if self.prompt_tokens_per_s is None or self.output_tokens_per_s is None:
            return None
        return self.speed_deadline_s(
            self.prompt_tokens_per_s, self.output_tokens_per_s, prompt_tokens, output_tokens
        )

    def slots(self, default: int) -> int:
        """Calls in flight at once: `concurrency`, else 1 for a local server, else `default`
        (COUNCIL_PROVIDER_CONCURRENCY)."""
        if self.concurrency is not None:
            return self.concurrency
        return 1 if self.local else default


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
    model_strengths: dict[str, list[str]] = Field(
        default_factory=dict,
        description="COUNCIL_MODEL_STRENGTHS: JSON object, model reference -> the areas it "
        'is strong in (["security", "architecture"]); weighed when seats diverge.',
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
        default=8,
        ge=1,
        description="Simultaneous calls per provider, over all workers (a local server's "
        "default is 1: set `concurrency` on its endpoint).",
    )
    preflight_ttl_s: float = Field(
        default=300.0,
        ge=0,
        description="How long a model's preflight (its key, and its endpoint answering) is "
        "trusted before it is checked again.",
    )

    # --- deliberations ---
    context_tokens: int = Field(
        default=60_000, ge=1_000, description="Token budget for the packed PR context."
    )
    max_cost_usd: float | None = Field(
        default=None, gt=0, description="Cost cap per deliberation (repo config may lower it)."
    )
    max_spend_tokens: int | None = Field(
        default=2_000_000,
        ge=1_000,
        description="Token cap per deliberation (input and output), beside the dollar caps: it "
        "also bounds models whose price is unknown.",
    )
    max_pr_cost_usd: float | None = Field(
        default=None,
        gt=0,
        description="Cost cap per pull request, over all its deliberations (repo config may "
        "lower it).",
    )

    # --- storage and queue ---
    redis_url: str = Field(
        default="redis://127.0.0.1:6379/0", validation_alias=AliasChoices("REDIS_URL")
    )
    redis_timeout_s: float = Field(
        default=3.0,
        gt=0,
        description="Deadline of every Redis command: an unreachable or frozen Redis fails "
        "fast (the webhook still answers GitHub in time; the worker keeps running).",
    )
    database_url: str = Field(
        default_factory=lambda: f"sqlite+aiosqlite:///{_state_dir() / 'council.db'}",
        validation_alias=AliasChoices("DATABASE_URL"),
    )

    # --- the GitHub App ---
    github_app_id: int | None = Field(
        default=None, validation_alias=AliasChoices("GITHUB_APP_ID", "github_app_id")
    )
    github_private_key: SecretStr | None = Field(
        default=None,
        validation_alias=AliasChoices("GITHUB_PRIVATE_KEY", "github_private_key"),
        description="The App's PEM private key (or GITHUB_PRIVATE_KEY_FILE).",
    )
    github_private_key_file: Path | None = Field(
        default=None,
        validation_alias=AliasChoices("GITHUB_PRIVATE_KEY_FILE", "github_private_key_file"),
    )
    github_webhook_secret: SecretStr | None = Field(
        default=None,
        validation_alias=AliasChoices("GITHUB_WEBHOOK_SECRET", "github_webhook_secret"),
    )
    github_api_url: str = Field(
        default="https://api.github.com",
        validation_alias=AliasChoices("GITHUB_API_URL", "github_api_url"),
        description="GitHub Enterprise Server: https://HOST/api/v3.",
    )
    github_token: SecretStr | None = Field(
        default=None,
        validation_alias=AliasChoices("GITHUB_TOKEN", "github_token"),
        description="For `council review --pr` only.",
    )
    github_api_version: str = Field(
        default="2022-11-28", description="X-GitHub-Api-Version sent on every REST call."
    )
    max_daily_cost_usd: float | None = Field(
        default=None, gt=0, description="Model spend per installation per UTC day."
    )
    queue_name: str = Field(default="arq:council", description="The arq queue.")
    key_prefix: str = Field(
        default=COMMAND,
        description="Prefix of our Redis keys (installation tokens, pacing, provider slots); "
        "deployments sharing one Redis use distinct prefixes.",
    )
    job_result_ttl_s: int = Field(
        default=60, ge=1, description="How long arq keeps a result (and refuses its job id)."
    )
    delivery_ttl_s: int = Field(
        default=3 * 86_400, ge=60, description="How long a delivery id is remembered."
    )
    outbox_interval_s: float = Field(
        default=5.0,
        gt=0,
        description="How often the web process enqueues the deliveries it kept in the "
        "database while Redis was unavailable.",
    )
    check_update_interval_s: float = Field(
        default=5.0, ge=0, description="Least time between check-run progress updates."
    )
    content_pacing_s: float = Field(
        default=1.0, ge=0, description="Least time between content-creating GitHub calls."
    )
    github_retry_budget_s: float = Field(
        default=180.0,
        ge=0,
        description="How long one GitHub call keeps trying through 5xx answers, lost "
        "connections and rate limits (backoff with jitter) before it fails.",
    )
    github_retry_max_delay_s: float = Field(
        default=30.0, gt=0, description="The longest wait between two tries of a GitHub call."
    )
    github_reserve: int = Field(
        default=300,
        ge=0,
        description="GitHub requests an installation keeps in hand: when fewer are left in "
        "its rate limit (5,000 an hour), reviews wait in the queue until the limit resets "
        "instead of failing half-way.",
    )
    github_max_waits: int = Field(
        default=24,
        ge=1,
        description="How many rate-limit resets (an hour each) a review waits through "
        "before it stops and says so: a limit that stays low for a day is a problem for a "
        "person, not a queue.",
    )
    archive_max_bytes: int = Field(
        default=100_000_000,
        ge=0,
        description="The largest repository archive (tarball of the head) a review "
        "downloads to read files from; a larger one is abandoned and files are read one by one.",
    )
    blob_cache_max_bytes: int = Field(
        default=256_000_000,
        ge=0,
        description="File contents kept in Redis by git blob SHA, shared across reviews "
        "(oldest evicted first); 0 turns the cache off.",
    )
    blob_cache_ttl_s: int = Field(
        default=7 * 86_400, ge=1, description="How long a cached file's contents are kept."
    )
    publish_retry_s: float = Field(
        default=60.0,
        gt=0,
        description="First wait before an advisory GitHub would not take is posted again "
        "(doubling each time; a rate limit's retry-after when that is longer).",
    )
    permission_reply_interval_s: int = Field(
        default=3600, ge=0, description="One 'not allowed' reply per PR per this many s."
    )
    worker_metrics_port: int = Field(default=9102, ge=0, le=65535)
    max_jobs: int = Field(default=4, ge=1, description="Deliberations per worker process.")
    lease_ttl_s: int = Field(
        default=30,
        ge=2,
        description="How long a running deliberation's claim lasts without renewal: a "
        "worker that dies is noticed this long after it stopped renewing.",
    )
    lease_renew_s: float = Field(
        default=10.0, gt=0, description="How often a running deliberation renews its claim."
    )
    reconcile_interval_s: int = Field(
        default=15,
        ge=1,
        le=60,
        description="How often each worker looks for deliberations whose claim lapsed and "
        "hands them to a live worker (a divisor of 60 is exact; others round down).",
    )
    max_resumes: int = Field(
        default=3,
        ge=0,
        description="Resumes of one deliberation after its worker died; past this its check "
        "run is completed neutral, saying it could not be resumed.",
    )
    job_timeout_s: int | None = Field(
        default=None,
        ge=1,
        description="Override the job timeout (default: the sum of the "
        "phase budgets at the call deadline, plus GitHub work).",
    )

    # --- transcript pages (GitHub login: the App's OAuth web flow) ---
    public_url: str | None = Field(
        default=None,
        description="The web process's public base URL (https://council.example.com): the "
        "check run's details link and the comment's transcript link point at "
        "{public_url}/deliberations/{id}. Unset: the comment, as before.",
    )
    oauth_client_id: str | None = Field(
        default=None, description="The App's OAuth client id, for the transcript pages' login."
    )
    oauth_client_secret: SecretStr | None = Field(
        default=None, description="The App's OAuth client secret."
    )
    oauth_callback_url: str | None = Field(
        default=None,
        description="The App's callback URL as registered with GitHub; default "
        "{public_url}/oauth/callback.",
    )
    session_key: SecretStr | None = Field(
        default=None,
        description="Signs the login session and state cookies (32+ random bytes); "
        "changing it logs everyone out.",
    )
    session_ttl_s: int = Field(
        default=8 * 3600, ge=60, description="How long a transcript-page login lasts."
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

    @field_validator("model_strengths")
    @classmethod
    def _strengths(cls, value: dict[str, list[str]]) -> dict[str, list[str]]:
        """Model references (`provider:model`) to a few short area names, lowercased."""
        checked: dict[str, list[str]] = {}
        for model, areas in value.items():
            if ":" not in model.strip():
                raise ValueError(f"{model!r} is not a model reference (provider:model)")
            names = [" ".join(a.split()).lower() for a in areas]
            if not names or len(names) > 20 or any(not n or len(n) > 40 for n in names):
                raise ValueError(f"{model}: list 1-20 areas, each 1-40 characters (security)")
            checked[model.strip()] = list(dict.fromkeys(names))
        return checked


class MissingSettingError(ValueError):
    """A setting a command needs is not set; the message names it."""


def require_app(settings: Settings) -> None:
    """Stop start-up with a message naming every missing App setting."""
    missing = []
    if settings.github_app_id is None:
        missing.append("GITHUB_APP_ID")
    if settings.github_private_key is None and settings.github_private_key_file is None:
        missing.append("GITHUB_PRIVATE_KEY or GITHUB_PRIVATE_KEY_FILE")
    if settings.github_webhook_secret is None:
        missing.append("GITHUB_WEBHOOK_SECRET")
    if missing:
        raise MissingSettingError(f"missing required setting(s): {', '.join(missing)}")


def private_key(settings: Settings) -> str:
    """The App's private key, from the variable or the file."""
    if settings.github_private_key is not None:
        return settings.github_private_key.get_secret_value()
    if settings.github_private_key_file is not None:
        return settings.github_private_key_file.read_text()
    raise MissingSettingError("missing required setting: GITHUB_PRIVATE_KEY")


def _state_dir() -> Path:
    """Where the command line keeps its SQLite ledger by default (XDG state home)."""
    base = os.environ.get("XDG_STATE_HOME") or str(Path.home() / ".local" / "state")
    path = Path(base) / "pr-council"
    path.mkdir(parents=True, exist_ok=True)
    return path


# The largest call a job plans for on an endpoint that sets its speed: a prompt of the
# context budget and this much more (rules, a brief, the transcript, a schema), or the
# endpoint's whole window where it says one; an answer of the deliberation's max_tokens
# (bot/council/engine.py DeliberationRequest.max_tokens), or the endpoint's output limit.
CALL_PROMPT_ALLOWANCE = 8_000
CALL_OUTPUT_TOKENS = 8_192


def call_deadline_s(settings: Settings) -> float:
    """The longest deadline a call may get: COUNCIL_CALL_DEADLINE_S, or an endpoint's own
    (its `call_deadline_s`, or the one its `prompt_tokens_per_s` and `output_tokens_per_s`
    give the largest call; bot/providers/speed.py), where longer. A speed measured by a
    worker's preflight is not known here: `council models check` prints the entry to set."""
    longest = settings.call_deadline_s
    for endpoint in settings.endpoints.values():
        prompt = endpoint.context_window or settings.context_tokens + CALL_PROMPT_ALLOWANCE
        output = min(CALL_OUTPUT_TOKENS, endpoint.max_output_tokens or CALL_OUTPUT_TOKENS)
        own = endpoint.own_deadline_s(prompt, output)
        if own is not None and own > longest:
            longest = own
    return longest
