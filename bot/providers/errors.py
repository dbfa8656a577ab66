"""Map the SDKs' exceptions onto our typed errors, without leaking secrets."""

from __future__ import annotations

import re
import sys
from collections.abc import Sequence

from bot.providers.base import (
    BadRequest,
    ConfigurationError,
    ContextTooLong,
    ProviderError,
    ProviderTimeout,
    RateLimited,
    ServerError,
    Unreachable,
)

_CONTEXT_PATTERNS = re.compile(
    r"prompt is too long|context[_ ]length|maximum context|too many tokens|context window|"
    r"context size",
    re.IGNORECASE,
)
# What a refusal says of the model's window and of the prompt, in each server's words.
# OpenAI, vLLM and llama-cpp-python: "This model's maximum context length is 2048 tokens.
# However, you requested 5000 tokens (4000 in the messages, 1000 in the completion)" (or
# "your messages resulted in 5000 tokens", or vLLM's "your request has 4000 input tokens");
# llama-server: "request (5000 tokens) exceeds the available context size (2048 tokens)"
# (its body also has `n_ctx` and `n_prompt_tokens`); Anthropic: "prompt is too long:
# 210000 tokens > 200000 maximum".
_WINDOW_SAID = (
    re.compile(r"maximum context length is (\d[\d,]*) tokens", re.IGNORECASE),
    re.compile(r"available context size \((\d[\d,]*) tokens\)", re.IGNORECASE),
    re.compile(r"prompt is too long: \d[\d,]* tokens > (\d[\d,]*) maximum", re.IGNORECASE),
)
_PROMPT_SAID = (
    re.compile(r"\((\d[\d,]*) in the messages", re.IGNORECASE),
    re.compile(r"messages resulted in (\d[\d,]*) tokens", re.IGNORECASE),
    re.compile(r"request has (\d[\d,]*) input tokens", re.IGNORECASE),
    re.compile(r"request \((\d[\d,]*) tokens\) exceeds", re.IGNORECASE),
    re.compile(r"prompt is too long: (\d[\d,]*) tokens", re.IGNORECASE),
)
_KEYISH = re.compile(r"\b(sk-[A-Za-z0-9_-]{8,}|sk-ant-[A-Za-z0-9_-]{8,})")


_URL_USERINFO = re.compile(r"(?<=://)[^/@\s]+@")


def scrub(text: str, secrets: Sequence[str] = ()) -> str:
    """Remove anything that looks like a key, every configured secret value, and the
    credentials of a URL (`https://user:pass@host/`)."""
    for secret in secrets:
        if secret:
            text = text.replace(secret, "[REDACTED]")
    text = _URL_USERINFO.sub("[REDACTED]@", text)
    return _KEYISH.sub("[REDACTED]", text)


def map_sdk_error(
    err: Exception,
    *,
    ref: str,
    key_env: str | None,
    secrets: Sequence[str] = (),
    url: str = "",
) -> ProviderError:
    """One typed error for any exception either SDK raises. `url`: the base URL called, which
    an unreachable provider's message names."""
    message = scrub(_message(err), secrets)[:500]
    error = _classify(err, ref=ref, key_env=key_env, message=message, url=scrub(url, secrets))
    if isinstance(error, ContextTooLong):
        _window_in_body(error, getattr(err, "body", None))
    error.model = ref
    status = getattr(err, "status_code", None)
    error.status = status if isinstance(status, int) else 0
    return error


def _classify(
    err: Exception, *, ref: str, key_env: str | None, message: str, url: str
) -> ProviderError:
    where = f" at {url}" if url else ""
    if _is(err, "APITimeoutError"):
        return ProviderTimeout(f"{ref}: request to {url or 'the provider'} {_timed_out(err)}")
    if _is(err, "APIConnectionError"):
        return Unreachable(f"{ref}: cannot reach the provider{where} ({message})")
    if _is(err, "RateLimitError"):
        return RateLimited(f"{ref}: rate limited (retries exhausted): {message}")
    if _is(err, "AuthenticationError"):
        hint = f"; check {key_env}" if key_env else ""
        return ConfigurationError(f"{ref}: authentication failed{hint}")
    if _is(err, "PermissionDeniedError"):
        return ConfigurationError(f"{ref}: permission denied: {message}")
    if _is(err, "NotFoundError"):
        return ConfigurationError(f"{ref}: unknown model or endpoint{where}: {message}")
    if _is(err, "APIStatusError"):
        return _status_error(int(getattr(err, "status_code", 0)), ref=ref, message=message)
    if _is(err, "APIResponseValidationError"):
        return ServerError(f"{ref}: the provider sent a response that does not parse")
    if isinstance(err, ValueError):  # malformed JSON bodies surface as decode errors
        return ServerError(f"{ref}: the provider sent a malformed response")
    return ServerError(f"{ref}: {type(err).__name__}: {message}")


def _timed_out(err: Exception) -> str:
    """What stopped a request the SDK gave up on: each attempt's timeout (the client's, from
    COUNCIL_REQUEST_TIMEOUT_S), as the request carried it; a local server's attempts bound
    only connecting (bot/providers/openai_http.py `local_timeout`)."""
    extensions = getattr(getattr(err, "request", None), "extensions", None)
    limits = extensions.get("timeout") if isinstance(extensions, dict) else None
    limits = limits if isinstance(limits, dict) else {}
    read, connect = limits.get("read"), limits.get("connect")
    if isinstance(read, (int, float)):
        return (
            f"timed out: no answer within the {read:g} s request timeout "
            "(COUNCIL_REQUEST_TIMEOUT_S, each attempt), retries exhausted"
        )
    if isinstance(connect, (int, float)):
        return (
            f"timed out: no connection within the {connect:g} s connect timeout "
            "(COUNCIL_REQUEST_TIMEOUT_S, each attempt), retries exhausted"
        )
    return "timed out (retries exhausted)"


# The SDKs share their exception names. Only an SDK that is loaded can have raised one, so
# the check imports neither: each adapter's SDK loads with that family's first client.
_SDKS = ("anthropic", "openai")


def _is(err: Exception, name: str) -> bool:
    """`err` is an instance of `<sdk>.<name>` of a loaded SDK."""
    for sdk in _SDKS:
        module = sys.modules.get(sdk)
        kind = getattr(module, name, None) if module is not None else None
        if isinstance(kind, type) and isinstance(err, kind):
            return True
    return False


def _status_error(status: int, *, ref: str, message: str) -> ProviderError:
    if status in (400, 413, 422) and _CONTEXT_PATTERNS.search(message):
        return context_too_long(ref, message)
    if status == 429:
        return RateLimited(f"{ref}: rate limited: {message}")
    if status >= 500:
        return ServerError(f"{ref}: provider error {status}: {message}")
    return BadRequest(f"{ref}: request rejected ({status}): {message}")


def context_too_long(ref: str, message: str) -> ContextTooLong:
    """The refusal of a prompt longer than the model's window, with the window and the
    prompt's tokens where the message says them."""
    error = ContextTooLong(f"{ref}: the prompt is longer than the model's context: {message}")
    error.window = _said(_WINDOW_SAID, message)
    error.prompt_tokens = _said(_PROMPT_SAID, message)
    return error


def _said(patterns: Sequence[re.Pattern[str]], message: str) -> int | None:
    for pattern in patterns:
        found = pattern.search(message)
        if found:
            return int(found.group(1).replace(",", "")) or None
    return None


def _window_in_body(error: ContextTooLong, body: object) -> None:
    """llama-server's body says both as numbers (`n_ctx`, `n_prompt_tokens`)."""
    if isinstance(body, dict) and isinstance(body.get("error"), dict):
        body = body["error"]
    if not isinstance(body, dict):
        return
    window, prompt = body.get("n_ctx"), body.get("n_prompt_tokens")
    if error.window is None and isinstance(window, int) and window > 0:
        error.window = window
    if error.prompt_tokens is None and isinstance(prompt, int) and prompt > 0:
        error.prompt_tokens = prompt


def _message(err: Exception) -> str:
    """The provider's own words (`body_words`), else the exception's message."""
    return body_words(getattr(err, "body", None)) or str(getattr(err, "message", None) or err)


def body_words(body: object) -> str:
    """The provider's own words in an error body (parsed JSON, or its text): `error.message`
    (OpenAI, Anthropic), or an `error` that is a plain string (LM Studio, Ollama's native
    API); "" when it says none."""
    if isinstance(body, dict):
        body = body.get("error", body)
    if isinstance(body, dict) and isinstance(body.get("message"), str):
        return str(body["message"])
    if isinstance(body, str) and body.strip():
        return body.strip()
    return ""
