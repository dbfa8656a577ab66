"""Admission policy, the same for the App and the Action: who may convene the council,
which automatic trigger applies, and which protocol a review runs.

A `/council` command needs a commenter with write or admin access; automatic triggers
(label, push) skip closed PRs, drafts, labels that are not trigger labels and stale pushes.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any, Protocol

from bot.config import ConfigResult, EffectiveConfig
from bot.forge import Forge, ForgeError, PullInfo, Reactions
from bot.pr.failures import Runner, explain_failure
from bot.pr.ports import ReplyThrottle

__all__ = [
    "DENIED",
    "Admitted",
    "Commander",
    "Skip",
    "Trigger",
    "acknowledge",
    "admit_automatic",
    "refuse",
    "reply_failure",
]

DENIED = (
    "Only people with write or admin access to this repository can convene the council. "
    "(This note is posted at most once an hour per pull request.)"
)


class Skip(Exception):
    """The trigger does not apply (a label that is not a trigger, a draft, a stale push)."""


class Trigger(Protocol):
    """What admission reads of a job request (`bot.queue.jobs.JobRequest`)."""

    @property
    def trigger(self) -> str: ...

    @property
    def label(self) -> str | None: ...

    @property
    def head_sha(self) -> str | None: ...


class Commander(Protocol):
    """Who asked, as a job request (`bot.queue.jobs.JobRequest`) says it."""

    @property
    def trigger(self) -> str: ...

    @property
    def sender_login(self) -> str: ...

    @property
    def delivery_id(self) -> str: ...


@dataclass
class Admitted:
    pull: PullInfo
    protocol: str | None  # asked for explicitly (a command, a re-run); None: the config's
    config_text: str | None  # `.github/council.yml` on the default branch
    loaded: ConfigResult  # validated without personas: enough for the gate

    def protocol_for(self, config: EffectiveConfig, trigger: str) -> str:
        if self.protocol is not None:
            return self.protocol
        return config.push_protocol if trigger == "push" else config.protocol


def admit_automatic(request: Trigger, pull: PullInfo, config: EffectiveConfig) -> None:
    """A label or push trigger against the PR and the repo's config: `Skip` with the
    reason when it does not apply (the App's worker and the Action ask the same)."""
    if pull.state != "open":
        raise Skip("the pull request is closed")
    if pull.draft and not config.review_drafts:
        raise Skip("draft pull request (review_drafts is off)")
    if request.trigger == "label" and not config.is_trigger_label(request.label or ""):
        raise Skip(f"label {request.label!r} is not a trigger label")
    if request.trigger != "push":
        return
    if not config.auto_review_on_push:
        raise Skip("auto_review_on_push is off")
    if not any(config.is_trigger_label(label) for label in pull.labels):
        raise Skip("the pull request carries no trigger label")
    if request.head_sha and request.head_sha != pull.head_sha:
        raise Skip("a newer push exists; its own job reviews it")


async def refuse(forge: Forge, throttle: ReplyThrottle, pr: int, login: str) -> None:
    """The reply to a command from someone without write access: at most one per pull
    request per window (`throttle`), whatever the command, and it says why and nothing
    else (no configuration, no models, no limits)."""
    if await throttle.first_in_window(pr):
        await forge.reply(pr, f"@{login} {DENIED}")


async def acknowledge(forge: Forge, comment_id: int, log: Any) -> None:
    """The eyes reaction says "seen"; failing to add it must not stop the deliberation. A
    forge without reactions (`Capabilities.reactions`) skips it: the review answers."""
    if not forge.capabilities.reactions or not isinstance(forge, Reactions):
        return
    try:
        await forge.react(comment_id, "eyes")
    except ForgeError as error:
        log.warning("reaction_failed", comment_id=comment_id, error=str(error))


async def reply_failure(
    forge: Forge,
    request: Commander,
    pr: int | None,
    error: BaseException,
    log: Any,
    *,
    runner: Runner = "app",
) -> None:
    """Tell the commenter of a `/council` command that it failed, what failed and to try
    again (automatic triggers have nobody to tell; their status says it). Best effort:
    the forge may well be what failed."""
    if request.trigger != "command" or pr is None:
        return
    text = explain_failure(error, delivery_id=request.delivery_id, runner=runner)
    try:
        await forge.reply(pr, f"@{request.sender_login} {text}")
    except ForgeError as failed:
        log.warning("failure_reply_failed", error=str(failed))
