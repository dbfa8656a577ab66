"""Jobs that steer rather than deliberate: `/council help` and `/council cancel`."""

from __future__ import annotations

import structlog

from bot.forge import Reactions
from bot.pr.admission import refuse
from bot.pr.notes import help_text
from bot.queue.admission import DeniedWindow
from bot.queue.deps import WorkerDeps
from bot.queue.jobs import JobRequest
from bot.store.deliberations import running_for_pr

log = structlog.get_logger(__name__)


async def reply_help(deps: WorkerDeps, request: JobRequest) -> str:
    """The grammar, the effective configuration and the repository's broken council files;
    to someone who may not convene the council, only the refusal (the configuration names
    the operator's models and limits)."""
    if request.installation_id is None or request.pr_number is None:
        return "ignored"
    pr, login = request.pr_number, request.sender_login
    async with deps.connect(request.installation_id, request.repo, shared_cache=False) as repo:
        if not await repo.forge.can_trigger(login):
            await refuse(repo.forge, DeniedWindow(deps, request.repo), pr, login)
            return "denied"
        pull = await repo.forge.pull(pr)
        text, _ = await repo.reads.config(pull)
        setup = await repo.reads.setup(pull, text)
        await repo.forge.reply(pr, help_text(setup))
    return "help posted"


async def cancel(deps: WorkerDeps, request: JobRequest) -> str:
    """Abort every running deliberation on the PR; each marks its check run cancelled."""
    if request.installation_id is None or request.pr_number is None:
        return "ignored"
    pr, login = request.pr_number, request.sender_login
    async with deps.connect(request.installation_id, request.repo) as repo:
        forge = repo.forge
        if not await forge.can_trigger(login):
            await refuse(forge, DeniedWindow(deps, request.repo), pr, login)
            return "denied"
        comment = request.comment_id
        if comment is not None and forge.capabilities.reactions and isinstance(forge, Reactions):
            await forge.react(comment, "eyes")
        running = await running_for_pr(deps.db, request.repo, pr)
        for record in running:
            await deps.state.request_stop(record.key, f"Cancelled by @{login}.")
        if not running:
            await forge.reply(pr, "There is no running deliberation to cancel.")
    log.info("cancel_requested", repo=request.repo, pr=pr, jobs=len(running))
    return f"cancelled {len(running)}"
