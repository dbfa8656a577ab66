"""Admission: which pull request a job is about, and whether it may convene at all.

A `/council` command needs a commenter with write or admin access; automatic triggers
(label, push) skip closed PRs, drafts, labels that are not trigger labels and stale pushes.
All of it is decided before the repo's personas are read or a check run is opened.

A `/council` command that GitHub fails (reading the PR or its config, the commenter's
permission, after the client's retries) gets a reply saying what failed and to try again;
`reply_failure` says the same for a failure later in the job.
"""

from __future__ import annotations

from bot.config import EffectiveConfig
from bot.forge import PullInfo
from bot.github.client import RepoClient
from bot.github.errors import GitHubError
from bot.github.fetch import fetch_pull
from bot.github.permissions import can_trigger
from bot.github.publish import react, reply
from bot.pr.admission import DENIED, Admitted, Skip, admit_automatic
from bot.pr.failures import explain_failure
from bot.queue.deps import WorkerDeps
from bot.queue.jobcontext import JobContext
from bot.queue.jobs import JobRequest
from bot.render.checks import BUTTON_DEBATE
from bot.review.pull import read_repo_config
from bot.store.deliberations import find_by_check_run


async def admit(ctx: JobContext) -> Admitted:
    """The PR, its config and the protocol, or `Skip` with the reason."""
    try:
        return await _admit(ctx)
    except GitHubError as error:
        await reply_failure(ctx, error)
        raise


async def reply_failure(ctx: JobContext, error: BaseException) -> None:
    """Tell the commenter of a `/council` command that it failed, what failed and to try
    again (automatic triggers have nobody to tell; their check run says it). Best effort:
    GitHub may well be what failed."""
    request = ctx.request
    if request.trigger != "command" or request.pr_number is None:
        return
    text = explain_failure(error, delivery_id=request.delivery_id)
    try:
        await reply(ctx.client, request.pr_number, f"@{request.sender_login} {text}")
    except GitHubError as failed:
        ctx.log.warning("failure_reply_failed", error=str(failed))


async def _admit(ctx: JobContext) -> Admitted:
    pr_number, protocol = await _target(ctx)
    pull = await fetch_pull(ctx.client, pr_number)
    text, loaded = await read_repo_config(ctx.client, pull, ctx.settings, ctx.blob_cache())
    if ctx.request.trigger == "command":
        await _admit_command(ctx, pull)
    elif ctx.automatic:
        _admit_automatic(ctx, pull, loaded.config)
    return Admitted(pull, protocol, text, loaded)


async def _target(ctx: JobContext) -> tuple[int, str | None]:
    """The PR and, for re-runs, the protocol (check_run events from forks carry no PR)."""
    request = ctx.request
    if request.trigger not in ("rerequest", "requested_action"):
        if request.pr_number is None:
            raise Skip("no pull request in the event")
        return request.pr_number, request.protocol
    previous = (
        await find_by_check_run(ctx.db, request.check_run_id) if request.check_run_id else None
    )
    if previous is None or previous.pr_number is None:
        raise Skip("the check run is not one of ours")
    protocol = "debate" if request.action == BUTTON_DEBATE else previous.protocol
    return previous.pr_number, protocol


async def refuse(deps: WorkerDeps, client: RepoClient, request: JobRequest, pr_number: int) -> None:
    """The reply to a command from someone without write access: at most one per pull
    request per `permission_reply_interval_s`, whatever the command, and it says why and
    nothing else (no configuration, no models, no limits)."""
    key = f"denied:{request.repo}:{pr_number}"
    if await deps.state.first_in_window(key, deps.settings.permission_reply_interval_s):
        await reply(client, pr_number, f"@{request.sender_login} {DENIED}")


async def _admit_command(ctx: JobContext, pull: PullInfo) -> None:
    request = ctx.request
    if not await can_trigger(ctx.client, request.sender_login):
        await refuse(ctx.deps, ctx.client, request, pull.number)
        raise Skip(f"{request.sender_login} may not convene the council")
    if request.comment_id is not None:
        await _acknowledge(ctx, request.comment_id)


def _admit_automatic(ctx: JobContext, pull: PullInfo, config: EffectiveConfig) -> None:
    admit_automatic(ctx.request, pull, config)


async def _acknowledge(ctx: JobContext, comment_id: int) -> None:
    """The eyes reaction says "seen"; failing to add it must not stop the deliberation."""
    try:
        await react(ctx.client, comment_id, "eyes")
    except GitHubError as error:
        ctx.log.warning("reaction_failed", comment_id=comment_id, error=str(error))
