"""The check run's life: opened (or found again after a crash), kept up to date while the
council works, and always completed - with the verdict, or with why there is none.

A required check that stays `in_progress` blocks a merge for good, so every way a job can
end passes through here: published, nothing to review, stopped (cancel, supersede, job
timeout), failed. Only a worker shutdown leaves it open, because arq runs the job again
and it resumes from the ledger.
"""

from __future__ import annotations

import asyncio

from bot.metrics import OUTCOMES
from bot.pr.failures import explain_failure
from bot.pr.notes import convening
from bot.queue.jobcontext import JobContext
from bot.queue.jobs import job_timeout_s
from bot.queue.links import transcript_url
from bot.render import render_check_run
from bot.render.checks import CheckRunOutput
from bot.render.conclusion import Gate, conclusion_for
from bot.review import Advisory, ProgressEvent, Resolution
from bot.review.tracked import carried_verdict
from bot.store.records import DeliberationRecord, DeliberationStatus, record_publication, set_status


class CheckRunLifecycle:
    def __init__(
        self, ctx: JobContext, record: DeliberationRecord, *, gate: Gate = "verdict"
    ) -> None:
        self.ctx = ctx
        self.record = record
        # The repository's gate once its configuration is read; until then the strict one.
        self.gate: Gate = gate
        self.publisher = ctx.forge.status(update_interval_s=ctx.settings.check_update_interval_s)
        self.check_run_id: int | None = record.check_run_id  # set once opened
        self.published = False  # once true, the check run says the verdict: leave it
        self._progress_tasks: set[asyncio.Task[bool]] = set()
        self._phases: list[str] = []

    async def open(self, note: str = "", *, fresh: bool = False) -> int:
        """Ours from before a crash (stored, or found by external id), else a new one.
        `fresh`: the deliberation was just created, there is none to look for."""
        record = self.record
        found = record.check_run_id
        if found is None and not fresh:
            found = await self.publisher.find(record.head_sha, record.id)
        if found is None:
            # `note`: the repo's setup problems (bot.pr.notes.setup_note), said at once.
            summary = convening(record.protocol, note)
            found = await self.publisher.create(
                record.head_sha, external_id=record.id, title="Council convening", summary=summary
            )
        self.check_run_id = found
        await record_publication(self.ctx.db, record.id, check_run_id=found)
        return found

    async def waiting(self, summary: str) -> None:
        """The review waits in the queue (GitHub's rate limit): said on the run, which
        stays `in_progress` until the job runs again."""
        if self.check_run_id is not None:
            await self.publisher.note(self.check_run_id, "Waiting for GitHub", summary)

    def on_progress(self, event: ProgressEvent) -> None:
        """Engine progress -> a throttled summary (the publisher drops updates that come
        sooner than `check_update_interval_s` after the last)."""
        if event.seat_id is not None or event.status != "started" or self.check_run_id is None:
            return
        self._phases.append(event.phase)
        summary = (
            f"The council ({self.record.protocol}) is deliberating. Phases so far: "
            + " -> ".join(self._phases)
        )
        task = asyncio.create_task(self.publisher.progress(self.check_run_id, summary))
        self._progress_tasks.add(task)
        task.add_done_callback(self._progress_tasks.discard)

    async def complete(
        self, output: CheckRunOutput, conclusion: str, *, details_url: str | None
    ) -> None:
        assert self.check_run_id is not None
        await self.publisher.complete(
            self.check_run_id,
            output,
            conclusion,  # type: ignore[arg-type]
            # The transcript page when the web process serves it (COUNCIL_PUBLIC_URL).
            details_url=transcript_url(self.ctx.settings, self.record.id) or details_url,
        )
        self.published = True

    async def nothing_to_review(self, reason: str) -> None:
        """A head with no changed line to read costs no model call. It carries the pull
        request's last verdict when there is one (a merge of the base branch must not turn
        a rejection into a pass); without one it has no verdict, and says so."""
        record = self.record
        carried = await carried_verdict(
            self.ctx.db, record.repo, record.pr_number or 0, record.id, reason
        )
        if carried is None:
            advisory = self._without_verdict(Resolution.NOTHING_TO_REVIEW, reason)
            await self._conclude(advisory, DeliberationStatus.COMPLETED)
            return
        await self._conclude(
            carried, DeliberationStatus.COMPLETED, resolution=Resolution.NOTHING_TO_REVIEW
        )

    async def stopped(self) -> None:
        """Aborted (cancel, supersede), expired (the job timeout), or interrupted (the worker
        is shutting down: arq runs the job again and it resumes from the ledger)."""
        if self.published:
            return
        ctx = self.ctx
        reason = await ctx.deps.state.stop_reason(ctx.job_id)
        if reason is not None:
            superseded = reason.startswith("Superseded")
            status = DeliberationStatus.SUPERSEDED if superseded else DeliberationStatus.CANCELLED
            if self.check_run_id is not None:
                await self.publisher.cancel(self.check_run_id, reason)
            await set_status(
                ctx.db, self.record.id, status, resolution="CANCELLED", conclusion="cancelled"
            )
            OUTCOMES.labels(Resolution.CANCELLED.value).inc()
            ctx.log.info("deliberation_stopped", reason=reason)
            return
        if ctx.elapsed_s() < job_timeout_s(ctx.settings) - 1:
            ctx.log.info("deliberation_interrupted", note="the job runs again and resumes")
            return
        await self.failed("The deliberation ran past the job timeout.")

    async def failed(self, reason: str | BaseException) -> None:
        """`reason` is a sentence for people, or the exception that ended the job, which
        `explain_failure` turns into one (its detail belongs in the log, not the check)."""
        if self.published:
            return
        if isinstance(reason, BaseException):
            reason = explain_failure(reason, delivery_id=self.ctx.request.delivery_id)
        advisory = self._without_verdict(Resolution.FAILED, reason)
        await self._conclude(advisory, DeliberationStatus.FAILED)

    def _without_verdict(self, resolution: Resolution, reason: str) -> Advisory:
        record = self.record
        return Advisory(
            deliberation_id=record.id,
            protocol=record.protocol,
            topic=record.topic,
            resolution=resolution,
            reason=reason,
        )

    async def _conclude(
        self,
        advisory: Advisory,
        status: DeliberationStatus,
        *,
        resolution: Resolution | None = None,
    ) -> None:
        """Complete the check run with `advisory` under the repository's gate and keep the
        ending on the record (`resolution`: what the record says happened, when the
        advisory shown is a carried one)."""
        conclusion = conclusion_for(advisory, self.gate)
        if self.check_run_id is not None:
            await self.publisher.complete(
                self.check_run_id,
                render_check_run(advisory, gate=self.gate),
                conclusion,
                actions=(),
                details_url=transcript_url(self.ctx.settings, self.record.id),
            )
            self.published = True
        ended = resolution or advisory.resolution
        await set_status(
            self.ctx.db,
            self.record.id,
            status,
            resolution=ended.value,
            conclusion=conclusion,
            advisory_json=advisory.model_dump_json() if advisory.carried_from else None,
        )
        OUTCOMES.labels(ended.value).inc()
