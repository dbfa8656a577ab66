"""The one small interface every seat talks to a model through.

A `ModelCall` goes in; a validated `CallResult` (with usage and cost) comes out, or a typed
`ProviderError` is raised so the engine can record the seat's state.
"""

from __future__ import annotations

import asyncio
from collections.abc import Awaitable
from dataclasses import dataclass, field
from enum import StrEnum
from typing import Generic, Literal, Protocol, TypeVar

from pydantic import BaseModel, ConfigDict

from bot.providers.capabilities import ModelCapabilities

OutputT = TypeVar("OutputT", bound=BaseModel)


class SystemBlock(BaseModel):
    """One system block. `cache=True` puts a cache breakpoint right after it."""

    model_config = ConfigDict(frozen=True)

    text: str
    cache: bool = False


class Message(BaseModel):
    """One turn. `cache=True` puts a cache breakpoint after it (a growing transcript)."""

    model_config = ConfigDict(frozen=True)

    role: Literal["user", "assistant"]
    content: str
    cache: bool = False


@dataclass(frozen=True)
class OutputTool:
    """A structured-output schema offered as a tool.

    Every call of one deliberation sends the same list of these so the cached tool prefix
    never changes; a call picks its own with `ModelCall.output`.
    """

    name: str
    description: str
    schema: type[BaseModel]

    @property
    def max_tokens(self) -> int | None:
        """The output tokens an answer of this tool needs at most: its schema's
        `OUTPUT_TOKENS` (sized where the schema is, bot/council/schemas.py); None when the
        schema says none."""
        budget = getattr(self.schema, "OUTPUT_TOKENS", None)
        return budget if isinstance(budget, int) and budget > 0 else None

    def output_tokens(self, ceiling: int) -> int:
        """The `max_tokens` a call of this tool asks for: its own budget, never past
        `ceiling` (the operator's limit on every answer)."""
        own = self.max_tokens
        return ceiling if own is None else min(own, ceiling)


@dataclass(frozen=True)
class ModelCall(Generic[OutputT]):
    system: list[SystemBlock]
    messages: list[Message]
    # The schema the answer must validate against; None for a plain text answer.
    output: OutputTool | None = None
    # The whole tool list of the deliberation (the output tool is added if missing).
    tools: tuple[OutputTool, ...] = ()
    temperature: float | None = None
    max_tokens: int = 4096
    # Seconds for the whole call, the SDK's retries included. None: the settings default.
    deadline_s: float | None = None
    # Free-form label carried into logs and the fake server's call log (seat id, phase).
    label: str = ""

    def all_tools(self) -> tuple[OutputTool, ...]:
        if self.output is None or any(t.name == self.output.name for t in self.tools):
            return self.tools
        return (*self.tools, self.output)


@dataclass
class Usage:
    """Tokens of one call. `input_tokens` excludes cache writes and cache reads;
    `reasoning_tokens` are part of `output_tokens` (and priced with them)."""

    input_tokens: int = 0
    output_tokens: int = 0
    cache_write_tokens: int = 0
    cache_read_tokens: int = 0
    reasoning_tokens: int = 0

    @property
    def total_input_tokens(self) -> int:
        return self.input_tokens + self.cache_write_tokens + self.cache_read_tokens

    def __add__(self, other: Usage) -> Usage:
        return Usage(
            self.input_tokens + other.input_tokens,
            self.output_tokens + other.output_tokens,
            self.cache_write_tokens + other.cache_write_tokens,
            self.cache_read_tokens + other.cache_read_tokens,
            self.reasoning_tokens + other.reasoning_tokens,
        )


@dataclass
class CallResult(Generic[OutputT]):
    model: str  # the model reference, e.g. "anthropic:claude-sonnet-4-5"
    text: str  # the raw text (or tool input JSON) the model returned
    output: OutputT | None  # validated structured answer; None for plain calls
    usage: Usage
    cost_usd: float
    latency_ms: int
    # True when the provider's native mechanism (forced tool / json_schema) produced it.
    structured_native: bool = False
    stop_reason: str | None = None
    attempts: int = 1
    # A note per number of the answer brought into the schema's range (a server whose
    # grammar drops `minimum`/`maximum`: bot/providers/ranges.py), for the answer's record.
    adjusted: tuple[str, ...] = ()
    # The server reported no usage: `usage` is the token estimator's count.
    usage_estimated: bool = False


class ErrorKind(StrEnum):
    TIMEOUT = "timeout"
    RATE_LIMITED = "rate_limited"
    SERVER_ERROR = "server_error"
    INVALID_OUTPUT = "invalid_output"
    REFUSED = "refused"
    CONTEXT_TOO_LONG = "context_too_long"
    UNREACHABLE = "unreachable"
    CONFIGURATION = "configuration"
    BAD_REQUEST = "bad_request"


class ProviderError(Exception):
    """A model call that did not produce a usable answer. Messages never carry secrets."""

    kind: ErrorKind = ErrorKind.SERVER_ERROR

    def __init__(self, message: str, *, model: str = "", usage: Usage | None = None) -> None:
        super().__init__(message)
        self.model = model
        # Tokens paid for even though the call failed (e.g. a truncated answer).
        self.usage = usage or Usage()
        self.cost_usd = 0.0
        # The HTTP status the provider answered with; 0 when there was no answer.
        self.status = 0


class ProviderTimeout(ProviderError):
    kind = ErrorKind.TIMEOUT


class RateLimited(ProviderError):
    kind = ErrorKind.RATE_LIMITED


class ServerError(ProviderError):
    kind = ErrorKind.SERVER_ERROR


class Refused(ProviderError):
    kind = ErrorKind.REFUSED


class ContextTooLong(ProviderError):
    kind = ErrorKind.CONTEXT_TOO_LONG

    # What the server said, where it said it (llama-cpp-python's 400 names both): the
    # model's window and the prompt's tokens. None: not said.
    window: int | None = None
    prompt_tokens: int | None = None


class Unreachable(ProviderError):
    kind = ErrorKind.UNREACHABLE


class ConfigurationError(ProviderError):
    """Missing key, unknown endpoint, malformed model reference."""

    kind = ErrorKind.CONFIGURATION


class BadRequest(ProviderError):
    kind = ErrorKind.BAD_REQUEST


class InvalidOutput(ProviderError):
    """The answer did not validate. `validation_error` is what a re-ask sends back."""

    kind = ErrorKind.INVALID_OUTPUT

    def __init__(
        self,
        message: str,
        *,
        model: str = "",
        raw: str = "",
        validation_error: str = "",
        usage: Usage | None = None,
        truncated: bool = False,
    ) -> None:
        super().__init__(message, model=model, usage=usage)
        self.raw = raw
        self.validation_error = validation_error or message
        # The answer hit the max-tokens limit: the re-ask asks for a shorter answer.
        self.truncated = truncated


@dataclass
class StartedCall(Generic[OutputT]):
    """A call under way: `began` is set once the provider's response has begun.

    Anthropic makes a cache entry readable only after the response that wrote it begins, so
    the engine starts one call of a phase, waits for `began`, then launches the rest.
    """

    task: asyncio.Task[CallResult[OutputT]]
    began: asyncio.Event = field(default_factory=asyncio.Event)

    async def wait_began(self) -> None:
        """Return when the response began or the call ended, whichever comes first."""
        began = asyncio.ensure_future(self.began.wait())
        try:
            await asyncio.wait({began, self.task}, return_when=asyncio.FIRST_COMPLETED)
        finally:
            began.cancel()

    def result(self) -> Awaitable[CallResult[OutputT]]:
        return self.task


class Provider(Protocol):
    """One model behind one API family."""

    @property
    def ref(self) -> str: ...

    @property
    def capabilities(self) -> ModelCapabilities: ...

    async def call(self, request: ModelCall[OutputT]) -> CallResult[OutputT]: ...

    def start(self, request: ModelCall[OutputT]) -> StartedCall[OutputT]: ...

    async def aclose(self) -> None: ...
