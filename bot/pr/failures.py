"""Why a deliberation failed, said as a sentence for the people reading the check run.

Everyone who can see the pull request reads its check run, and an exception's text carries
SQL, hosts, paths and other detail meant for the operator. `explain_failure` says what
failed and what to do, for the errors a job meets (GitHub, a model provider, the database,
Redis, a timeout, a configuration that cannot be convened); anything else gets one generic
sentence. The detail goes to the worker's log (the job logs the exception, bound to its
delivery id), and the sentences that need the operator quote that id.
"""

from __future__ import annotations

import re
from typing import Literal

from redis.exceptions import RedisError
from sqlalchemy.exc import SQLAlchemyError

from bot.council.convene import ConveneError
from bot.forge.errors import (
    ForgeAuthError,
    ForgeError,
    ForgeNotFound,
    ForgeRateLimited,
    ForgeUnavailable,
    ForgeValidationError,
)
from bot.providers import ProviderError
from bot.providers.preflight import PreflightFailed
from bot.review.assemble import ReviewError
from bot.review.setup import SetupError

__all__ = ["Runner", "explain_failure", "missing_permission"]

# Who made the GitHub call: the App's installation, or a workflow's token (the Action),
# whose permissions are the job's `permissions:` block.
Runner = Literal["app", "action"]

AGAIN = "It will not retry this run; comment `/council` on the pull request to try again."
_MESSAGE_MAX = 300

# What a GitHub API path is about, first match wins (paths carry no query string).
_GITHUB_OBJECTS: tuple[tuple[re.Pattern[str], str], ...] = tuple(
    (re.compile(pattern), noun)
    for pattern, noun in (
        (r"/pulls/\d+/files", "the pull request's changed files"),
        (r"/pulls/\d+/commits", "the pull request's commits"),
        (r"/pulls/\d+", "the pull request"),
        (r"/contents/", "a file of the repository"),
        (r"/git/trees/", "the repository's file tree"),
        (r"/compare/", "the commits to compare"),
        (r"/issues/(?:\d+/)?comments", "the council's comment"),
        (r"/reactions", "a reaction"),
        (r"/check-runs", "the check run"),
        (r"/collaborators/[^/]+/permission", "the commenter's permission"),
        (r"/access_tokens", "the App's installation token"),
        (r"/installation", "the App's installation"),
    )
)
# The permission a call on a path needs, as the App's settings and a workflow's
# `permissions:` name it: (App, workflow).
_PERMISSIONS: tuple[tuple[re.Pattern[str], tuple[str, str]], ...] = tuple(
    (re.compile(pattern), names)
    for pattern, names in (
        (r"/check-runs", ("Checks: write", "checks: write")),
        (r"/issues/(?:\d+/)?comments|/reactions", ("Issues: write", "issues: write")),
        (r"/pulls/\d+/(?:reviews|comments)", ("Pull requests: write", "pull-requests: write")),
        (r"/pulls", ("Pull requests: read", "pull-requests: read")),
        (r"/contents/|/git/|/compare/|/tarball", ("Contents: read", "contents: read")),
    )
)
_VERBS = {"GET": ("read", "from"), "POST": ("create", "on"), "DELETE": ("delete", "on")}
_PROVIDER_CAUSES = {
    "timeout": "a model did not answer in time",
    "rate_limited": "a model provider's rate limit was reached",
    "server_error": "a model provider had a server error",
    "unreachable": "a model provider could not be reached",
    "refused": "a model refused to answer",
    "context_too_long": "the pull request's context was too long for a model",
    "bad_request": "a model provider refused the council's request",
    "invalid_output": "a model's answer could not be read",
}


def explain_failure(error: BaseException, *, delivery_id: str, runner: Runner = "app") -> str:
    """What failed and what to do, in a sentence or two; never the exception's text,
    except the messages our own configuration errors write for users."""
    if isinstance(error, ForgeError):
        return f"{_github(error, runner)} {AGAIN}"
    if isinstance(error, ProviderError):
        return _provider(error, delivery_id)
    if isinstance(error, ReviewError | ConveneError | SetupError):
        return (
            f"The council could not be convened as configured: {_message(error)}. Fix "
            "`.github/council.yml` (or the command), then comment `/council` to try again."
        )
    if isinstance(error, SQLAlchemyError):
        return f"The council could not read or write its database. {AGAIN}{_ask(delivery_id)}"
    if isinstance(error, RedisError):
        return f"The council lost its connection to its job queue. {AGAIN}{_ask(delivery_id)}"
    if isinstance(error, TimeoutError):
        return f"A step of the deliberation took too long and was stopped. {AGAIN}"
    return f"The council failed with an internal error. {AGAIN}{_ask(delivery_id)}"


def missing_permission(error: ForgeError, runner: Runner = "app") -> str:
    """What to grant for a refused call: the permission its path needs, where it is set."""
    named = next((names for pattern, names in _PERMISSIONS if pattern.search(error.path)), None)
    if runner == "action":
        need = f"`{named[1]}`" if named else "the permission this step needs"
        return (
            f"access refused: the workflow's token lacks {need}; add it to the job's "
            "`permissions:` (the action needs contents: read, and pull-requests, checks and "
            "issues: write)"
        )
    need = named[0] if named else "a permission on this repository"
    return (
        f"access refused: the App's installation lacks {need}, which an owner grants in "
        "the installation's settings"
    )


def _github(error: ForgeError, runner: Runner = "app") -> str:
    method = error.method.upper()
    what = next((noun for pattern, noun in _GITHUB_OBJECTS if pattern.search(error.path)), None)
    if not method:
        action = "reach GitHub"
    elif what is None:
        action = "read from GitHub" if method == "GET" else "write to GitHub"
    else:
        verb, preposition = _VERBS.get(method, ("update", "on"))
        action = f"{verb} {what} {preposition} GitHub"
    return f"The council could not {action} ({_github_cause(error, runner)})."


def _github_cause(error: ForgeError, runner: Runner) -> str:
    if isinstance(error, ForgeRateLimited):
        return "the App's rate limit was reached"
    if isinstance(error, ForgeUnavailable):
        if error.status is not None:
            return "server error"
        return "no answer in time" if "timed out" in error.reason else "no connection"
    if isinstance(error, ForgeAuthError):
        return missing_permission(error, runner)
    if isinstance(error, ForgeNotFound):
        return "not found: it may have been deleted, or the App cannot see it"
    if isinstance(error, ForgeValidationError):
        return "GitHub refused the request as invalid"
    return f"GitHub answered {error.status}" if error.status is not None else "GitHub error"


def _provider(error: ProviderError, delivery_id: str) -> str:
    if isinstance(error, PreflightFailed):
        # Our own words: the variable to set or the address that did not answer.
        return (
            f"No model was called: {_clip('; '.join(p.message for p in error.problems))}. The "
            "App's operator must fix the model settings; then comment `/council` to try again."
        )
    if error.kind == "configuration":
        return (
            "The council could not call a model: the App's model settings are incomplete "
            "(a provider key or endpoint is missing or wrong). The App's operator must fix "
            f"them; then comment `/council` to try again.{_ask(delivery_id)}"
        )
    cause = _PROVIDER_CAUSES.get(error.kind, "a model call failed")
    return f"The deliberation stopped because {cause}. {AGAIN}"


def _message(error: BaseException) -> str:
    return _clip(str(error))


def _clip(text: str) -> str:
    text = " ".join(text.split()).rstrip(".")
    return text if len(text) <= _MESSAGE_MAX else text[: _MESSAGE_MAX - 1] + "…"


def _ask(delivery_id: str) -> str:
    return (
        f" If it fails again, the App's operator can find the details in the worker's log "
        f"under delivery `{delivery_id}`."
    )
