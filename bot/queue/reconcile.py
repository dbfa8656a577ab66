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

A deliberation nothing can run again is ended here instead, `failed`, its check run (when
it has one) completed with why: one whose job was cut off before it recorded its request (a
database failure) and that the queue no longer holds, and one handed back past
`COUNCIL_MAX_RESUMES` whose last runner never concluded it either. The same rules decide
that it is abandoned: running for longer than a lease, no live claim, no hand-back within
the last lease. A local review's record (`council review`, no pull request) is not the
App's to end.

It also schedules again an advisory kept for a later posting try (GitHub refused it) whose
try the queue lost.
"""

from __future__ import annotations

from datetime import UTC, datetime, timedelta
from typing import Any

import structlog
from arq.constants import in_progress_key_prefix, job_key_prefix, result_key_prefix

from bot.council.advisory import Advisory, Resolution
from bot.forge import ForgeError, ForgeRateLimited, ForgeUnavailable
from bot.metrics import OUTCOMES
from bot.pr.books import (
    handed_back_since,
    last_deferred,
    record_resumed,
    recorded_request,
    resumes,
)
from bot.queue.deps import WorkerDeps
from bot.queue.jobs import JobFunction
from bot.queue.lease import lease_key
from bot.queue.links import transcript_url
from bot.queue.publishing import PUBLISH_JOB, PUBLISH_MAX_DEFER_S
from bot.render import render_check_run
from bot.render.conclusion import Conclusion, conclusion_for
from bot.store.deliberations import (
    DeliberationRecord,
    DeliberationStatus,
    set_status,
    stale_pending,
    stale_running,
)

log = structlog.get_logger(__name__)


async def reconcile(ctx: dict[str, Any]) -> int:
    """One pass (arq's cron job); returns how many deliberations were handed to a live
    worker, ended, or had their posting try scheduled again."""
    deps: WorkerDeps = ctx["deps"]
    return await reconcile_once(deps, now=datetime.now(UTC))


async def reconcile_once(deps: WorkerDeps, *, now: datetime) -> int:
    """One pass as of `now`."""
    settings = deps.settings
    cutoff = now - timedelta(seconds=settings.lease_ttl_s)
    handed = 0
    for record in await stale_running(deps.db, created_before=cutoff):
        if await deps.redis.exists(lease_key(settings.key_prefix, record.id)):
            continue  # a live runner holds it
        if await handed_back_since(deps.db, record.id, cutoff):
            continue  # the worker it went to has one lease's time to take it
        reason = await abandoned(deps, record)
        if reason is not None:
            if await give_up(deps, record, reason):
                handed += 1
        elif await hand_back(deps, record):
            handed += 1
    return handed + await reschedule_kept(deps, now=now)


async def abandoned(deps: WorkerDeps, record: DeliberationRecord) -> str | None:
    """Why nothing will run this stale deliberation again (a sentence for its check run),
    or None when a hand-back can (or it is not the App's: a local review's record)."""
    if record.pr_number is None:
        return None
    limit = deps.settings.max_resumes
    if await resumes(deps.db, record.id) > limit:
        # The runner handed the last allowed resume would have ended it; none did.
        return (
            f"The deliberation was interrupted {limit + 1} times and is not resumed again; "
            "comment /council to start a new one."
        )
    if await recorded_request(deps.db, record.id) is not None:
        return None
    if await deps.redis.exists(job_key_prefix + record.key):
        return None  # the queue still has the job that started it (its id is the key)
    return (
        "The deliberation was cut off (its worker or the database failed) before it could "
        "be resumed, and nothing is left to run it again; comment /council to start a new one."
    )


async def give_up(deps: WorkerDeps, record: DeliberationRecord, reason: str) -> bool:
    """End an abandoned deliberation `failed`, its check run completed saying `reason`
    first (a check run left in progress blocks a merge). False when the forge did not answer:
    the next pass tries again."""
    advisory = Advisory(
        deliberation_id=record.id,
        protocol=record.protocol,
        topic=record.topic,
        resolution=Resolution.FAILED,
        reason=reason,
    )
    # The repository's gate is in its configuration, which nothing here reads: the strict
    # one, as a job has before it reads it (bot.queue.checkrun).
    conclusion = conclusion_for(advisory)
    try:
        check_run_id = await _complete_check_run(deps, record, advisory, conclusion)
    except (ForgeUnavailable, ForgeRateLimited) as error:
        log.warning(
            "abandoned_check_run_not_completed", deliberation_id=record.id, error=str(error)
        )
        return False
    except ForgeError as error:  # gone, or no longer ours: there is nothing to complete
        log.warning("abandoned_check_run_unreachable", deliberation_id=record.id, error=str(error))
        check_run_id = None
    await set_status(
        deps.db,
        record.id,
        DeliberationStatus.FAILED,
        resolution=Resolution.FAILED.value,
        conclusion=conclusion,
    )
    OUTCOMES.labels(Resolution.FAILED.value).inc()
    log.warning(
        "deliberation_abandoned",
        deliberation_id=record.id,
        repo=record.repo,
        pr=record.pr_number,
        check_run_id=check_run_id,
        reason=reason,
    )
    return True


async def _complete_check_run(
    deps: WorkerDeps, record: DeliberationRecord, advisory: Advisory, conclusion: Conclusion
) -> int | None:
    """Complete the deliberation's check run: the one recorded, else the one GitHub has for
    it (its id may not have reached the store); None when it has none."""
    if record.installation_id is None:
        return None
    async with deps.connect(record.installation_id, record.repo) as repo:
        publisher = repo.forge.status(update_interval_s=deps.settings.check_update_interval_s)
        check_run_id = record.check_run_id or await publisher.find(record.head_sha, record.id)
        if check_run_id is None:
            return None
        await publisher.complete(
            check_run_id,
            render_check_run(advisory),
            conclusion,
            actions=(),
            details_url=transcript_url(deps.settings, record.id),
        )
    return check_run_id


async def reschedule_kept(deps: WorkerDeps, *, now: datetime) -> int:
    """An advisory kept for a later posting try whose try the queue lost (Redis restarted
    without its data) is scheduled again, so a kept advisory is always posted."""
    # A try is deferred at most PUBLISH_MAX_DEFER_S; a record untouched for longer than
    # that with no queued try has lost it.
    cutoff = now - timedelta(seconds=PUBLISH_MAX_DEFER_S + 60)
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
