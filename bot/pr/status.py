"""One status on the head commit for one review, as the Action keeps it: opened, kept up
to date, always completed - with the verdict, or with why there is none.

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
from bot.render.checks import CHECK_RUN_ACTIONS, CheckRunOutput, Conclusion, Gate
from bot.review.setup import RepoSetup

__all__ = ["StatusRun", "settle"]


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


@dataclass
class StatusRun:
    """The run's one "Council" status: opened, kept up to date, always completed."""

    report: StatusReport
    capabilities: Capabilities
    head_sha: str
    protocol: str
    details_url: str | None
    gate: Gate = "verdict"
    check_run_id: int | None = None
    completed: bool = False
    _phases: list[str] = field(default_factory=list)
    _tasks: set[asyncio.Task[bool]] = field(default_factory=set)

    async def open(self, external_id: str, setup: RepoSetup) -> int:
        self.check_run_id = await self.report.create(
            self.head_sha,
            external_id=external_id,
            title="Council convening",
            summary=convening(self.protocol, setup_note(setup)),
        )
        return self.check_run_id

    def on_progress(self, event: ProgressEvent) -> None:
        if event.seat_id is not None or event.status != "started" or self.check_run_id is None:
            return
        self._phases.append(event.phase)
        summary = f"The council ({self.protocol}) is deliberating. Phases so far: " + " -> ".join(
            self._phases
        )
        task = asyncio.create_task(self.report.progress(self.check_run_id, summary))
        self._tasks.add(task)
        task.add_done_callback(self._tasks.discard)

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
        # Why the comment is missing; config problems and persona files that did not load.
        heads = [n.strip() for n in (f"**{note}**" if note else "", setup_note(setup)) if n]
        if heads:
            output = output.model_copy(update={"summary": "\n\n".join([*heads, output.summary])})
        return await self._complete(output, conclusion_for(advisory, gate))

    async def without_verdict(self, advisory: Advisory) -> None:
        """Nothing to review, or a failure: no verdict, which blocks under `gate: verdict`."""
        await self._complete(
            render_check_run(advisory, gate=self.gate), conclusion_for(advisory, self.gate)
        )

    async def cancel(self, reason: str) -> None:
        if self.check_run_id is None or self.completed:
            return
        await self.report.cancel(self.check_run_id, reason)
        self.completed = True

    async def _complete(self, output: CheckRunOutput, conclusion: Conclusion) -> Conclusion:
        assert self.check_run_id is not None
        output, conclusion = settle(output, conclusion, self.capabilities)
        actions = CHECK_RUN_ACTIONS if self.capabilities.buttons else ()
        await self.report.complete(
            self.check_run_id, output, conclusion, details_url=self.details_url, actions=actions
        )
        self.completed = True
        return conclusion
