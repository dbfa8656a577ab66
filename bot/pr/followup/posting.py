"""Which findings are posted, and posting them: from the severity up, not on the pull
request yet, on lines of the diff (at most `MAX_COMMENTS`), as ONE review that only
comments; then the store learns each comment's id and thread."""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass

import structlog

from bot.council.advisory import SEVERITY_ORDER, MergedFinding
from bot.council.schemas import Severity
from bot.forge import Forge, ForgeError
from bot.forge.reviews import LineComment
from bot.pr.followup.markers import comment_body, our_comments
from bot.pr.followup.state import InlineResult, read_threads
from bot.review.anchors import DiffLines, anchor_key
from bot.store.db import Database
from bot.store.findings import RaisedFinding, posted, record_raised

__all__ = ["MAX_COMMENTS", "Placed", "Poster", "choose"]

log = structlog.get_logger(__name__)

MAX_COMMENTS = 25  # per review: more than this on one PR is noise, the sticky lists the rest

# A finding to post, its fingerprint, and its (start_line or None, line) in the diff.
Placed = tuple[MergedFinding, str, tuple[int | None, int]]


def choose(
    kept: Sequence[tuple[MergedFinding, str]],
    on_pr: set[str],
    lines: DiffLines,
    min_severity: Severity,
    result: InlineResult,
) -> list[Placed]:
    """The findings to post, placed; counts those already on the PR and those off the diff
    in `result`."""
    wanted: list[Placed] = []
    for f, fp in kept:
        if SEVERITY_ORDER[f.severity] > SEVERITY_ORDER[min_severity] or f.start_line is None:
            continue
        if fp in on_pr:
            result.already += 1
            continue
        placed = None if f.outside_diff else lines.placement(f.path, f.start_line, f.end_line)
        if placed is None:
            result.off_diff += 1
            continue
        wanted.append((f, fp, placed))
    return wanted


def _line_comments(wanted: Sequence[Placed], lines: DiffLines) -> list[LineComment]:
    comments = []
    for f, fp, (start, line) in wanted:
        # A suggested change replaces the lines commented on: only when they are all of them.
        whole = (line if start is None else start, line) == (
            f.start_line,
            f.end_line or f.start_line,
        )
        anchor = anchor_key(f.path, lines.line(f.path, f.start_line))
        body = comment_body(f, fp, suggestion=whole, anchor=anchor)
        comments.append(LineComment(path=f.path, line=line, body=body, start_line=start))
    return comments


def _review_body(n: int) -> str:
    return (
        f"**PR Council**: {n} finding{'s' if n != 1 else ''} of the council's advisory on "
        f"{'its line' if n == 1 else 'their lines'}. The advisory itself is the council's "
        "comment on this pull request; the council advises, people decide."
    )


@dataclass(frozen=True)
class Poster:
    """Who posts where: the forge, the pull request at its head, the store (None: none),
    the bot's login, and whether its credentials may resolve threads."""

    forge: Forge
    pr: int
    head_sha: str
    db: Database | None
    bot_login: str
    can_resolve_threads: bool

    async def post(self, wanted: Sequence[Placed], lines: DiffLines, result: InlineResult) -> None:
        """`wanted` as one review; a refusal is in `result.error`, not raised."""
        comments = _line_comments(wanted, lines)
        try:
            result.review_id = await self.forge.post_review(
                self.pr,
                commit_id=self.head_sha,
                body=_review_body(len(comments)),
                comments=comments,
            )
        except ForgeError as error:
            log.warning("inline_review_refused", pr=self.pr, error=str(error))
            result.error = str(error.reason)
            return
        result.posted = len(comments)
        if self.db is not None:
            await self._record(self.db, wanted, result.advisory.deliberation_id)

    async def _record(self, db: Database, wanted: Sequence[Placed], deliberation: str) -> None:
        """The findings raised, and each posted one's comment id and thread."""
        repo, pr = self.forge.full_name, self.pr
        raised = [
            RaisedFinding(
                fingerprint=fp, path=f.path, line=f.start_line, title=f.title, severity=f.severity
            )
            for f, fp, _ in wanted
        ]
        await record_raised(db, repo, pr, deliberation, self.head_sha, raised)
        try:
            mine = our_comments(await self.forge.review_comments(pr), self.bot_login)
            threads = (
                {t.first_comment_id: t.id for t in await read_threads(self.forge, pr)}
                if self.can_resolve_threads
                else {}
            )
        except ForgeError as error:
            log.warning("inline_comments_not_recorded", error=str(error))
            return
        for _, fp, _ in wanted:
            found = mine.get(fp)
            if found is not None:
                await posted(
                    db,
                    repo,
                    pr,
                    fp,
                    review_comment_id=found.id,
                    thread_node_id=threads.get(found.id),
                )
