"""Posting from a workflow run: the App's sticky comment and "Council" check run, written
with the workflow's token through `bot.github.publish`, rendered by `bot.render` exactly
as the App renders them; only the check run's details link differs (the workflow run).

There is no Redis to hold a lock across the comment's look-up and write: the workflow's
`concurrency` group (one run per pull request) serialises them instead. There is no queue
to post a refused comment later either: the check run completes with the verdict anyway
(within `COMMENT_WAIT_S` of the advisory), saying why the comment is missing.
"""

from __future__ import annotations

import asyncio
from dataclasses import dataclass, field

from bot.github.client import RepoClient
from bot.github.errors import GitHubError
from bot.github.publish import (
    CheckRunPublisher,
    PostedComment,
    comment_too_long,
    upsert_sticky_comment,
)
from bot.queue.problems import setup_note
from bot.render import conclusion_for, render_check_run, render_comment
from bot.render.checks import CheckRunOutput, Conclusion, Gate
from bot.render.markdown import comment_options
from bot.review import Advisory, ProgressEvent, Resolution
from bot.review.setup import RepoSetup

__all__ = ["ActionCheckRun", "post_advisory_comment"]

COMMENT_MAX_CHARS = 65_000
COMMENT_MIN_CHARS = 1_000
# How long the comment may take before the check run completes without it.
COMMENT_WAIT_S = 25.0


async def post_advisory_comment(
    client: RepoClient, pr: int, advisory: Advisory, setup: RepoSetup, login: str
) -> PostedComment:
    """The sticky comment (updated in place, never a second one), rendered shorter while
    GitHub refuses it as too long."""
    options = comment_options(setup.config).model_copy(update={"gate": setup.config.gate})
    limit = COMMENT_MAX_CHARS
    while True:
        body = render_comment(advisory, max_chars=limit, repo=client.full_name, options=options)
        try:
            return await upsert_sticky_comment(client, pr, body, login)
        except GitHubError as error:
            if not comment_too_long(error) or limit <= COMMENT_MIN_CHARS:
                raise
            limit = max(COMMENT_MIN_CHARS, min(limit, len(body)) // 2)


@dataclass
class ActionCheckRun:
    """The run's one "Council" check run: opened, kept up to date, always completed."""

    publisher: CheckRunPublisher
    head_sha: str
    protocol: str
    details_url: str | None
    gate: Gate = "verdict"
    check_run_id: int | None = None
    completed: bool = False
    _phases: list[str] = field(default_factory=list)
    _tasks: set[asyncio.Task[bool]] = field(default_factory=set)

    async def open(self, external_id: str, setup: RepoSetup) -> int:
        self.check_run_id = await self.publisher.create(
            self.head_sha,
            external_id=external_id,
            title="Council convening",
            summary=f"The council ({self.protocol}) is convening.{setup_note(setup)}",
        )
        return self.check_run_id

    def on_progress(self, event: ProgressEvent) -> None:
        if event.seat_id is not None or event.status != "started" or self.check_run_id is None:
            return
        self._phases.append(event.phase)
        summary = f"The council ({self.protocol}) is deliberating. Phases so far: " + " -> ".join(
            self._phases
        )
        task = asyncio.create_task(self.publisher.progress(self.check_run_id, summary))
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
        conclusion = conclusion_for(advisory, gate)
        await self._complete(output, conclusion)
        return conclusion

    async def without_verdict(self, advisory: Advisory) -> None:
        """Nothing to review, or a failure: no verdict, which blocks under `gate: verdict`."""
        await self._complete(
            render_check_run(advisory, gate=self.gate), conclusion_for(advisory, self.gate)
        )

    async def cancel(self, reason: str) -> None:
        if self.check_run_id is None or self.completed:
            return
        await self.publisher.cancel(self.check_run_id, reason)
        self.completed = True

    async def _complete(self, output: CheckRunOutput, conclusion: Conclusion) -> None:
        assert self.check_run_id is not None
        # No buttons: a workflow run cannot answer them (the App's worker does).
        await self.publisher.complete(
            self.check_run_id, output, conclusion, details_url=self.details_url, actions=()
        )
        self.completed = True


def without_verdict(
    deliberation_id: str, protocol: str, topic: str, resolution: Resolution, reason: str
) -> Advisory:
    return Advisory(
        deliberation_id=deliberation_id,
        protocol=protocol,
        topic=topic,
        resolution=resolution,
        reason=reason,
    )
