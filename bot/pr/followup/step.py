"""The follow-up step, the same for the App and the Action, run before the sticky comment is
written: findings dismissed by a person with write access dropped from the advisory (a
critical one stays, whoever dismissed it; the PR's author never dismisses one), new ones
posted as review comments (when the run asks for them), fixed threads closed. The App
resolves threads itself (`pull_requests: write`, see deploy/app.yml); the Action's token
replies "Fixed in <sha>." (`Capabilities.resolve_threads`).

Best effort: the forge failing here never keeps the advisory from being published; the
advisory is then published as the council wrote it.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field

import structlog

from bot.council.advisory import Advisory
from bot.council.schemas import Severity
from bot.forge import Forge, ForgeError, PullInfo
from bot.pr.followup.inline import publish_inline
from bot.review.anchors import DiffLines
from bot.store.db import Database
from bot.store.findings import pr_findings

__all__ = ["InlineRequest", "follow_up", "has_inline_history"]

log = structlog.get_logger(__name__)


@dataclass(frozen=True)
class InlineRequest:
    """From the prepared review: whether to post, from which severity, and the hunk lines
    (added and context) of the diff the review read (placements are kept to them)."""

    post: bool
    min_severity: Severity = "major"
    changed_lines: Mapping[str, Sequence[tuple[int, int]]] = field(default_factory=dict)
    pr_diff: str | None = None  # the PR's diff as the review read it; None: fetched here


async def has_inline_history(db: Database | None, repo: str, pr: int) -> bool:
    """An earlier run posted review comments here, or a person dismissed a finding (as
    far as the store knows: without one, nothing)."""
    if db is None:
        return False
    known = await pr_findings(db, repo, pr)
    return any(f.review_comment_id is not None or f.status == "dismissed" for f in known)


async def follow_up(
    forge: Forge,
    pull: PullInfo,
    advisory: Advisory,
    inline: InlineRequest,
    db: Database | None,
    *,
    bot_login: str,
) -> Advisory:
    """The advisory to publish, after the follow-up (as it was when the forge failed).
    Nothing is asked of the forge when the run posts nothing and nothing was posted on the
    pull request before."""
    if not inline.post and not await has_inline_history(db, forge.full_name, pull.number):
        return advisory
    try:
        text = inline.pr_diff
        if text is None:
            text = (await forge.diff(pull.number)).text
        lines = DiffLines.from_diff(text, inline.changed_lines)
        result = await publish_inline(
            forge,
            pull.number,
            pull.head_sha,
            advisory,
            lines,
            db,
            bot_login=bot_login,
            pr_author=pull.author_login,
            can_resolve_threads=forge.capabilities.resolve_threads,
            min_severity=inline.min_severity,
            post=inline.post,
        )
    except ForgeError as error:
        log.warning("inline_step_failed", pr=pull.number, error=str(error))
        return advisory
    return result.advisory
