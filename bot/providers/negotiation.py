"""Structured-output negotiation for OpenAI-compatible servers.

Servers that speak the Chat Completions API differ in how they constrain an answer to a
schema: OpenAI, vLLM, LM Studio and Ollama's `/v1` take strict `json_schema`;
llama-cpp-python's server refuses it (HTTP 500, "Input should be 'text' or 'json_object'")
but honours `json_object` with a `schema`; LM Studio refuses `json_object` (HTTP 400); some
servers take no tools. So an endpoint in `auto` mode tries the modes in `ORDER` and steps to
the next when the server's error names the request's format, and the mode that worked is
remembered per endpoint and model: per process by default, through Redis for workers
(`bot.queue.modes`), so the next call, and the next worker, start with it.

Where the mode is known, nothing is negotiated: a mode set in the settings is used as is,
and OpenAI's own API (`openai:` with a model the capability table knows) and Azure OpenAI
(`known_endpoint`) take `first_mode` without asking (only their refusal of it, naming the
format, would send them down `ORDER`).
"""

from __future__ import annotations

import re
from typing import TYPE_CHECKING, Literal, Protocol
from urllib.parse import urlsplit

from bot.providers.base import BadRequest, ContextTooLong, ProviderError, ServerError

if TYPE_CHECKING:
    from bot.providers.capabilities import ModelCapabilities
    from bot.providers.refs import ModelRef
    from bot.settings import StructuredSetting

Mode = Literal["json_schema", "json_object", "tools", "text"]
# Best first: a schema the server enforces, then a schema it is given, then a tool call,
# then the schema in the prompt and the JSON read out of the answer.
ORDER: tuple[Mode, ...] = ("json_schema", "json_object", "tools", "text")
# A server that took the format but answered prose this many times in a row ignores it:
# from then on the schema goes into the prompt. One prose answer is the model's, not the
# server's (a small model's stray answer, or JSON strict parsing refused).
IGNORED_TO_GIVE_UP = 3

# An error "names the request's format" when it mentions one of these. Statuses: 400 and
# 422 are how servers refuse a field; llama-cpp-python answers a validation error with 500.
_FORMAT_WORDS = re.compile(
    r"response_format|json_schema|json_object|\bstrict\b|\btools?\b|tool_choice|"
    r"\bfunctions?\b|function[ _]call",
    re.IGNORECASE,
)
FORMAT_STATUSES = (400, 422, 500)
# Azure OpenAI resources: <name>.openai.azure.com, and the AI Services multi-service host.
_AZURE_HOSTS = (".openai.azure.com", ".cognitiveservices.azure.com")


def next_mode(mode: Mode) -> Mode | None:
    index = ORDER.index(mode)
    return ORDER[index + 1] if index + 1 < len(ORDER) else None


def names_format(error: ProviderError) -> bool:
    """The server refused the request because of how it asked for structure."""
    if isinstance(error, ContextTooLong) or not isinstance(error, BadRequest | ServerError):
        return False
    return refuses_format(error.status, str(error))


def refuses_format(status: int, message: str) -> bool:
    """An error response of `status` whose `message` names the request's format: what
    `names_format` reads in the error, read off the response itself (bot.providers.
    openai_http stops the SDK's retries of it: the same request is refused again)."""
    return status in FORMAT_STATUSES and bool(_FORMAT_WORDS.search(message))


class ModeMemory(Protocol):
    """Where the working mode of an endpoint and model is kept. It may hand back anything
    (another version's mode name): the adapter keeps only a value that is a mode."""

    async def get(self, key: str) -> str | None: ...

    async def set(self, key: str, mode: str) -> None: ...


class ProcessModes:
    """The working modes this process has found (the default memory)."""

    def __init__(self) -> None:
        self._modes: dict[str, str] = {}

    async def get(self, key: str) -> str | None:
        return self._modes.get(key)

    async def set(self, key: str, mode: str) -> None:
        self._modes[key] = mode

    def forget(self) -> None:
        self._modes.clear()


PROCESS_MODES = ProcessModes()


def as_mode(value: object) -> Mode | None:
    """A remembered value, if it is a mode (memory may hold anything after an upgrade)."""
    for mode in ORDER:
        if value == mode:
            return mode
    return None


def memory_key(base_url: str, model: str) -> str:
    return f"{base_url.rstrip('/')}|{model}"


def first_mode(setting: StructuredSetting, ref: ModelRef, caps: ModelCapabilities) -> Mode:
    """The mode a structured call tries first: the one set, else the best the endpoint
    takes (after json_schema where the endpoint says it has none: the older setting)."""
    chosen = as_mode(setting)
    if chosen is not None:
        return chosen
    if ref.endpoint is not None and not ref.endpoint.json_schema:
        return "json_object"
    return as_mode(caps.structured) or "json_schema"


def known_endpoint(ref: ModelRef, caps: ModelCapabilities) -> bool:
    """An endpoint whose structured mode is known without asking: OpenAI's own API with a
    model the capability table knows (every one of them takes strict json_schema), or Azure
    OpenAI (its host, or the api-version only Azure wants)."""
    if ref.provider == "openai":
        return caps.known
    host = urlsplit(ref.base_url or "").hostname or ""
    return ref.api_version is not None or host.endswith(_AZURE_HOSTS)
