"""Admission in the App's worker: which pull request a job is about, and whether it may
convene at all (the policy is `bot.pr.admission`'s; here: the re-runs' target from the
store, and the refusal's window in Redis).

All of it is decided before the repo's personas are read or a check run is opened. A
`/council` command that the forge fails (reading the PR or its config, the commenter's
permission, after the client's retries) gets a reply saying what failed and to try again;
`reply_failure` says the same for a failure later in the job.
"""

from __future__ import annotations

from bot.forge import ForgeError, PullInfo
from bot.pr import admission
from bot.pr.admission import Admitted, Skip, acknowledge, admit_automatic, refuse
from bot.queue.deps import WorkerDeps
from bot.queue.jobcontext import JobContext
from bot.render.checks import button_protocol
from bot.store.deliberations import find_by_check_run


async def admit(ctx: JobContext) -> Admitted:
    """The PR, its config and the protocol, or `Skip` with the reason."""
    try:
        return await _admit(ctx)
    except ForgeError as error:
        await reply_failure(ctx, error)
        raise


async def reply_failure(ctx: JobContext, error: BaseException) -> None:
    """Tell the commenter of a `/council` command that it failed (`bot.pr.admission`)."""
    request = ctx.request
    await admission.reply_failure(ctx.forge, request, request.pr_number, error, ctx.log)


class DeniedWindow:
    """`bot.pr.ports.ReplyThrottle` in Redis: one refusal per pull request per
    `permission_reply_interval_s`."""

    def __init__(self, deps: WorkerDeps, repo: str) -> None:
        self.deps = deps
        self.repo = repo

    async def first_in_window(self, pr: int) -> bool:
        window = self.deps.settings.permission_reply_interval_s
        return await self.deps.state.first_in_window(f"denied:{self.repo}:{pr}", window)


async def _admit(ctx: JobContext) -> Admitted:
    pr_number, protocol = await _target(ctx)
    pull = await ctx.forge.pull(pr_number)
    text, loaded = await ctx.reads.config(pull)
    if ctx.request.trigger == "command":
        await _admit_command(ctx, pull)
    elif ctx.automatic:
        admit_automatic(ctx.request, pull, loaded.config)
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
    try:  # a button of an older release's check run convenes what the run had
        chosen = button_protocol(request.action) if request.action else None
    except KeyError:
        chosen = None
    protocol = chosen or previous.protocol
    return previous.pr_number, protocol


async def _admit_command(ctx: JobContext, pull: PullInfo) -> None:
    request, login = ctx.request, ctx.request.sender_login
    if not await ctx.forge.can_trigger(login):
        await refuse(ctx.forge, DeniedWindow(ctx.deps, request.repo), pull.number, login)
        raise Skip(f"{request.sender_login} may not convene the council")
    if request.comment_id is not None:
        await acknowledge(ctx.forge, request.comment_id, ctx.log)
