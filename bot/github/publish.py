"""Writing to a pull request: reactions, replies, the sticky comment, the check run.

Every call here creates content, so each goes through the installation's pacing (see
`pacing.py`); none of them retries on its own: the client's one retry loop (`retry.py`)
takes 5xx, lost connections, rate limits and a stale token for every call alike.
"""

from __future__ import annotations

import asyncio
import time
from collections.abc import Callable, Sequence
from datetime import UTC, datetime
from typing import Any, Literal, cast

from githubkit import Response
from githubkit.rest.paginator import Paginator
from githubkit.utils import UNSET
from githubkit_schemas.latest.models import (
    CheckRun,
    IssueComment,
    ReposOwnerRepoCommitsRefCheckRunsGetResponse200,
)

from bot.forge.errors import ForgeError, ForgeValidationError
from bot.forge.types import PostedComment
from bot.github.client import RepoClient
from bot.github.errors import github_errors
from bot.render.checks import (
    CHECK_RUN_NAME,
    Annotation,
    CheckRunAction,
    CheckRunOutput,
    Conclusion,
    annotation_batches,
    check_run_actions,
)
from bot.render.markdown import COMMENT_MARKER

__all__ = [
    "CheckRunPublisher",
    "PostedComment",
    "ReactionContent",
    "comment_too_long",
    "find_sticky_comment",
    "react",
    "reply",
    "upsert_sticky_comment",
]

OUTPUT_MAX = 65_535
PER_PAGE = 100

ReactionContent = Literal["+1", "-1", "laugh", "confused", "heart", "hooray", "rocket", "eyes"]


# -- comments and reactions ------------------------------------------------------------------


async def react(client: RepoClient, comment_id: int, content: ReactionContent = "eyes") -> None:
    with github_errors("react to a comment"):
        await client.rest.reactions.async_create_for_issue_comment(
            client.owner, client.name, comment_id, content=content
        )


async def reply(client: RepoClient, pr: int, body: str) -> PostedComment:
    """A new comment on the PR (help, a refusal): never the sticky one."""
    with github_errors("comment on the pull request"):
        response = await client.rest.issues.async_create_comment(
            client.owner, client.name, pr, body=body
        )
        comment = response.parsed_data
    return PostedComment(id=comment.id, html_url=comment.html_url)


def comment_too_long(error: ForgeError) -> bool:
    """GitHub's 422 for a comment body over its limit ("Body is too long (maximum is 65536
    characters)"): it counts differently from `len`, so a body we cut may still be refused."""
    return isinstance(error, ForgeValidationError) and "too long" in error.reason.lower()


async def find_sticky_comment(client: RepoClient, pr: int, app_login: str) -> PostedComment | None:
    """Our advisory comment: it carries the marker AND was written by the App itself.

    The marker alone proves nothing: anyone can paste it into a comment of their own.
    """
    with github_errors("list the pull request's comments"):
        pages: Paginator[IssueComment] = client.rest.paginate(
            client.rest.issues.async_list_comments,
            owner=client.owner,
            repo=client.name,
            issue_number=pr,
            per_page=PER_PAGE,
        )
        async for comment in pages:
            author = comment.user.login if comment.user else None
            if author == app_login and COMMENT_MARKER in (comment.body or ""):
                return PostedComment(id=comment.id, html_url=comment.html_url, created=False)
    return None


async def upsert_sticky_comment(
    client: RepoClient, pr: int, body: str, app_login: str
) -> PostedComment:
    """Update our advisory comment in place, or create it: never a second one."""
    if COMMENT_MARKER not in body:
        body = f"{COMMENT_MARKER}\n{body}"
    existing = await find_sticky_comment(client, pr, app_login)
    if existing is None:
        return await reply(client, pr, body)
    with github_errors("update the advisory comment"):
        response = await client.rest.issues.async_update_comment(
            client.owner, client.name, existing.id, body=body
        )
        comment = response.parsed_data
    return PostedComment(id=comment.id, html_url=comment.html_url, created=False)


# -- the check run ---------------------------------------------------------------------------


def _utcnow() -> datetime:
    return datetime.now(UTC)


def _clip(text: str, limit: int = OUTPUT_MAX) -> str:
    return text if len(text) <= limit else text[: limit - 1] + "…"


def _check_runs(
    response: Response[ReposOwnerRepoCommitsRefCheckRunsGetResponse200],
) -> list[CheckRun]:
    return response.parsed_data.check_runs


def _annotations(batch: Sequence[Annotation]) -> list[dict[str, Any]]:
    return [a.model_dump(exclude_none=True) for a in batch]


class CheckRunPublisher:
    """The "Council" check run on a head SHA: create, find again, progress, complete.

    Progress updates are expendable: one still on its way when the run is completed (a
    PATCH retrying through a storm) is cancelled, or it could land after the verdict and
    replace its title and summary."""

    def __init__(
        self,
        client: RepoClient,
        *,
        update_interval_s: float,
        name: str = CHECK_RUN_NAME,
        clock: Callable[[], float] = time.monotonic,
    ) -> None:
        self.client = client
        self.name = name
        self.update_interval_s = update_interval_s
        self._clock = clock
        self._last_update: dict[int, float] = {}
        self._titles: dict[int, str] = {}
        self._in_flight: dict[int, set[asyncio.Task[Any]]] = {}
        self._closed: set[int] = set()

    async def create(self, head_sha: str, *, external_id: str, title: str, summary: str) -> int:
        """A new run, `in_progress`; `external_id` finds it again after a crash."""
        c = self.client
        with github_errors("create the check run"):
            response = await c.rest.checks.async_create(
                c.owner,
                c.name,
                name=self.name,
                head_sha=head_sha,
                external_id=external_id,
                status="in_progress",
                started_at=_utcnow(),
                output={"title": _clip(title, 255), "summary": _clip(summary)},
            )
            run_id = response.parsed_data.id
        self._titles[run_id] = title
        self._last_update[run_id] = self._clock()
        return run_id

    async def find(self, head_sha: str, external_id: str) -> int | None:
        """Our run with this `external_id` on the SHA (every run, not just the latest)."""
        c = self.client
        with github_errors("list check runs"):
            pages: Paginator[CheckRun] = c.rest.paginate(
                c.rest.checks.async_list_for_ref,
                _check_runs,
                owner=c.owner,
                repo=c.name,
                ref=head_sha,
                check_name=self.name,
                # "latest" (the default) would hide a crashed worker's run behind a newer one.
                filter_="all",
                per_page=PER_PAGE,
                app_id=UNSET if c.app_id is None else c.app_id,
            )
            async for run in pages:
                if run.external_id == external_id:
                    return run.id
        return None

    async def progress(self, check_run_id: int, summary: str, *, title: str | None = None) -> bool:
        """Show the phase; at most one update per `update_interval_s` (False: skipped)."""
        now = self._clock()
        last = self._last_update.get(check_run_id)
        if check_run_id in self._closed or (
            last is not None and now - last < self.update_interval_s
        ):
            return False
        if title is not None:
            self._titles[check_run_id] = title
        output = {
            "title": _clip(self._titles.get(check_run_id, "The council is deliberating"), 255),
            "summary": _clip(summary),
        }
        task = asyncio.current_task()
        flying = self._in_flight.setdefault(check_run_id, set())
        if task is not None:
            flying.add(task)
        try:
            await self._update(check_run_id, "update the check run", output=output)
        finally:
            flying.discard(task)
        self._last_update[check_run_id] = self._clock()
        return True

    async def note(self, check_run_id: int, title: str, summary: str) -> None:
        """Say something on the run now, leaving it `in_progress`: the progress is over (any
        update still on its way is cancelled), this is what the run says until completed."""
        self._close(check_run_id)
        self._titles[check_run_id] = title
        output = {"title": _clip(title, 255), "summary": _clip(summary)}
        await self._update(check_run_id, "update the check run", output=output)
        self._last_update[check_run_id] = self._clock()

    async def complete(
        self,
        check_run_id: int,
        output: CheckRunOutput,
        conclusion: Conclusion,
        *,
        details_url: str | None = None,
        actions: Sequence[CheckRunAction] | None = None,
    ) -> None:
        """Complete the run. GitHub takes 50 annotations a request and appends each batch:
        all but the last go in updates first, so `completed` means everything is there.
        `actions`: the buttons, `check_run_actions()` unless given."""
        self._close(check_run_id)
        head = {"title": _clip(output.title, 255), "summary": output.summary}
        batches = annotation_batches(output.annotations) or [[]]
        for batch in batches[:-1]:
            await self._update(
                check_run_id,
                "add annotations",
                output={**head, "annotations": _annotations(batch)},
            )
        final: dict[str, Any] = dict(head)
        if output.text:
            final["text"] = output.text
        if batches[-1]:
            final["annotations"] = _annotations(batches[-1])
        fields: dict[str, Any] = {
            "status": "completed",
            "conclusion": conclusion,
            "completed_at": _utcnow(),
            "output": final,
            "actions": [
                a.model_dump() for a in (check_run_actions() if actions is None else actions)
            ],
        }
        if details_url:
            fields["details_url"] = details_url
        await self._update(check_run_id, "complete the check run", **fields)

    async def cancel(self, check_run_id: int, reason: str) -> None:
        self._close(check_run_id)
        await self._update(
            check_run_id,
            "cancel the check run",
            status="completed",
            conclusion="cancelled",
            completed_at=_utcnow(),
            output={"title": "Cancelled", "summary": _clip(reason)},
        )

    def _close(self, check_run_id: int) -> None:
        """No progress update of this run may land from now on."""
        self._closed.add(check_run_id)
        current = asyncio.current_task()
        for task in self._in_flight.pop(check_run_id, set()):
            if task is not current:
                task.cancel()

    async def _update(self, check_run_id: int, action: str, **fields: Any) -> None:
        c = self.client
        with github_errors(action):
            await c.rest.checks.async_update(c.owner, c.name, check_run_id, data=cast(Any, fields))
