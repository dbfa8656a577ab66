"""Jobs that steer rather than deliberate: `/council help` and `/council cancel`."""

from __future__ import annotations

import structlog

from bot.github.fetch import fetch_pull
from bot.github.permissions import can_trigger
from bot.github.publish import react, reply
from bot.pr.notes import help_text
from bot.queue.admission import refuse
from bot.queue.deps import WorkerDeps
from bot.queue.jobs import JobRequest
from bot.review.pull import pull_setup, read_repo_config
from bot.store.deliberations import running_for_pr

log = structlog.get_logger(__name__)


async def reply_help(deps: WorkerDeps, request: JobRequest) -> str:
    """The grammar, the effective configuration and the repository's broken council files;
    to someone who may not convene the council, only the refusal (the configuration names
    the operator's models and limits)."""
    if request.installation_id is None or request.pr_number is None:
        return "ignored"
    async with deps.github.for_installation(request.installation_id, request.repo) as client:
        if not await can_trigger(client, request.sender_login):
            await refuse(deps, client, request, request.pr_number)
            return "denied"
        pull = await fetch_pull(client, request.pr_number)
        text, _ = await read_repo_config(client, pull, deps.settings)
        setup = await pull_setup(client, pull, deps.settings, deps.catalog, text)
        await reply(client, request.pr_number, help_text(setup))
    return "help posted"


async def cancel(deps: WorkerDeps, request: JobRequest) -> str:
    """Abort every running deliberation on the PR; each marks its check run cancelled."""
    if request.installation_id is None or request.pr_number is None:
        return "ignored"
    client = deps.github.for_installation(request.installation_id, request.repo)
    if not await can_trigger(client, request.sender_login):
        await refuse(deps, client, request, request.pr_number)
        return "denied"
    if request.comment_id is not None:
        await react(client, request.comment_id, "eyes")
    running = await running_for_pr(deps.db, request.repo, request.pr_number)
    for record in running:
        await deps.state.request_stop(record.key, f"Cancelled by @{request.sender_login}.")
    if not running:
        await reply(client, request.pr_number, "There is no running deliberation to cancel.")
    log.info("cancel_requested", repo=request.repo, pr=request.pr_number, jobs=len(running))
    return f"cancelled {len(running)}"
