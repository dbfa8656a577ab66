"""Publishing an advisory: the sticky comment, the completed check run, and the books
(ledger, record, metrics). The installation's daily spend is not added here: every call
was charged in the store when it was paid (`bot.store.spend`).

An advisory is never dropped because GitHub would not take it:
- a comment GitHub refuses as too long (422) is rendered shorter (`render_comment`'s
  `max_chars`, halved each time) and posted again;
- when GitHub will not take it now (a rate limit longer than the retry budget, 5xx or no
  connection past it, another refusal), the deliberation is kept `publish_pending` with
  its advisory, and the `publish_pending` job posts it later: deferred by
  COUNCIL_PUBLISH_RETRY_S, doubling each try (or by the rate limit's `retry-after`), for
  `PUBLISH_TRIES` tries; after the last one the check run says the advisory could not be
  posted. The job carries what the record does not (gate, setup note, task type, and the
  repository's comment options: `comment`, `max_findings`, `min_severity`).
"""

from __future__ import annotations

from datetime import timedelta
from typing import Any

import structlog
from pydantic import BaseModel, ConfigDict

from bot.github.client import RepoClient
from bot.github.errors import GitHubError, GitHubRateLimited, GitHubUnavailable
from bot.github.fetch import PullInfo
from bot.github.publish import (
    CheckRunPublisher,
    PostedComment,
    comment_too_long,
    upsert_sticky_comment,
)
from bot.metrics import OUTCOMES
from bot.queue.checkrun import CheckRunLifecycle
from bot.queue.deps import WorkerDeps
from bot.queue.failures import explain_failure
from bot.queue.inline_step import InlineRequest, inline_step
from bot.queue.jobcontext import JobContext
from bot.queue.links import transcript_url
from bot.queue.problems import setup_note
from bot.render import conclusion_for, render_check_run, render_comment
from bot.render.checks import CheckRunOutput, Gate
from bot.render.markdown import CommentOptions, comment_options
from bot.review import Advisory
from bot.review.run import record_deferred, record_published
from bot.review.setup import RepoSetup
from bot.store.records import (
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
COMMENT_MAX_CHARS = 65_000
COMMENT_MIN_CHARS = 1_000  # GitHub refusing less than this is not about length


class PendingPublication(BaseModel):
    """What the `publish_pending` job needs besides the record (a JSON-mode dict in arq)."""

    model_config = ConfigDict(extra="forbid", frozen=True)

    deliberation_id: str
    task_type: str
    gate: Gate = "verdict"
    note: str = ""  # the repository's setup problems, for the check run's summary
    attempt: int = 0  # 0: the deliberation job's own; then each `publish_pending` try
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
    """Post the advisory and complete the check run; or keep it for `publish_pending`
    when GitHub will not take it now (the job then ends without an error). `inline`: the
    review comments step first (`bot.queue.inline_step`), which also drops findings a
    person dismissed; a kept advisory is kept as that step left it."""
    deps, record = ctx.deps, lifecycle.record
    if inline is not None:
        advisory = await inline_step(ctx, pull, advisory, inline)
    pending = PendingPublication(
        deliberation_id=record.id,
        task_type=task_type,
        gate=setup.config.gate,
        note=setup_note(setup),
        comment=comment_options(setup.config),
    )
    conclusion = conclusion_for(advisory.resolution, pending.gate)
    try:
        comment = await _post_comment(deps, ctx.client, record, pull.number, advisory, pending)
        output = _check_run_output(advisory, pending, comment.html_url)
        await lifecycle.complete(output, conclusion, details_url=comment.html_url)
    except GitHubError as error:
        await _keep(deps, lifecycle.publisher, lifecycle.check_run_id, pending, advisory, error)
        return
    await _record(deps, record, advisory, comment, lifecycle.check_run_id, conclusion, pending)


async def publish_pending(ctx: dict[str, Any], payload: dict[str, Any]) -> str:
    """The arq job: post a kept advisory (and complete its check run), or try again later."""
    deps: WorkerDeps = ctx["deps"]
    pending = PendingPublication.model_validate(payload)
    record = await get_deliberation(deps.db, pending.deliberation_id)
    if record is None or record.status != DeliberationStatus.PUBLISH_PENDING:
        return "nothing to publish"
    if record.installation_id is None or record.pr_number is None or not record.advisory_json:
        return "nothing to publish"
    advisory = Advisory.model_validate_json(record.advisory_json)
    client = deps.github.for_installation(record.installation_id, record.repo)
    async with client:
        if await _superseded(deps, record):
            return await _give_up(deps, client, record, advisory, superseded=True)
        try:
            comment = await _post_comment(deps, client, record, record.pr_number, advisory, pending)
            await _complete(deps, client, record, advisory, pending, comment)
        except GitHubError as error:
            if pending.attempt >= PUBLISH_TRIES:
                return await _give_up(deps, client, record, advisory, error=error)
            await _schedule(deps, pending, error)
            return f"deferred: {type(error).__name__}"
    conclusion = conclusion_for(advisory.resolution, pending.gate)
    await _record(deps, record, advisory, comment, record.check_run_id, conclusion, pending)
    return "published"


# -- posting ---------------------------------------------------------------------------------


async def _post_comment(
    deps: WorkerDeps,
    client: RepoClient,
    record: DeliberationRecord,
    pr: int,
    advisory: Advisory,
    pending: PendingPublication,
) -> PostedComment:
    """The sticky comment, rendered shorter while GitHub refuses it as too long."""
    login = await deps.github.app_login()
    # Held across the look-up and the write, each of which may retry for the whole budget.
    lock = deps.redis.lock(
        f"{deps.settings.key_prefix}:sticky:{record.repo}:{pr}",
        timeout=2 * deps.settings.github_retry_budget_s + 120,
    )
    limit = COMMENT_MAX_CHARS
    options = pending.comment.model_copy(update={"gate": pending.gate})
    while True:
        body = render_comment(
            advisory,
            max_chars=limit,
            repo=record.repo,
            options=options,
            transcript_url=transcript_url(deps.settings, record.id),
        )
        try:
            async with lock:
                return await upsert_sticky_comment(client, pr, body, login)
        except GitHubError as error:
            if not comment_too_long(error) or limit <= COMMENT_MIN_CHARS:
                raise
            limit = max(COMMENT_MIN_CHARS, min(limit, len(body)) // 2)
            log.warning(
                "comment_shortened",
                deliberation_id=record.id,
                refused_chars=len(body),
                max_chars=limit,
            )


def _check_run_output(
    advisory: Advisory, pending: PendingPublication, comment_url: str | None
) -> CheckRunOutput:
    output = render_check_run(advisory, gate=pending.gate, comment_url=comment_url)
    if pending.note:  # config problems and persona files that did not load
        summary = pending.note.strip() + "\n\n" + output.summary
        output = output.model_copy(update={"summary": summary})
    return output


async def _complete(
    deps: WorkerDeps,
    client: RepoClient,
    record: DeliberationRecord,
    advisory: Advisory,
    pending: PendingPublication,
    comment: PostedComment,
) -> None:
    if record.check_run_id is None:
        return
    await _publisher(deps, client).complete(
        record.check_run_id,
        _check_run_output(advisory, pending, comment.html_url),
        conclusion_for(advisory.resolution, pending.gate),
        details_url=transcript_url(deps.settings, record.id) or comment.html_url,
    )


def _publisher(deps: WorkerDeps, client: RepoClient) -> CheckRunPublisher:
    return CheckRunPublisher(client, update_interval_s=deps.settings.check_update_interval_s)


# -- keeping it for later --------------------------------------------------------------------


async def _keep(
    deps: WorkerDeps,
    publisher: CheckRunPublisher,
    check_run_id: int | None,
    pending: PendingPublication,
    advisory: Advisory,
    error: GitHubError,
) -> None:
    """The advisory stays on the record, `publish_pending`, and the job is scheduled."""
    await set_status(
        deps.db,
        pending.deliberation_id,
        DeliberationStatus.PUBLISH_PENDING,
        resolution=advisory.resolution.value,
        conclusion=conclusion_for(advisory.resolution, pending.gate),
        advisory_json=advisory.model_dump_json(),
        cost_usd=advisory.usage.cost_usd,
    )
    delay = await _schedule(deps, pending, error)
    if check_run_id is not None and not isinstance(error, GitHubUnavailable):
        # GitHub answers (a rate limit, a refusal): say why the verdict is not there yet.
        # When it does not answer at all, this would only spend another retry budget.
        await _note_waiting(publisher, check_run_id, advisory, error, delay)


async def _schedule(deps: WorkerDeps, pending: PendingPublication, error: GitHubError) -> float:
    """Enqueue the next try of `publish_pending`, deferred; returns the seconds."""
    delay = min(PUBLISH_MAX_DEFER_S, deps.settings.publish_retry_s * 2.0**pending.attempt)
    if isinstance(error, GitHubRateLimited):
        delay = max(delay, error.retry_after.total_seconds() + 1)
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


async def _note_waiting(
    publisher: CheckRunPublisher,
    check_run_id: int,
    advisory: Advisory,
    error: GitHubError,
    delay: float,
) -> None:
    summary = (
        f"The council reached its verdict ({advisory.resolution.value}), but GitHub did not "
        f"take the advisory comment yet ({_why(error)}). It is kept and posted again in "
        f"about {round(delay)} s; this check completes then."
    )
    try:
        await publisher.note(check_run_id, "Advisory ready, not yet posted", summary)
    except GitHubError as failed:  # the kept advisory matters, this note does not
        log.warning("check_run_note_failed", check_run_id=check_run_id, error=str(failed))


def _why(error: GitHubError) -> str:
    if isinstance(error, GitHubRateLimited):
        return "the App's rate limit was reached"
    if isinstance(error, GitHubUnavailable):
        return "GitHub did not answer"
    return f"GitHub answered {error.status}" if error.status is not None else "GitHub error"


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
    client: RepoClient,
    record: DeliberationRecord,
    advisory: Advisory,
    *,
    error: GitHubError | None = None,
    superseded: bool = False,
) -> str:
    """The check run says why there is no comment; the advisory stays on the record."""
    if superseded:
        status, conclusion = DeliberationStatus.SUPERSEDED, "cancelled"
        reason = "A newer review of this pull request was posted before this one could be."
    else:
        assert error is not None
        status, conclusion = DeliberationStatus.FAILED, "neutral"
        reason = (
            f"The council reached its verdict ({advisory.resolution.value}), but GitHub "
            f"would not take the advisory after {PUBLISH_TRIES} tries. "
            + explain_failure(error, delivery_id=record.key)
        )
    if record.check_run_id is not None:
        publisher = _publisher(deps, client)
        try:
            if superseded:
                await publisher.cancel(record.check_run_id, reason)
            else:
                output = CheckRunOutput(title="Advisory not posted", summary=reason)
                await publisher.complete(record.check_run_id, output, "neutral")
        except GitHubError as failed:
            log.warning("check_run_not_completed", deliberation_id=record.id, error=str(failed))
    await set_status(deps.db, record.id, status, conclusion=conclusion)
    log.warning("publish_abandoned", deliberation_id=record.id, reason=reason)
    return "superseded" if superseded else "abandoned"


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
