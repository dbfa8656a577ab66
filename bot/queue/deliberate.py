"""The `deliberate` job: from a trigger on a pull request to one comment and one check run.

admission -> record -> check run -> `bot.review` (context, seats, engine) -> publishing.
Every step that costs money is in the ledger, so a job re-run after a crash finds its
deliberation (by job id), its check run (by external id) and its sticky comment (by marker
and login), and pays only for the calls it had not finished.
"""

from __future__ import annotations

import asyncio
import time
from datetime import UTC, datetime

from arq.worker import Retry

from bot.council.advisory import Resolution
from bot.forge import ForgeError
from bot.metrics import DELIBERATION_SECONDS, GITHUB_REVIEWS_WAITING
from bot.pr.admission import Admitted, Skip
from bot.pr.books import record_request, resumes
from bot.pr.followup.step import InlineRequest
from bot.pr.followup.tracked import incremental_base, track_findings
from bot.pr.notes import setup_note
from bot.pr.review import available_models, open_record, review_options, without_verdict
from bot.queue.admission import admit, reply_failure
from bot.queue.checkrun import CheckRunLifecycle
from bot.queue.deps import WorkerDeps
from bot.queue.jobcontext import AUTOMATIC, JobContext
from bot.queue.jobs import JobRequest
from bot.queue.lease import Lease, LeaseLost
from bot.queue.publishing import publish
from bot.queue.spend import DailyCapReached, cost_cap
from bot.review.assemble import PreparedReview, prepare_review
from bot.review.inputs import review_topic
from bot.review.local import NothingToReview
from bot.review.run import deliberate, registry_preflight
from bot.review.setup import RepoSetup
from bot.store.deliberations import (
    DeliberationRecord,
    DeliberationStatus,
    find_deliberation,
    reviewed_at,
    running_for_pr,
)


class DeliberationJob:
    def __init__(self, deps: WorkerDeps, request: JobRequest, job_id: str) -> None:
        self.deps = deps
        self.request = request
        self.job_id = job_id

    async def run(self) -> str:
        if self.request.installation_id is None:
            return "ignored: no installation"
        async with self.deps.connect(self.request.installation_id, self.request.repo) as repo:
            ctx = JobContext(self.deps, self.request, self.job_id, repo.forge, repo.reads)
            # Known low before any call: wait without spending one (but say it on the
            # check run of a deliberation this job resumes).
            await self._wait_for_github(ctx, None)
            return await self._run(ctx)

    async def _wait_for_github(self, ctx: JobContext, lifecycle: CheckRunLifecycle | None) -> bool:
        """Back to the queue until the rate limit resets, while fewer than
        `COUNCIL_GITHUB_RESERVE` requests are left for the installation: a review needs
        ~15, and one that runs out half-way fails. A wait is not one of the job's tries;
        after `COUNCIL_GITHUB_MAX_WAITS` of them the review stops, saying so on its check
        run (False; before the check run is open this returns True, so that it opens)."""
        assert ctx.request.installation_id is not None
        settings = ctx.settings
        watch = ctx.deps.github.rate_watch
        low = await watch.wait_s(ctx.request.installation_id, settings.github_reserve)
        if low is None:
            return True
        wait_s, reset = low
        if await ctx.deps.state.waits(self.job_id) >= settings.github_max_waits:
            if lifecycle is None:
                return True
            ctx.log.warning("github_rate_limit_gave_up", waits=settings.github_max_waits)
            await lifecycle.failed(
                f"GitHub's rate limit for this installation stayed below "
                f"{settings.github_reserve} requests through {settings.github_max_waits} "
                "resets, so the review stopped without deliberating. Comment /council to "
                "try again."
            )
            return False
        until = datetime.fromtimestamp(reset, UTC).strftime("%H:%M")
        text = f"The review is waiting for GitHub's rate limit until {until} UTC."
        GITHUB_REVIEWS_WAITING.inc()
        ctx.log.warning("github_rate_limit_low", wait_s=round(wait_s, 1), until=until)
        try:
            if lifecycle is None:
                started = await find_deliberation(ctx.db, ctx.key)
                if started is not None and started.check_run_id is not None:
                    lifecycle = CheckRunLifecycle(ctx, started)
            if lifecycle is not None:
                await lifecycle.waiting(text)
        except ForgeError:  # saying so is worth a request, not a failed review
            ctx.log.warning("rate_limit_note_failed")
        await ctx.deps.state.waited(self.job_id, wait_s)
        raise Retry(defer=wait_s)

    async def _run(self, ctx: JobContext) -> str:
        # A deliberation this job (or the one it resumes) already started.
        started = await find_deliberation(ctx.db, ctx.key)
        running = started if started and started.status == DeliberationStatus.RUNNING else None
        try:
            admitted = await admit(ctx)
        except Skip as skip:
            ctx.log.info("job_skipped", reason=str(skip))
            if running is not None:  # its check run must not stay in progress
                await CheckRunLifecycle(ctx, running).failed(f"It no longer applies: {skip}.")
            return f"skipped: {skip}"
        # Only now the repo's personas (a directory listing and a read per file): most
        # label and push events are skipped by admission and need none of it.
        try:
            setup = await ctx.reads.setup(admitted.pull, admitted.config_text)
        except ForgeError as error:  # nothing is open yet: say it where it was asked
            ctx.log.exception("personas_unreadable")
            await reply_failure(ctx, error)
            return "failed: the repository's personas could not be read"
        return await self._deliberate(ctx, admitted, setup, resuming=running is not None)

    async def _deliberate(
        self, ctx: JobContext, admitted: Admitted, setup: RepoSetup, *, resuming: bool
    ) -> str:
        pull = admitted.pull
        # Label and push reviews run once per head SHA, but a review resuming is its own.
        if (
            not resuming
            and ctx.automatic
            and await reviewed_at(ctx.db, ctx.request.repo, pull.number, pull.head_sha, AUTOMATIC)
        ):
            ctx.log.info("job_skipped", reason="this head SHA was already reviewed")
            return "skipped: already reviewed at this head SHA"
        protocol = admitted.protocol_for(setup.config, ctx.request.trigger)
        record = await open_record(
            ctx.db,
            key=ctx.key,
            repo=ctx.request.repo,
            pull=pull,
            trigger=ctx.request.trigger,
            protocol=protocol,
            topic=review_topic(ctx.request.question),
            installation_id=ctx.request.installation_id,
        )
        if record.status != DeliberationStatus.RUNNING.value:
            return f"already {record.status}"
        lease = Lease(
            ctx.deps.redis,
            ctx.settings.key_prefix,
            record.id,
            ttl_s=ctx.settings.lease_ttl_s,
            renew_s=ctx.settings.lease_renew_s,
        )
        if not await lease.acquire():
            ctx.log.info("job_skipped", reason="another worker is running this deliberation")
            return "skipped: running on another worker"
        keeper = asyncio.create_task(lease.keep(_current_task()))
        try:
            return await self._claimed(ctx, admitted, setup, record, lease, fresh=not resuming)
        finally:
            keeper.cancel()
            await lease.release()

    async def _claimed(
        self,
        ctx: JobContext,
        admitted: Admitted,
        setup: RepoSetup,
        record: DeliberationRecord,
        lease: Lease,
        *,
        fresh: bool = False,
    ) -> str:
        """`fresh`: the deliberation was created by this job just now, so no check run of
        it can exist yet (one resumed may have one that was never recorded)."""
        await record_request(
            ctx.db, record.id, job_id=ctx.job_id, request=ctx.request.model_dump(mode="json")
        )
        if await resumes(ctx.db, record.id) > ctx.settings.max_resumes:
            lifecycle = CheckRunLifecycle(ctx, record, gate=setup.config.gate)
            await lifecycle.open(setup_note(setup))
            await lifecycle.failed(
                f"The deliberation was interrupted {ctx.settings.max_resumes + 1} times and "
                "is not resumed again; comment /council to start a new one."
            )
            return "failed: not resumed again"
        await self._supersede(ctx, record)
        lifecycle = CheckRunLifecycle(ctx, record, gate=setup.config.gate)
        try:
            await lifecycle.open(setup_note(setup), fresh=fresh)
            if not await self._wait_for_github(ctx, lifecycle):
                return "failed: GitHub's rate limit stayed low"
            return await self._review(ctx, lifecycle, admitted, setup, lease)
        except Retry:  # waiting for GitHub: the check run stays open, the job comes back
            raise
        except asyncio.CancelledError:
            if lease.lost:  # another worker has it now; the check run is its to finish
                ctx.log.warning("deliberation_handed_over")
                return "handed over"
            # Cancel, a newer push, or the job timeout: the check run must say which.
            await lifecycle.stopped()
            raise
        except LeaseLost:
            ctx.log.warning("deliberation_handed_over")
            return "handed over"
        except Exception as error:  # the check run must never stay in_progress
            ctx.log.exception("deliberation_failed")
            await lifecycle.failed(error)
            await reply_failure(ctx, error)  # a commenter hears of it on the PR too
            return "failed"

    async def _review(
        self,
        ctx: JobContext,
        lifecycle: CheckRunLifecycle,
        admitted: Admitted,
        setup: RepoSetup,
        lease: Lease,
    ) -> str:
        record = lifecycle.record
        try:
            cap = await cost_cap(ctx, setup.config.max_cost_usd)
        except DailyCapReached as spent:  # said on the PR, before any GitHub read or call
            stopped = without_verdict(
                record.id, record.protocol, record.topic, Resolution.COST_LIMIT, str(spent)
            )
            await publish(ctx, lifecycle, admitted.pull, setup, stopped, "general")
            return stopped.resolution.value
        try:
            prepared = await self._prepare(ctx, admitted, setup, record)
        except NothingToReview as nothing:
            ctx.log.info("nothing_to_review", reason=nothing.reason)
            await lifecycle.nothing_to_review(f"{nothing.compared}: {nothing.reason}")
            return Resolution.NOTHING_TO_REVIEW.value
        started = time.monotonic()
        advisory = await deliberate(
            prepared,
            ctx.settings,
            deliberation_id=record.id,
            providers=ctx.deps.providers,
            db=ctx.db,
            max_cost_usd=cap,
            on_progress=lifecycle.on_progress,
            fence=lease.check,
            preflight=registry_preflight(ctx.deps.providers),
        )
        DELIBERATION_SECONDS.labels(record.protocol).observe(time.monotonic() - started)
        # Every raised finding by fingerprint; a re-review's fixed, still open and new.
        advisory = await track_findings(
            ctx.db,
            record.repo,
            admitted.pull.number,
            record.id,
            record.head_sha,
            prepared,
            advisory,
        )
        inline = InlineRequest(
            post=prepared.inline,
            min_severity=setup.config.inline_min_severity,
            changed_lines=prepared.built.hunk_lines,
            pr_diff=prepared.pr_diff,
        )
        await publish(
            ctx, lifecycle, admitted.pull, setup, advisory, prepared.task_type, inline=inline
        )
        return advisory.resolution.value

    async def _prepare(
        self, ctx: JobContext, admitted: Admitted, setup: RepoSetup, record: DeliberationRecord
    ) -> PreparedReview:
        options = review_options(ctx.request, record.protocol, record.topic)
        available = await available_models(setup, ctx.deps.providers)
        # A push to a reviewed PR: the new commits only (bot.review.rereview).
        base = await incremental_base(
            ctx.db,
            ctx.request.repo,
            admitted.pull.number,
            admitted.pull.head_sha,
            trigger=ctx.request.trigger,
            enabled=setup.config.incremental_reviews,
        )
        source = ctx.reads.source(
            admitted.pull,
            since=base.since if base is not None else None,
            open_findings=base.open_findings if base is not None else (),
        )
        return await prepare_review(source, setup, ctx.settings, options, available=available)

    async def _supersede(self, ctx: JobContext, record: DeliberationRecord) -> None:
        """A newer head SHA makes older running deliberations on the PR moot."""
        for other in await running_for_pr(ctx.db, record.repo, record.pr_number or 0):
            if other.id != record.id and other.head_sha != record.head_sha:
                await ctx.deps.state.request_stop(
                    other.key, f"Superseded by a newer push ({record.head_sha[:7]})."
                )


def _current_task() -> asyncio.Task[object]:
    task = asyncio.current_task()
    assert task is not None  # a job always runs in a task
    return task
