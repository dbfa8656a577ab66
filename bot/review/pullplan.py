"""What of a pull request a review reads: its whole diff, or for a push to a reviewed pull
request the new commits' hunks in it (bot.review.rereview), and what the advisory says of
it (bot.council.scope).

One request more for a re-review (the comparison, whose commits also give the new commits'
messages, so the PR's commit list is not read) and none for a full review, through the
forge (`bot.forge.Forge`); a diff the forge refused comes rebuilt from its files
(`PullDiff.rebuilt_from_files`).
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass, field
from typing import TYPE_CHECKING

from bot.context import clean_untrusted
from bot.context.diff import nothing_to_review
from bot.council.scope import LargeDiff, ReviewScope, SkippedFile
from bot.review.local import NothingToReview
from bot.review.rereview import (
    BASE_MERGE_ONLY,
    FORCE_PUSHED,
    OPEN_FINDINGS_KIND,
    FindingTracking,
    added_lines,
    open_findings_text,
    removed_lines,
    restrict,
    touched_files,
)

if TYPE_CHECKING:
    from bot.forge import Forge, PullDiff, PullInfo
    from bot.store.findings import PrFinding

__all__ = ["PullPlan", "large_diff", "plan_pull"]

PUSH_MORE = "push a commit that changes the pull request's own lines, or comment /council"


@dataclass
class PullPlan:
    text: str  # the diff the council reads
    tracking: FindingTracking
    scope: ReviewScope | None = None
    commit_messages: list[str] | None = None  # None: the PR's (read by the source)
    extra: list[tuple[str, str, str]] = field(default_factory=list)


def large_diff(diff: PullDiff) -> LargeDiff | None:
    """The advisory's account of a diff built from the files API (None: the forge gave it whole)."""
    if not diff.rebuilt_from_files:
        return None
    return LargeDiff(
        refused=diff.refused or "more than 300 files or 20,000 lines",
        files=diff.listed,
        capped=diff.capped,
        skipped=[
            SkippedFile(path=clean_untrusted(path), reason=why)
            for path, why in diff.skipped.items()
        ],
    )


async def plan_pull(
    forge: Forge,
    pull: PullInfo,
    diff: PullDiff,
    since: str | None,
    open_findings: Sequence[PrFinding],
) -> PullPlan:
    """The whole diff, unless `since` (the last advisory's head) is still an ancestor of
    the head: then only the new commits' hunks that are in the PR's diff. `NothingToReview`
    when the new commits add nothing of the PR's own (a merge of the base branch)."""
    large = large_diff(diff)
    full = PullPlan(
        diff.text,
        FindingTracking(added=added_lines(diff.text)),
        ReviewScope(large_diff=large) if large is not None else None,
    )
    if since is None or since == pull.head_sha:
        return full
    comparison = await forge.compare(since, pull.head_sha)
    if comparison.status != "ahead":
        # Rewritten (a force-push: diverged, behind, or the old commit is gone): all of it.
        reason = FORCE_PUSHED.format(sha=since[:7])
        full.scope = ReviewScope(large_diff=large, full_review_reason=reason)
        return full
    compare_diff = comparison.diff
    text = restrict(compare_diff, diff.text)
    compared = f"{since[:7]}..{pull.head_sha[:7]} of #{pull.number}"
    if nothing_to_review(text) is not None:
        raise NothingToReview(BASE_MERGE_ONLY, compared, PUSH_MORE)
    from bot.council.scope import Rereview

    tracking = FindingTracking(
        added=added_lines(text),
        since=since,
        commits=comparison.ahead_by,
        open_before=list(open_findings),
        removed=removed_lines(compare_diff),
        touched=touched_files(compare_diff),
    )
    extra = []
    if open_findings:
        extra.append(
            (
                OPEN_FINDINGS_KIND,
                f"re-review of {comparison.ahead_by} new commit(s) since {since[:7]}",
                open_findings_text(open_findings, since),
            )
        )
    scope = ReviewScope(
        large_diff=large, rereview=Rereview(since=since, commits=comparison.ahead_by)
    )
    return PullPlan(text, tracking, scope, comparison.commit_messages, extra)
