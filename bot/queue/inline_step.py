"""The App's inline step, run by `publishing.publish` before the sticky comment is written:
findings dismissed by a person with write access dropped from the advisory (a critical one
stays, whoever dismissed it; the PR's author never dismisses one: `bot.review.inline`), new
ones posted as review comments (when the run asks for them), fixed threads resolved. The App
resolves threads itself (`pull_requests: write`, see deploy/app.yml).

Best effort: GitHub failing here never keeps the advisory from being published; the
advisory is then published as the council wrote it.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field

import structlog

from bot.forge.errors import ForgeError
from bot.github.fetch import PullInfo
from bot.github.forge import GitHubForge
from bot.queue.jobcontext import JobContext
from bot.review import Advisory
from bot.review.inline import DiffLines, Severity, publish_inline
from bot.store.findings import pr_findings

__all__ = ["InlineRequest", "inline_step"]

log = structlog.get_logger(__name__)


@dataclass(frozen=True)
class InlineRequest:
    """From the prepared review: whether to post, from which severity, and the hunk lines
    (added and context) of the diff the review read (placements are kept to them)."""

    post: bool
    min_severity: Severity = "major"
    changed_lines: Mapping[str, Sequence[tuple[int, int]]] = field(default_factory=dict)
    pr_diff: str | None = None  # the PR's diff as the review read it; None: fetched here


async def inline_step(
    ctx: JobContext, pull: PullInfo, advisory: Advisory, inline: InlineRequest
) -> Advisory:
    if not inline.post and not await _has_inline_history(ctx, pull.number):
        return advisory  # nothing to post, nothing posted earlier: no request spent
    # Review comments are not behind the forge seam yet: they take GitHub's client.
    assert isinstance(ctx.forge, GitHubForge)
    try:
        text = inline.pr_diff
        if text is None:
            text = (await ctx.forge.diff(pull.number)).text
        lines = DiffLines.from_diff(text, inline.changed_lines)
        result = await publish_inline(
            ctx.forge.client,
            pull.number,
            pull.head_sha,
            advisory,
            lines,
            ctx.db,
            bot_login=await ctx.deps.github.app_login(),
            pr_author=pull.author_login,
            can_resolve_threads=True,
            min_severity=inline.min_severity,
            post=inline.post,
        )
    except ForgeError as error:
        log.warning("inline_step_failed", pr=pull.number, error=str(error))
        return advisory
    return result.advisory


async def _has_inline_history(ctx: JobContext, pr: int) -> bool:
    """An earlier run posted review comments here, or a person dismissed a finding."""
    known = await pr_findings(ctx.db, ctx.request.repo, pr)
    return any(f.review_comment_id is not None or f.status == "dismissed" for f in known)
