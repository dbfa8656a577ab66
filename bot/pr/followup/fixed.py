"""Fixed findings and their threads: a finding posted inline that this review no longer
raises and whose anchored line's text is gone from the diff was fixed by a push; its thread
is resolved where the credentials may (the App), else it gets "Fixed in <sha>." once."""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from datetime import UTC, datetime

import structlog

from bot.forge import Forge, ForgeError
from bot.forge.reviews import ReviewComment, ReviewThread
from bot.pr.followup.markers import marker_anchor, same_login
from bot.pr.followup.posting import Poster
from bot.pr.followup.state import FixedResult, PrState, read_threads
from bot.review.anchors import DiffLines
from bot.store.db import Database
from bot.store.findings import PrFinding, mark, pr_findings

__all__ = ["FIXED_REPLY", "close_fixed", "fixed_by_markers", "newly_fixed", "resolve_fixed"]

log = structlog.get_logger(__name__)

FIXED_REPLY = "Fixed in {sha}."
_FIXED_PREFIX = "Fixed in "


async def newly_fixed(
    db: Database | None,
    repo: str,
    pr: int,
    store: Mapping[str, PrFinding],
    raised: set[str],
    lines: DiffLines,
    head_sha: str,
) -> list[PrFinding]:
    """Open findings posted inline that this review does not raise and whose line is no
    longer in the diff with its text: a push fixed them (marked `fixed` at `head_sha`)."""
    if db is None:
        return []
    fixed = [
        row
        for fp, row in store.items()
        if row.status == "open"
        and row.review_comment_id is not None
        and fp not in raised
        and row.head_sha != head_sha
        and not lines.still_there(row)
    ]
    if fixed:
        await mark(db, repo, pr, [f.fingerprint for f in fixed], "fixed", fixed_sha=head_sha)
    return fixed


def fixed_by_markers(
    repo: str,
    pr: int,
    state: PrState,
    skip: set[str],
    lines: DiffLines,
    head_sha: str,
) -> list[PrFinding]:
    """Our comments the store does not know (a store that lasted one run: the Action's),
    not raised now, whose anchored line's text is gone from the diff: fixed at this head."""
    found = []
    for fp, c in state.ours.items():
        key = marker_anchor(c.body)
        if fp in state.store or fp in skip or key is None or lines.has_anchor(c.path, key):
            continue
        found.append(
            PrFinding(
                repo=repo,
                pr_number=pr,
                fingerprint=fp,
                path=c.path,
                line=c.line,
                title="",
                severity="",
                status="fixed",
                first_deliberation_id="",
                last_deliberation_id="",
                head_sha=None,
                fixed_sha=head_sha,
                review_comment_id=c.id,
                thread_node_id=None,
                updated_at=datetime.now(UTC),
            )
        )
    return found


async def close_fixed(
    poster: Poster, state: PrState, raised: set[str], dismissed: set[str], lines: DiffLines
) -> FixedResult:
    """The findings this head fixed, found (the store's, and our comments' markers) and
    their threads closed."""
    repo, pr, head_sha, db = poster.forge.full_name, poster.pr, poster.head_sha, poster.db
    fixed = await newly_fixed(db, repo, pr, state.store, raised, lines, head_sha)
    if db is not None:
        fixed = await pr_findings(db, repo, pr, status="fixed")
    fixed += fixed_by_markers(repo, pr, state, raised | dismissed, lines, head_sha)
    # Fixed by this head (here or by the re-review's tracking): a thread closed at an earlier
    # head and reopened by a person since is theirs to close.
    fixed = [
        f for f in fixed if f.review_comment_id is not None and f.fixed_sha in (None, head_sha)
    ]
    if not fixed:
        return FixedResult()
    return await resolve_fixed(
        poster.forge,
        pr,
        fixed,
        head_sha,
        bot_login=poster.bot_login,
        can_resolve_threads=poster.can_resolve_threads,
        comments=state.comments,
        threads=state.threads,
    )


async def resolve_fixed(
    forge: Forge,
    pr: int,
    fixed: Sequence[PrFinding],
    head_sha: str,
    *,
    bot_login: str,
    can_resolve_threads: bool,
    comments: Sequence[ReviewComment] | None = None,
    threads: Sequence[ReviewThread] | None = None,
) -> FixedResult:
    """For each fixed finding posted inline: resolve its thread where the credentials may
    (the App); else, or when the forge refuses (a workflow token), reply "Fixed in <sha>."
    in it once. A thread already resolved, or already replied to, is left as it is.
    `comments` and `threads`: the PR's, when the caller has read them already."""
    result = FixedResult()
    posted_on = [f for f in fixed if f.review_comment_id is not None]
    if not posted_on:
        return result
    if comments is None:
        comments = await forge.review_comments(pr)
    if threads is None:
        threads = await read_threads(forge, pr)
    by_comment = {t.first_comment_id: t for t in threads}
    replied = _replied_to(comments, bot_login)
    existing = {c.id for c in comments}
    may_resolve = can_resolve_threads
    for f in posted_on:
        comment_id = f.review_comment_id
        assert comment_id is not None
        if comment_id not in existing:  # deleted by someone: nothing to close
            continue
        thread = by_comment.get(comment_id)
        if (thread is not None and thread.is_resolved) or comment_id in replied:
            continue
        if may_resolve and thread is not None:
            if await _resolved(forge, thread):
                result.resolved += 1
                continue
            may_resolve = False  # FORBIDDEN once is FORBIDDEN for every thread
        if await _reply_fixed(forge, pr, comment_id, f.fixed_sha or head_sha):
            result.replied += 1
    return result


def _replied_to(comments: Sequence[ReviewComment], bot_login: str) -> set[int | None]:
    """The comments we already replied "Fixed in" to."""
    return {
        c.in_reply_to_id
        for c in comments
        if c.in_reply_to_id is not None
        and same_login(c.user, bot_login)
        and c.body.startswith(_FIXED_PREFIX)
    }


async def _resolved(forge: Forge, thread: ReviewThread) -> bool:
    try:
        return await forge.resolve_thread(thread.id)
    except ForgeError as error:
        log.warning("thread_not_resolved", thread=thread.id, error=str(error))
        return False


async def _reply_fixed(forge: Forge, pr: int, comment_id: int, sha: str) -> bool:
    try:
        await forge.reply_in_thread(pr, comment_id, FIXED_REPLY.format(sha=sha[:7]))
    except ForgeError as error:
        log.warning("fixed_reply_failed", comment_id=comment_id, error=str(error))
        return False
    return True
