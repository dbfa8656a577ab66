"""Which deliveries become jobs (docs/architecture.md, "Triggers"). Pure.

`route(event, delivery_id, body)` reads only the routing fields and returns the
`JobRequest` to enqueue, or `Ignored` with the reason. Decisions that need the repository's
configuration or GitHub are left to the worker, because the receiver never calls GitHub:

- `pull_request.labeled` is enqueued for every label: trigger labels are repo config, which
  only the worker reads, so it drops labels that are not triggers.
- `synchronize`, `ready_for_review` and `reopened` are enqueued as `push` for every PR; the
  worker checks that the PR carries a trigger label, `auto_review_on_push`, and drafts.
- Commenter permission is checked by the worker (collaborator-permission API); only bot
  senders, edits, deletions, comments on issues and comments without a command stop here.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass
from typing import TypeVar

from pydantic import BaseModel, ValidationError

from bot.commands import parse_command
from bot.context.prose import clean_untrusted
from bot.queue.jobs import JobRequest, Trigger
from bot.render.checks import CHECK_RUN_NAME, button_protocol
from bot.web.payloads import (
    CheckRunEvent,
    InstallationEvent,
    InstallationRepositoriesEvent,
    IssueCommentEvent,
    PullRequestEvent,
)

PUSH_ACTIONS = frozenset({"synchronize", "ready_for_review", "reopened"})
_Model = TypeVar("_Model", bound=BaseModel)
_COMMAND_TRIGGERS: dict[str, Trigger] = {"convene": "command", "help": "help", "cancel": "cancel"}


@dataclass(frozen=True, slots=True)
class Ignored:
    reason: str


class InvalidPayload(ValueError):
    """The body is not JSON, or a field the receiver routes on is missing or mistyped."""


Routed = JobRequest | Ignored


def route(event: str, delivery_id: str, body: bytes) -> Routed:
    router = _ROUTERS.get(event)
    if router is None:
        return Ignored(f"event {event!r} is not handled")
    return router(delivery_id, body)


def _parse(model: type[_Model], body: bytes) -> _Model:
    try:
        return model.model_validate_json(body)
    except ValidationError as error:
        raise InvalidPayload(_describe(error)) from None


def _describe(error: ValidationError) -> str:
    """Which fields are wrong, without echoing the payload's values."""
    problems = error.errors(include_url=False, include_input=False)
    if any(problem["type"] == "json_invalid" for problem in problems):
        return "body is not valid JSON"
    fields = sorted({".".join(str(part) for part in p["loc"]) or "(body)" for p in problems})
    return f"missing or invalid field(s): {', '.join(fields)}"


def _issue_comment(delivery_id: str, body: bytes) -> Routed:
    payload = _parse(IssueCommentEvent, body)
    if payload.action != "created":
        return Ignored(f"issue_comment.{payload.action}")
    if payload.issue.pull_request is None:
        return Ignored("comment on an issue, not a pull request")
    if payload.sender.type == "Bot":
        return Ignored("comment by a bot")
    command = parse_command(payload.comment.body)
    if command is None:
        return Ignored("no /council command")
    return JobRequest(
        trigger=_COMMAND_TRIGGERS[command.kind],
        delivery_id=delivery_id,
        installation_id=payload.installation.id if payload.installation else None,
        repo=payload.repository.full_name,
        pr_number=payload.issue.number,
        sender_login=payload.sender.login,
        comment_id=payload.comment.id,
        protocol=command.protocol,
        debate_mode=command.mode,
        board_add=command.board_add,
        board_remove=command.board_remove,
        inline=command.inline,
        # Cleaned at the door: the job, its logs and its records never hold the raw text.
        question=(clean_untrusted(command.question) or None) if command.question else None,
    )


def _pull_request(delivery_id: str, body: bytes) -> Routed:
    payload = _parse(PullRequestEvent, body)
    trigger = _pull_request_trigger(payload)
    if trigger is None:
        return Ignored(f"pull_request.{payload.action}")
    pull = payload.pull_request
    return JobRequest(
        trigger=trigger,
        delivery_id=delivery_id,
        installation_id=payload.installation.id if payload.installation else None,
        repo=payload.repository.full_name,
        pr_number=pull.number,
        head_sha=pull.head.sha,
        sender_login=payload.sender.login,
        label=payload.label.name if payload.label and trigger == "label" else None,
        merged=bool(pull.merged) if trigger == "closed" else None,
        draft=pull.draft,
    )


def _pull_request_trigger(payload: PullRequestEvent) -> Trigger | None:
    if payload.action == "labeled":
        if payload.label is None:
            raise InvalidPayload("missing or invalid field(s): label")
        return "label"
    if payload.action in PUSH_ACTIONS:
        return "push"
    if payload.action == "closed":
        return "closed"
    return None


def _check_run(delivery_id: str, body: bytes) -> Routed:
    payload = _parse(CheckRunEvent, body)
    run = payload.check_run
    if payload.action not in ("rerequested", "requested_action"):
        return Ignored(f"check_run.{payload.action}")
    if run.name != CHECK_RUN_NAME:
        return Ignored(f"check run {run.name!r} is not the App's")
    identifier: str | None = None
    protocol: str | None = None
    if payload.action == "requested_action":
        if payload.requested_action is None:
            raise InvalidPayload("missing or invalid field(s): requested_action")
        identifier = payload.requested_action.identifier
        try:
            protocol = button_protocol(identifier)
        except KeyError:
            return Ignored(f"unknown button {identifier!r}")
    return JobRequest(
        trigger="rerequest" if identifier is None else "requested_action",
        delivery_id=delivery_id,
        installation_id=payload.installation.id if payload.installation else None,
        repo=payload.repository.full_name,
        pr_number=run.pull_requests[0].number if run.pull_requests else None,
        head_sha=run.head_sha,
        sender_login=payload.sender.login,
        check_run_id=run.id,
        action=identifier,
        protocol=protocol,
    )


def _installation(delivery_id: str, body: bytes) -> Routed:
    payload = _parse(InstallationEvent, body)
    account = payload.installation.account
    return JobRequest(
        trigger="installation",
        delivery_id=delivery_id,
        installation_id=payload.installation.id,
        sender_login=payload.sender.login,
        installation_action=payload.action,
        account=(account.login or account.slug) if account else None,
        repositories=[repo.full_name for repo in payload.repositories or []],
    )


def _installation_repositories(delivery_id: str, body: bytes) -> Routed:
    payload = _parse(InstallationRepositoriesEvent, body)
    account = payload.installation.account
    changed = (
        payload.repositories_removed
        if payload.action == "removed"
        else (payload.repositories_added)
    )
    return JobRequest(
        trigger="installation",
        delivery_id=delivery_id,
        installation_id=payload.installation.id,
        sender_login=payload.sender.login,
        installation_action=payload.action,
        account=(account.login or account.slug) if account else None,
        repositories=[repo.full_name for repo in changed],
    )


_ROUTERS: dict[str, Callable[[str, bytes], Routed]] = {
    "issue_comment": _issue_comment,
    "pull_request": _pull_request,
    "check_run": _check_run,
    "installation": _installation,
    "installation_repositories": _installation_repositories,
}
