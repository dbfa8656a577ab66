"""The check run's life: opened (or found again after a crash), kept up to date while the
council works, and always completed - with the verdict, or with why there is none.

A required check that stays `in_progress` blocks a merge for good, so every way a job can
end passes through here: published, nothing to review, stopped (cancel, supersede, job
timeout), failed. Only a worker shutdown leaves it open, because arq runs the job again
and it resumes from the ledger.
"""

from __future__ import annotations

from bot.council.advisory import Advisory, Resolution
from bot.council.request import ProgressEvent
from bot.metrics import OUTCOMES
from bot.pr.failures import explain_failure
from bot.pr.followup.tracked import carried_verdict
from bot.pr.status import StatusRun
from bot.queue.jobcontext import JobContext
from bot.queue.jobs import job_timeout_s
from bot.queue.links import transcript_url
from bot.render.checks import CheckRunOutput
from bot.render.conclusion import Conclusion, Gate, conclusion_for
from bot.store.deliberations import (
    DeliberationRecord,
    DeliberationStatus,
    record_publication,
    set_status,
)


class CheckRunLifecycle:
    """The App's side of a review's status (`bot.pr.status.StatusRun`): its id on the
    record, the wait for GitHub's rate limit, and every ending kept on the record."""

    def __init__(
        self, ctx: JobContext, record: DeliberationRecord, *, gate: Gate = "verdict"
    ) -> None:
        self.ctx = ctx
        self.record = record
        # The repository's gate once its configuration is read; until then the strict one.
        self.status = StatusRun(
            ctx.forge.status(update_interval_s=ctx.settings.check_update_interval_s),
            ctx.forge.capabilities,
            record.head_sha,
            record.protocol,
            # The transcript page when the web process serves it (COUNCIL_PUBLIC_URL).
            transcript_url(ctx.settings, record.id),
            gate=gate,
            check_run_id=record.check_run_id,
        )

    @property
    def check_run_id(self) -> int | None:
        return self.status.check_run_id

    @property
    def published(self) -> bool:
        """The check run says the verdict (or why there is none): leave it."""
        return self.status.completed

    @property
    def gate(self) -> Gate:
        return self.status.gate

    async def open(self, note: str = "", *, fresh: bool = False) -> int:
        """Ours from before a crash (stored, or found by external id), else a new one.
        `fresh`: the deliberation was just created, there is none to look for."""
        found = await self.status.open(self.record.id, note, find=not fresh)
        await record_publication(self.ctx.db, self.record.id, check_run_id=found)
        return found

    async def waiting(self, summary: str) -> None:
        """The review waits in the queue (GitHub's rate limit): said on the run, which
        stays `in_progress` until the job runs again."""
        await self.status.note("Waiting for GitHub", summary)

    def on_progress(self, event: ProgressEvent) -> None:
        self.status.on_progress(event)

    async def complete(
        self, output: CheckRunOutput, conclusion: Conclusion, *, details_url: str | None
    ) -> None:
        await self.status.complete(output, conclusion, fallback_url=details_url)

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
            await self.status.cancel(reason)
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
            await self.status.without_verdict(advisory, buttons=False)
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
