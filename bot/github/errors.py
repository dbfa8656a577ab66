"""githubkit's exceptions as the forge's errors (`bot/forge/errors.py`), once.

githubkit raises its own exceptions (`RequestFailed`, `RateLimitExceeded`, `RequestTimeout`,
...) carrying the raw request and response. Callers outside `bot/github` get a `ForgeError`
instead: the method, the path (never the query, never a header) and GitHub's own reason,
e.g. `POST /repos/o/r/issues/1/comments -> 422 Validation Failed: Body is too long`.
"""

from __future__ import annotations

import json
from collections.abc import Iterator
from contextlib import contextmanager

import pydantic
from githubkit.exception import (
    AuthCredentialError,
    GitHubException,
    RateLimitExceeded,
    RequestError,
    RequestFailed,
    RequestTimeout,
)

from bot.forge.errors import (
    ForgeAuthError,
    ForgeError,
    ForgeNotFound,
    ForgeRateLimited,
    ForgeUnavailable,
    ForgeValidationError,
)

__all__ = ["as_github_error", "github_errors"]

_REASON_MAX = 500


def _clip(text: str) -> str:
    text = " ".join(text.split())
    return text if len(text) <= _REASON_MAX else text[: _REASON_MAX - 1] + "…"


def _reason_and_codes(exc: RequestFailed) -> tuple[str, tuple[str, ...]]:
    """GitHub's `message`, plus the messages and codes of its `errors` list."""
    try:
        body = json.loads(exc.response.content)
    except ValueError:
        return exc.response.reason_phrase or "request failed", ()
    if not isinstance(body, dict):
        return "request failed", ()
    reason = str(body.get("message") or exc.response.reason_phrase or "request failed")
    details: list[str] = []
    codes: list[str] = []
    for item in body.get("errors") or []:
        if isinstance(item, dict):
            if item.get("message"):
                details.append(str(item["message"]))
            if item.get("code"):
                codes.append(str(item["code"]))
        elif isinstance(item, str):
            details.append(item)
    if details:
        reason = f"{reason}: {'; '.join(details)}"
    return _clip(reason), tuple(codes)


def _kind_for(status: int) -> type[ForgeError]:
    if status == 404:
        return ForgeNotFound
    if status == 422:
        return ForgeValidationError
    if status in (401, 403):
        return ForgeAuthError
    if status >= 500:
        return ForgeUnavailable
    return ForgeError


def _from_failed(exc: RequestFailed) -> ForgeError:
    reason, codes = _reason_and_codes(exc)
    status, method, path = exc.response.status_code, exc.request.method, exc.request.url.path
    if isinstance(exc, RateLimitExceeded):
        return ForgeRateLimited(
            reason,
            retry_after=exc.retry_after,
            status=status,
            method=method,
            path=path,
            codes=codes,
        )
    return _kind_for(status)(reason, status=status, method=method, path=path, codes=codes)


def as_github_error(exc: GitHubException) -> ForgeError:
    """Our error for githubkit's exception (for a failed token request made inside a
    call, which githubkit wraps in a bare `RequestError`, the token request's own)."""
    if type(exc) is RequestError and isinstance(exc.exc, GitHubException):
        return as_github_error(exc.exc)
    if isinstance(exc, RequestFailed):
        return _from_failed(exc)
    if isinstance(exc, RequestTimeout):
        return ForgeUnavailable("timed out", method=exc.request.method, path=exc.request.url.path)
    if isinstance(exc, AuthCredentialError):
        return ForgeAuthError(_clip(str(exc)))
    if isinstance(exc, RequestError):
        return ForgeUnavailable(f"request failed ({type(exc.exc).__name__})")
    return ForgeError(type(exc).__name__)


@contextmanager
def github_errors(action: str) -> Iterator[None]:
    """Turn githubkit's exceptions (and its refusal of a body) into ours.

    `action` names what we were doing, for the message when the call itself is unknown.
    """
    try:
        yield
    except GitHubException as exc:
        error = as_github_error(exc)
        error.action = action
        raise error from exc
    except pydantic.ValidationError as exc:
        # githubkit validates request bodies (and we parse answers) with pydantic; the
        # error names fields and limits, never credentials.
        fields = sorted({".".join(str(p) for p in e["loc"]) for e in exc.errors()})
        refused = ForgeValidationError(
            _clip(f"{action}: invalid data in {', '.join(fields) or 'the request'}")
        )
        refused.action = action
        raise refused from exc
