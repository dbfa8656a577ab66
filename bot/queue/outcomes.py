"""The jobs after the advice: `pull_request.closed` (scored by `bot.review.outcomes`) and
installation bookkeeping."""

from __future__ import annotations

import structlog

from bot.forge import PullFile
from bot.forge.errors import ForgeNotFound
from bot.queue.deps import WorkerDeps
from bot.queue.jobs import JobRequest
from bot.review.outcomes import record_pr_outcome
from bot.store.deliberations import latest_for_pr
from bot.store.installations import delete_installation, upsert_installation

log = structlog.get_logger(__name__)


async def record_closed(deps: WorkerDeps, request: JobRequest) -> str:
    if request.installation_id is None or request.pr_number is None:
        return "ignored"
    record = await latest_for_pr(deps.db, request.repo, request.pr_number)
    if record is None or not record.advisory_json:
        return "no advisory to score"
    async with deps.connect(request.installation_id, request.repo) as repo:
        pull = await repo.forge.pull(request.pr_number)
        changed: dict[str, PullFile] = {}
        if pull.head_sha != record.head_sha:
            compared = await repo.forge.compare(record.head_sha, pull.head_sha)
            if compared.status == "missing":  # the advisory's head is gone: nothing to score
                raise ForgeNotFound(f"compare {record.head_sha[:12]}...{pull.head_sha[:12]}")
            changed = {f.path: f for f in compared.files}
    merged = bool(request.merged if request.merged is not None else pull.merged)
    outcome = await record_pr_outcome(deps.db, record, changed, merged)
    log.info(
        "outcome_recorded",
        repo=request.repo,
        pr=request.pr_number,
        merged=merged,
        addressed=len(outcome.addressed),
        unaddressed=len(outcome.unaddressed),
    )
    return f"merged={merged} addressed={len(outcome.addressed)}"


async def record_installation(deps: WorkerDeps, request: JobRequest) -> str:
    if request.installation_id is None:
        return "ignored"
    if request.installation_action == "deleted":
        await delete_installation(deps.db, request.installation_id)
        return "forgotten"
    await upsert_installation(
        deps.db, request.installation_id, request.account or "", request.repositories
    )
    return "recorded"
