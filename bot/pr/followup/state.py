"""What one follow-up reads of the pull request once (its review comments and threads, the
store's findings), and what it did (`InlineResult`)."""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field

import structlog

from bot.council.advisory import Advisory
from bot.forge import Forge, ForgeError
from bot.forge.reviews import ReviewComment, ReviewThread
from bot.pr.followup.markers import our_comments
from bot.store.db import Database
from bot.store.findings import PrFinding, pr_findings

__all__ = ["FixedResult", "InlineResult", "PrState", "read_state", "read_threads"]

log = structlog.get_logger(__name__)


@dataclass(frozen=True)
class PrState:
    """The pull request's review comments and threads, our findings' first comments by
    fingerprint, and the store's findings of the pull request by fingerprint."""

    comments: Sequence[ReviewComment]
    threads: Sequence[ReviewThread]
    ours: Mapping[str, ReviewComment]
    store: Mapping[str, PrFinding]

    def dismissed(self) -> set[str]:
        """Fingerprints the store has as dismissed."""
        return {fp for fp, row in self.store.items() if row.status == "dismissed"}


@dataclass
class FixedResult:
    resolved: int = 0  # threads resolved
    replied: int = 0  # "Fixed in <sha>." replies


@dataclass
class InlineResult:
    """What `publish_inline` did; `advisory` is the one to render (dismissed ones dropped,
    notes added)."""

    advisory: Advisory
    posted: int = 0  # comments posted by this review
    already: int = 0  # this advisory's findings already on the PR as review comments
    dismissed: int = 0  # findings of this advisory dropped: a person dismissed them
    # Critical findings of this advisory a person with write access dismissed, kept all the
    # same: (title, who dismissed it).
    kept_critical: list[tuple[str, str]] = field(default_factory=list)
    off_diff: int = 0  # from the severity up, anchored, but not on a line of the diff
    review_id: int | None = None
    fixed: FixedResult = field(default_factory=FixedResult)
    error: str | None = None  # why the review could not be posted


async def read_threads(forge: Forge, pr: int) -> list[ReviewThread]:
    try:
        return await forge.review_threads(pr)
    except ForgeError as error:  # no threads read: no dismissal seen, nothing resolved
        log.warning("review_threads_unreadable", error=str(error))
        return []


async def read_state(forge: Forge, pr: int, db: Database | None, bot_login: str) -> PrState:
    comments = await forge.review_comments(pr)
    threads = await read_threads(forge, pr)
    store = {f.fingerprint: f for f in await pr_findings(db, forge.full_name, pr)} if db else {}
    return PrState(comments, threads, our_comments(comments, bot_login), store)
