"""The reconciler: a deliberation whose runner died goes to a live worker within a minute.

Every worker runs it on a timer (arq cron, `COUNCIL_RECONCILE_INTERVAL_S`; arq lets one
worker take each tick). It looks at running deliberations older than one lease and, for
each whose lease lapsed (bot/queue/lease.py):

- while arq still holds the job (the dead worker's in-progress mark stays for the whole job
  timeout), it clears that mark so the next free worker takes the job now;
- when arq no longer has the job (Redis lost its data, or arq gave up after `max_tries`), it
  enqueues the recorded request again under a new job id, for the same deliberation.

Either way the new runner resumes from the ledger and pays only for unfinished calls; past
`COUNCIL_MAX_RESUMES` it completes the check run instead, saying it could not be resumed.

It also schedules again an advisory kept for a later posting try (GitHub refused it) whose
try the queue lost.
"""

from __future__ import annotations

from datetime import UTC, datetime, timedelta
from typing import Any

import structlog
from arq.constants import in_progress_key_prefix, job_key_prefix, result_key_prefix

from bot.queue.deps import WorkerDeps
from bot.queue.jobs import JobFunction
from bot.queue.lease import lease_key
from bot.queue.publishing import PUBLISH_JOB, PUBLISH_MAX_DEFER_S
from bot.review.run import handed_back_since, last_deferred, record_resumed, recorded_request
from bot.store.records import DeliberationRecord, stale_pending, stale_running

log = structlog.get_logger(__name__)


async def reconcile(ctx: dict[str, Any]) -> int:
    """One pass; returns how many deliberations were handed to a live worker."""
    deps: WorkerDeps = ctx["deps"]
    settings = deps.settings
    cutoff = datetime.now(UTC) - timedelta(seconds=settings.lease_ttl_s)
    handed = 0
    for record in await stale_running(deps.db, created_before=cutoff):
        if await deps.redis.exists(lease_key(settings.key_prefix, record.id)):
            continue  # a live runner holds it
        if await handed_back_since(deps.db, record.id, cutoff):
            continue  # the worker it went to has one lease's time to take it
        if await hand_back(deps, record):
            handed += 1
    return handed + await reschedule_kept(deps)


async def reschedule_kept(deps: WorkerDeps) -> int:
    """An advisory kept for a later posting try whose try the queue lost (Redis restarted
    without its data) is scheduled again, so a kept advisory is always posted."""
    # A try is deferred at most PUBLISH_MAX_DEFER_S; a record untouched for longer than
    # that with no queued try has lost it.
    cutoff = datetime.now(UTC) - timedelta(seconds=PUBLISH_MAX_DEFER_S + 60)
    scheduled = 0
    for record in await stale_pending(deps.db, updated_before=cutoff):
        job = await last_deferred(deps.db, record.id)
        if job is None:
            continue
        job_id = f"publish:{record.id}:{job.get('attempt')}"
        if await deps.redis.exists(job_key_prefix + job_id, result_key_prefix + job_id):
            continue
        await deps.redis.enqueue_job(
            PUBLISH_JOB, job, _job_id=f"{job_id}:again", _queue_name=deps.settings.queue_name
        )
        log.warning("publish_rescheduled", deliberation_id=record.id, job_id=job_id)
        scheduled += 1
    return scheduled


async def hand_back(deps: WorkerDeps, record: DeliberationRecord) -> bool:
    requested = await recorded_request(deps.db, record.id)
    if requested is None:
        return False  # started before requests were recorded: nothing to run it with
    job_id, payload = requested
    redis = deps.redis
    count = await record_resumed(deps.db, record.id, reason="its runner's claim lapsed")
    if await redis.exists(job_key_prefix + job_id):
        # The dead worker's mark; without it the job, still queued, runs at the next poll.
        await redis.delete(in_progress_key_prefix + job_id)
        await redis.zadd(deps.settings.queue_name, {job_id: 0}, nx=True)
        how = "released"
    else:
        resumed_id = f"resume:{record.key}:{count}"
        await redis.enqueue_job(
            JobFunction.DELIBERATE.value,
            {**payload, "deliberation_key": record.key},
            _job_id=resumed_id,
            _queue_name=deps.settings.queue_name,
        )
        how = f"enqueued again as {resumed_id}"
    log.warning(
        "deliberation_handed_back",
        deliberation_id=record.id,
        repo=record.repo,
        pr=record.pr_number,
        resumes=count,
        how=how,
    )
    return True
