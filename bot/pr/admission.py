"""Admission policy, the same for the App and the Action: who may convene the council,
which automatic trigger applies, and which protocol a review runs.

A `/council` command needs a commenter with write or admin access; automatic triggers
(label, push) skip closed PRs, drafts, labels that are not trigger labels and stale pushes.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Protocol

from bot.config import ConfigResult, EffectiveConfig
from bot.forge import PullInfo

__all__ = ["DENIED", "Admitted", "Skip", "Trigger", "admit_automatic"]

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
