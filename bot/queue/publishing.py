"""Publishing an advisory: the completed check run, the sticky comment, and the books
(ledger, record, metrics). The installation's daily spend is not added here: every call
was charged in the store when it was paid (`bot.store.spend`).

A verdict is never stranded: the check run is the merge gate, and it completes with the
verdict within a minute of the advisory whatever GitHub does with the comment.
- The inline step may take `INLINE_WAIT_S`, the comment `COMMENT_WAIT_S`; a comment GitHub
  refuses as too long (422) is rendered shorter (`render_comment`'s `max_chars`, halved each
  time) and posted again within that time.
- A comment GitHub will not take now (a rate limit's retry-after, 5xx or no connection, or
  slower than `COMMENT_WAIT_S`): the check run is completed with the verdict at once (its
  summary says the comment is coming), the deliberation is kept `publish_pending` with its
  advisory, and the `publish_pending` job posts the comment later: deferred by
  COUNCIL_PUBLISH_RETRY_S, doubling each try (or by the rate limit's `retry-after`), for
  `PUBLISH_TRIES` tries, then links it from the check run.
- A comment GitHub refuses for good (403 "Resource not accessible by integration": the
  installation lacks a permission): the check run is completed with the verdict and names
  the missing permission; nothing is retried.
- A check run GitHub will not complete now: both wait for the `publish_pending` job.
The job carries what the record does not (gate, setup note, task type, whether the check
run is complete, and the repository's comment options: `comment`, `max_findings`,
`min_severity`).
"""

from __future__ import annotations

import asyncio
from datetime import timedelta
from typing import Any

import structlog
from pydantic import BaseModel, ConfigDict

from bot.council.advisory import Advisory
from bot.forge import (
    Forge,
    ForgeAuthError,
    ForgeError,
    ForgeRateLimited,
    ForgeUnavailable,
    PostedComment,
    PullInfo,
    StatusReport,
)
from bot.metrics import OUTCOMES
from bot.pr.books import record_deferred, record_published
from bot.pr.comment import COMMENT_WAIT_S, INLINE_WAIT_S, post_advisory
from bot.pr.failures import explain_failure, missing_permission
from bot.pr.followup.step import InlineRequest
from bot.pr.notes import setup_note
from bot.pr.status import with_heads
from bot.queue.checkrun import CheckRunLifecycle
from bot.queue.deps import WorkerDeps
from bot.queue.inline_step import inline_step
from bot.queue.jobcontext import JobContext
from bot.queue.links import transcript_url
from bot.render import conclusion_for, render_check_run
from bot.render.checks import CheckRunOutput, Gate
from bot.render.markdown import CommentOptions, comment_options
from bot.review.setup import RepoSetup
from bot.store.deliberations import (
    DeliberationRecord,
    DeliberationStatus,
    get_deliberation,
    latest_for_pr,
    record_publication,
    set_status,
)

__all__ = ["PUBLISH_JOB", "PUBLISH_TRIES", "PendingPublication", "publish", "publish_pending"]

log = structlog.get_logger(__name__)

PUBLISH_JOB = "publish_pending"  # the arq function that posts a kept advisory
PUBLISH_TRIES = 8  # with the default 60 s doubling (capped): about an hour and a half
PUBLISH_MAX_DEFER_S = 1800.0


class PendingPublication(BaseModel):
    """What the `publish_pending` job needs besides the record (a JSON-mode dict in arq)."""

    model_config = ConfigDict(extra="forbid", frozen=True)

    deliberation_id: str
    task_type: str
    gate: Gate = "verdict"
    note: str = ""  # the repository's setup problems, for the check run's summary
    attempt: int = 0  # 0: the deliberation job's own; then each `publish_pending` try
    check_completed: bool = False  # the check run already carries the verdict
    # The repository's `comment`, `max_findings`, `min_severity`: the record keeps only the
    # advisory, so a kept advisory is rendered later as the repo asked.
    comment: CommentOptions = CommentOptions()


async def publish(
    ctx: JobContext,
    lifecycle: CheckRunLifecycle,
    pull: PullInfo,
    setup: RepoSetup,
    advisory: Advisory,
    task_type: str,
    *,
    inline: InlineRequest | None = None,
) -> None:
    """Post the advisory and complete the check run. When GitHub will not take the comment
    now, the check run is completed with the verdict anyway and the comment is kept for
    `publish_pending` (the job then ends without an error). `inline`: the review comments
    step first (`bot.queue.inline_step`, at most `INLINE_WAIT_S`), which also drops
    findings a person may dismiss; a kept advisory is kept as that step left it."""
    deps, record = ctx.deps, lifecycle.record
    if inline is not None:
        try:
            advisory = await asyncio.wait_for(
                inline_step(ctx, ctx.forge, pull, advisory, inline), INLINE_WAIT_S
            )
        except TimeoutError:  # review comments are extras; the verdict is not
            log.warning("inline_step_slow", deliberation_id=record.id, waited_s=INLINE_WAIT_S)
    pending = PendingPublication(
        deliberation_id=record.id,
        task_type=task_type,
        gate=setup.config.gate,
        note=setup_note(setup),
        comment=comment_options(setup.config),
    )
    conclusion = conclusion_for(advisory, pending.gate)
    try:
        comment = await _post_comment_within(
            deps, ctx.forge, record, pull.number, advisory, pending
        )
    except ForgeError as error:
        await _verdict_without_comment(deps, lifecycle, advisory, pending, error)
        return
    try:
        output = _check_run_output(advisory, pending, comment.html_url)
        await lifecycle.complete(output, conclusion, details_url=comment.html_url)
    except ForgeError as error:
        await _keep(deps, pending, advisory, error)
        return
    await _record(deps, record, advisory, comment, lifecycle.check_run_id, conclusion, pending)


async def publish_pending(ctx: dict[str, Any], payload: dict[str, Any]) -> str:
    """The arq job: complete a kept advisory's check run if it is not yet, then post its
    comment (and link it from the check run), or try again later."""
    deps: WorkerDeps = ctx["deps"]
    pending = PendingPublication.model_validate(payload)
    record = await get_deliberation(deps.db, pending.deliberation_id)
    if record is None or record.status != DeliberationStatus.PUBLISH_PENDING:
        return "nothing to publish"
    if record.installation_id is None or record.pr_number is None or not record.advisory_json:
        return "nothing to publish"
    advisory = Advisory.model_validate_json(record.advisory_json)
    async with deps.connect(record.installation_id, record.repo) as repo:
        forge = repo.forge
        if await _superseded(deps, record):
            return await _give_up(deps, forge, record, advisory, pending, superseded=True)
        try:
            if not pending.check_completed:
                await _complete(deps, forge, record, advisory, pending, None, _COMING)
                pending = pending.model_copy(update={"check_completed": True})
            comment = await _post_comment(deps, forge, record, record.pr_number, advisory, pending)
        except ForgeError as error:
            if _permanent(error) or pending.attempt >= PUBLISH_TRIES:
                return await _give_up(deps, forge, record, advisory, pending, error=error)
            await _schedule(deps, pending, error)
            return f"deferred: {type(error).__name__}"
        try:  # the verdict is there already: this only adds the comment's link
            await _complete(deps, forge, record, advisory, pending, comment.html_url)
        except ForgeError as failed:
            log.warning("check_run_link_failed", deliberation_id=record.id, error=str(failed))
    conclusion = conclusion_for(advisory, pending.gate)
    await _record(deps, record, advisory, comment, record.check_run_id, conclusion, pending)
    return "published"


# -- posting ---------------------------------------------------------------------------------


async def _post_comment(
    deps: WorkerDeps,
    forge: Forge,
    record: DeliberationRecord,
    pr: int,
    advisory: Advisory,
    pending: PendingPublication,
) -> PostedComment:
    """The sticky comment, rendered shorter while GitHub refuses it as too long."""
    login = await deps.app_login()
    # Held across the look-up and the write, each of which may retry for the whole budget.
    lock = deps.redis.lock(
        f"{deps.settings.key_prefix}:sticky:{record.repo}:{pr}",
        timeout=2 * deps.settings.github_retry_budget_s + 120,
    )

    def shortened(refused: int, limit: int) -> None:
        log.warning(
            "comment_shortened", deliberation_id=record.id, refused_chars=refused, max_chars=limit
        )

    return await post_advisory(
        forge,
        pr,
        advisory,
        pending.comment,
        pending.gate,
        login,
        transcript_url=transcript_url(deps.settings, record.id),
        lock=lock,
        on_shortened=shortened,
    )


_COMING = (
    "**The advisory comment is not on the pull request yet**; it is posted as soon as "
    "GitHub takes it. The verdict on this check run stands."
)


async def _post_comment_within(
    deps: WorkerDeps,
    forge: Forge,
    record: DeliberationRecord,
    pr: int,
    advisory: Advisory,
    pending: PendingPublication,
) -> PostedComment:
    """`_post_comment`, given up after `COMMENT_WAIT_S` (a GitHub that keeps failing is
    retried for minutes by the client: the check run must not wait for that)."""
    try:
        return await asyncio.wait_for(
            _post_comment(deps, forge, record, pr, advisory, pending), COMMENT_WAIT_S
        )
    except TimeoutError:
        raise ForgeUnavailable(
            f"the comment was not posted within {round(COMMENT_WAIT_S)} s"
        ) from None


def _permanent(error: ForgeError) -> bool:
    """A refusal no retry changes: the installation lacks a permission (403, not a limit)."""
    return isinstance(error, ForgeAuthError) and error.status == 403


def _check_run_output(
    advisory: Advisory,
    pending: PendingPublication,
    comment_url: str | None,
    note: str | None = None,
) -> CheckRunOutput:
    output = render_check_run(advisory, gate=pending.gate, comment_url=comment_url)
    return with_heads(output, note, pending.note)


async def _complete(
    deps: WorkerDeps,
    forge: Forge,
    record: DeliberationRecord,
    advisory: Advisory,
    pending: PendingPublication,
    comment_url: str | None,
    note: str | None = None,
) -> None:
    if record.check_run_id is None:
        return
    await _publisher(deps, forge).complete(
        record.check_run_id,
        _check_run_output(advisory, pending, comment_url, note),
        conclusion_for(advisory, pending.gate),
        details_url=transcript_url(deps.settings, record.id) or comment_url,
    )


def _publisher(deps: WorkerDeps, forge: Forge) -> StatusReport:
    return forge.status(update_interval_s=deps.settings.check_update_interval_s)


# -- the verdict first, the comment later ----------------------------------------------------


def _missing_comment_note(error: ForgeError, delay: float | None) -> str:
    if delay is None:
        return (
            f"**The advisory comment could not be posted:** GitHub refused it "
            f"({_why(error)}): {missing_permission(error)}, then comments /council. The "
            "verdict on this check run stands."
        )
    return (
        f"**The advisory comment is not on the pull request yet:** {_why(error)}. It is "
        f"posted again in about {round(delay)} s. The verdict on this check run stands."
    )


async def _verdict_without_comment(
    deps: WorkerDeps,
    lifecycle: CheckRunLifecycle,
    advisory: Advisory,
    pending: PendingPublication,
    error: ForgeError,
) -> None:
    """The comment failed: the check run gets the verdict now; the comment is retried in
    the background, unless GitHub refused it for good."""
    permanent = _permanent(error)
    delay = None if permanent else _delay(deps, pending, error)
    conclusion = conclusion_for(advisory, pending.gate)
    output = _check_run_output(advisory, pending, None, _missing_comment_note(error, delay))
    completed = False
    if lifecycle.check_run_id is not None:
        try:
            await lifecycle.complete(output, conclusion, details_url=None)
            completed = True
        except ForgeError as failed:
            log.warning(
                "check_run_not_completed",
                deliberation_id=pending.deliberation_id,
                error=str(failed),
            )
    if permanent and completed:
        log.warning("comment_refused", deliberation_id=pending.deliberation_id, error=str(error))
        await _ended(deps, pending.deliberation_id, advisory, conclusion)
        return
    await _keep(deps, pending.model_copy(update={"check_completed": completed}), advisory, error)


async def _ended(
    deps: WorkerDeps, deliberation_id: str, advisory: Advisory, conclusion: str
) -> None:
    """The verdict is on the check run and no comment will follow."""
    await set_status(
        deps.db,
        deliberation_id,
        DeliberationStatus.COMPLETED,
        resolution=advisory.resolution.value,
        conclusion=conclusion,
        advisory_json=advisory.model_dump_json(),
        cost_usd=advisory.usage.cost_usd,
    )
    OUTCOMES.labels(advisory.resolution.value).inc()


async def _keep(
    deps: WorkerDeps, pending: PendingPublication, advisory: Advisory, error: ForgeError
) -> None:
    """The advisory stays on the record, `publish_pending`, and the job is scheduled."""
    await set_status(
        deps.db,
        pending.deliberation_id,
        DeliberationStatus.PUBLISH_PENDING,
        resolution=advisory.resolution.value,
        conclusion=conclusion_for(advisory, pending.gate),
        advisory_json=advisory.model_dump_json(),
        cost_usd=advisory.usage.cost_usd,
    )
    await _schedule(deps, pending, error)


def _delay(deps: WorkerDeps, pending: PendingPublication, error: ForgeError) -> float:
    """Seconds before the next try: doubling from COUNCIL_PUBLISH_RETRY_S, or the rate
    limit's retry-after when that is longer."""
    delay = min(PUBLISH_MAX_DEFER_S, deps.settings.publish_retry_s * 2.0**pending.attempt)
    if isinstance(error, ForgeRateLimited):
        delay = max(delay, error.retry_after.total_seconds() + 1)
    return delay


async def _schedule(deps: WorkerDeps, pending: PendingPublication, error: ForgeError) -> float:
    """Enqueue the next try of `publish_pending`, deferred; returns the seconds."""
    delay = _delay(deps, pending, error)
    following = pending.model_copy(update={"attempt": pending.attempt + 1})
    await record_deferred(deps.db, pending.deliberation_id, job=following.model_dump(mode="json"))
    # One job id per try: enqueued twice (a redelivered job), it is still one try.
    await deps.redis.enqueue_job(
        PUBLISH_JOB,
        following.model_dump(mode="json"),
        _job_id=f"publish:{pending.deliberation_id}:{following.attempt}",
        _defer_by=timedelta(seconds=delay),
        _queue_name=deps.settings.queue_name,
    )
    log.warning(
        "publish_deferred",
        deliberation_id=pending.deliberation_id,
        error=str(error),
        retry_in_s=round(delay, 1),
        attempt=following.attempt,
    )
    return delay


def _why(error: ForgeError) -> str:
    if isinstance(error, ForgeRateLimited):
        return "the App's rate limit was reached"
    if isinstance(error, ForgeUnavailable):
        return f"GitHub did not answer ({error.reason})"
    if error.status is not None:
        return f"GitHub answered {error.status} {error.reason}"
    return "GitHub error"


async def _superseded(deps: WorkerDeps, record: DeliberationRecord) -> bool:
    """A newer deliberation of the PR has published: its comment must not be overwritten."""
    latest = await latest_for_pr(deps.db, record.repo, record.pr_number or 0)
    return (
        latest is not None
        and latest.id != record.id
        and latest.created_at > record.created_at
        and latest.status == DeliberationStatus.COMPLETED
    )


async def _give_up(
    deps: WorkerDeps,
    forge: Forge,
    record: DeliberationRecord,
    advisory: Advisory,
    pending: PendingPublication,
    *,
    error: ForgeError | None = None,
    superseded: bool = False,
) -> str:
    """No comment will be posted. A check run that carries the verdict keeps it; one that
    does not yet gets it now, saying the comment is missing. The advisory stays on the
    record."""
    conclusion = conclusion_for(advisory, pending.gate)
    if superseded:
        reason = "A newer review of this pull request was posted before this one could be."
        if record.check_run_id is not None and not pending.check_completed:
            try:
                await _publisher(deps, forge).cancel(record.check_run_id, reason)
            except ForgeError as failed:
                log.warning("check_run_not_cancelled", deliberation_id=record.id, error=str(failed))
        status = DeliberationStatus.SUPERSEDED
        await set_status(
            deps.db, record.id, status, conclusion=None if pending.check_completed else "cancelled"
        )
        log.warning("publish_abandoned", deliberation_id=record.id, reason=reason)
        return "superseded"
    assert error is not None
    reason = (
        f"GitHub would not take the advisory comment after {pending.attempt + 1} tries. "
        + explain_failure(error, delivery_id=record.key)
    )
    if _permanent(error):
        reason = (
            f"GitHub refused the advisory comment ({_why(error)}): {missing_permission(error)}."
        )
    carried = pending.check_completed
    if not carried and record.check_run_id is not None:
        try:
            await _complete(deps, forge, record, advisory, pending, None, f"**{reason}**")
            carried = True
        except ForgeError as failed:
            log.warning("check_run_not_completed", deliberation_id=record.id, error=str(failed))
    if carried:
        await _ended(deps, record.id, advisory, conclusion)
    else:
        await set_status(deps.db, record.id, DeliberationStatus.FAILED, conclusion=conclusion)
    log.warning("publish_abandoned", deliberation_id=record.id, reason=reason)
    return "abandoned"


# -- the books -------------------------------------------------------------------------------


async def _record(
    deps: WorkerDeps,
    record: DeliberationRecord,
    advisory: Advisory,
    comment: PostedComment,
    check_run_id: int | None,
    conclusion: str,
    pending: PendingPublication,
) -> None:
    await record_published(
        deps.db,
        record.id,
        comment_id=comment.id,
        check_run_id=check_run_id,
        task_type=pending.task_type,
    )
    await record_publication(deps.db, record.id, comment_id=comment.id)
    await set_status(
        deps.db,
        record.id,
        DeliberationStatus.COMPLETED,
        resolution=advisory.resolution.value,
        conclusion=conclusion,
        advisory_json=advisory.model_dump_json(),
        cost_usd=advisory.usage.cost_usd,
    )
    OUTCOMES.labels(advisory.resolution.value).inc()
    log.info(
        "deliberation_published",
        deliberation_id=record.id,
        repo=record.repo,
        pr=record.pr_number,
        resolution=advisory.resolution.value,
        cost_usd=round(advisory.usage.cost_usd, 4),
        comment_id=comment.id,
    )
