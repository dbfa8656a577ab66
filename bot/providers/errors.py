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
    r"prompt is too long|context[_ ]length|maximum context|too many tokens|context window",
    re.IGNORECASE,
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
    error.model = ref
    status = getattr(err, "status_code", None)
    error.status = status if isinstance(status, int) else 0
    return error


def _classify(
    err: Exception, *, ref: str, key_env: str | None, message: str, url: str
) -> ProviderError:
    where = f" at {url}" if url else ""
    if _is(err, "APITimeoutError"):
        return ProviderTimeout(
            f"{ref}: request to {url or 'the provider'} timed out (retries exhausted)"
        )
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
        return ContextTooLong(f"{ref}: the prompt is longer than the model's context: {message}")
    if status == 429:
        return RateLimited(f"{ref}: rate limited: {message}")
    if status >= 500:
        return ServerError(f"{ref}: provider error {status}: {message}")
    return BadRequest(f"{ref}: request rejected ({status}): {message}")


def _message(err: Exception) -> str:
    """The provider's own words: `error.message` (OpenAI, Anthropic), or an `error` that is
    a plain string (LM Studio, Ollama's native API)."""
    body = getattr(err, "body", None)
    if isinstance(body, dict):
        body = body.get("error", body)
    if isinstance(body, dict) and isinstance(body.get("message"), str):
        return str(body["message"])
    if isinstance(body, str) and body.strip():
        return body.strip()
    return str(getattr(err, "message", None) or err)
