"""One status on the head commit for one review, for the App and the Action: opened, kept
up to date, always completed - with the verdict, or with why there is none.

The forge's optional capabilities get their fallbacks here (`bot.forge`): no buttons, no
annotations (the findings are in the comment), `success` for a `neutral` conclusion.
"""

from __future__ import annotations

import asyncio
from dataclasses import dataclass, field

from bot.council.advisory import Advisory
from bot.council.engine import ProgressEvent
from bot.forge import Capabilities, PostedComment, StatusReport
from bot.pr.notes import convening, setup_note
from bot.render import conclusion_for, render_check_run
from bot.render.checks import CheckRunOutput, Conclusion, Gate, check_run_actions
from bot.review.setup import RepoSetup

__all__ = ["StatusRun", "settle", "with_heads"]


def settle(
    output: CheckRunOutput, conclusion: Conclusion, capabilities: Capabilities
) -> tuple[CheckRunOutput, Conclusion]:
    """The status as this forge can show it: annotations dropped and `neutral` said as
    `success` where it has neither (both advisory: neither blocks a merge)."""
    if not capabilities.annotations and output.annotations:
        output = output.model_copy(update={"annotations": []})
    if conclusion == "neutral" and not capabilities.neutral:
        conclusion = "success"
    return output, conclusion


def with_heads(output: CheckRunOutput, *heads: str | None) -> CheckRunOutput:
    """`output` with `heads` before its summary: why the comment is missing, the
    repository's config problems and persona files that did not load."""
    said = [h.strip() for h in heads if h and h.strip()]
    if not said:
        return output
    return output.model_copy(update={"summary": "\n\n".join([*said, output.summary])})


@dataclass
class StatusRun:
    """A review's one "Council" status: opened (or found again after a crash), kept up to
    date while the council works, always completed. The App and the Action alike; each
    completion applies the forge's fallbacks (`settle`, no buttons without `buttons`)."""

    report: StatusReport
    capabilities: Capabilities
    head_sha: str
    protocol: str
    details_url: str | None  # the transcript page, the workflow run; None: the forge's own
    gate: Gate = "verdict"
    check_run_id: int | None = None
    completed: bool = False
    _phases: list[str] = field(default_factory=list)
    _tasks: set[asyncio.Task[bool]] = field(default_factory=set)

    async def open(self, external_id: str, note: str, *, find: bool = False) -> int:
        """A new status, in progress, saying `note` (the repository's setup problems:
        `bot.pr.notes.setup_note`) at once; `find`: first look for ours from before a
        crash, by `external_id`."""
        found = self.check_run_id
        if found is None and find:
            found = await self.report.find(self.head_sha, external_id)
        if found is None:
            found = await self.report.create(
                self.head_sha,
                external_id=external_id,
                title="Council convening",
                summary=convening(self.protocol, note),
            )
        self.check_run_id = found
        return found

    def on_progress(self, event: ProgressEvent) -> None:
        """Engine progress -> a throttled summary (the report drops updates that come
        sooner than its interval after the last)."""
        if event.seat_id is not None or event.status != "started" or self.check_run_id is None:
            return
        self._phases.append(event.phase)
        summary = f"The council ({self.protocol}) is deliberating. Phases so far: " + " -> ".join(
            self._phases
        )
        task = asyncio.create_task(self.report.progress(self.check_run_id, summary))
        self._tasks.add(task)
        task.add_done_callback(self._tasks.discard)

    async def note(self, title: str, summary: str) -> None:
        """Said on the status while it stays in progress (a review waiting in a queue)."""
        if self.check_run_id is not None:
            await self.report.note(self.check_run_id, title, summary)

    async def verdict(
        self,
        advisory: Advisory,
        setup: RepoSetup,
        comment: PostedComment | None,
        *,
        note: str | None = None,
    ) -> Conclusion:
        """Complete with the verdict; `note` says why there is no comment when there is none."""
        gate = setup.config.gate
        url = comment.html_url if comment is not None else None
        output = render_check_run(advisory, gate=gate, comment_url=url)
        output = with_heads(output, f"**{note}**" if note else None, setup_note(setup))
        return await self.complete(output, conclusion_for(advisory, gate))

    async def without_verdict(self, advisory: Advisory, *, buttons: bool = True) -> Conclusion:
        """Nothing to review, or a failure: no verdict, which blocks under `gate: verdict`
        (`buttons`: offer the re-run buttons, where the forge has them)."""
        return await self.complete(
            render_check_run(advisory, gate=self.gate),
            conclusion_for(advisory, self.gate),
            buttons=buttons,
        )

    async def cancel(self, reason: str) -> None:
        if self.check_run_id is None or self.completed:
            return
        await self.report.cancel(self.check_run_id, reason)
        self.completed = True

    async def complete(
        self,
        output: CheckRunOutput,
        conclusion: Conclusion,
        *,
        fallback_url: str | None = None,
        buttons: bool = True,
    ) -> Conclusion:
        """Complete as this forge can show it; the details link is `details_url`, else
        `fallback_url` (the comment)."""
        assert self.check_run_id is not None
        output, conclusion = settle(output, conclusion, self.capabilities)
        actions = check_run_actions() if buttons and self.capabilities.buttons else ()
        await self.report.complete(
            self.check_run_id,
            output,
            conclusion,
            details_url=self.details_url or fallback_url,
            actions=actions,
        )
        self.completed = True
        return conclusion
