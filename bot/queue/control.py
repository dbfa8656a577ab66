"""Jobs that steer rather than deliberate: `/council help` and `/council cancel`."""

from __future__ import annotations

import structlog

from bot.commands import GRAMMAR_HELP
from bot.github.fetch import fetch_pull, read_config
from bot.github.permissions import can_trigger
from bot.github.publish import react, reply
from bot.queue.deps import WorkerDeps
from bot.queue.jobs import JobRequest
from bot.review import load_repo_config, render_effective
from bot.store.records import running_for_pr

log = structlog.get_logger(__name__)


async def reply_help(deps: WorkerDeps, request: JobRequest) -> str:
    if request.installation_id is None or request.pr_number is None:
        return "ignored"
    client = deps.github.for_installation(request.installation_id, request.repo)
    pull = await fetch_pull(client, request.pr_number)
    loaded = load_repo_config(await read_config(client, pull.default_branch), deps.settings)
    body = f"{GRAMMAR_HELP}\n{render_effective(loaded.config, loaded.issues)}"
    await reply(client, request.pr_number, body)
    return "help posted"


async def cancel(deps: WorkerDeps, request: JobRequest) -> str:
    """Abort every running deliberation on the PR; each marks its check run cancelled."""
    if request.installation_id is None or request.pr_number is None:
        return "ignored"
    client = deps.github.for_installation(request.installation_id, request.repo)
    if not await can_trigger(client, request.sender_login):
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
