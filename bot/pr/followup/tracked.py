"""A pull request's findings across its reviews, in the store (bot.store.findings).

Before a review: whether a push is reviewed incrementally (`incremental_base`: the last
published advisory's head and the findings still open). After it (`track_findings`):
every raised finding is recorded by fingerprint, whatever the review; on an incremental
re-review the earlier open findings the new commits fixed are marked `fixed` (with the new
head), and the advisory's scope says what was fixed, what is still open and what is new.
"""

from __future__ import annotations

from dataclasses import dataclass

from bot.council.advisory import Advisory, CarriedVerdict, Resolution
from bot.review.assemble import PreparedReview
from bot.store.db import Database
from bot.store.deliberations import DeliberationRecord, last_published_for_pr
from bot.store.findings import PrFinding, mark, pr_findings, record_raised

__all__ = [
    "IncrementalBase",
    "carried_verdict",
    "incremental_base",
    "last_advisory",
    "track_findings",
]


@dataclass(frozen=True)
class IncrementalBase:
    since: str  # the last advisory's head SHA
    open_findings: list[PrFinding]


async def last_advisory(db: Database, repo: str, pr_number: int) -> DeliberationRecord | None:
    """The newest deliberation of the pull request whose advisory, with a verdict, was
    posted (one that stopped short, NO_QUORUM or COST_LIMIT, reviewed nothing in full)."""
    verdicts = [r.value for r in Resolution if r.is_verdict]
    return await last_published_for_pr(db, repo, pr_number, verdicts)


async def carried_verdict(
    db: Database, repo: str, pr_number: int, deliberation_id: str, reason: str
) -> Advisory | None:
    """The pull request's last verdict, carried to a head with nothing new to review
    (`reason` says why): the same advisory, as `deliberation_id`'s, naming the head it was
    given on. None when the pull request has no verdict yet."""
    last = await last_advisory(db, repo, pr_number)
    if last is None or not last.advisory_json:
        return None
    given = Advisory.model_validate_json(last.advisory_json)
    carried = CarriedVerdict(head_sha=last.head_sha, deliberation_id=last.id, reason=reason)
    return given.model_copy(update={"deliberation_id": deliberation_id, "carried_from": carried})


async def incremental_base(
    db: Database, repo: str, pr_number: int, head_sha: str, *, trigger: str, enabled: bool
) -> IncrementalBase | None:
    """A push to a pull request with a posted advisory of another head is re-reviewed
    incrementally (unless the repository turned `incremental_reviews` off); commands,
    labels and re-runs are full reviews."""
    if trigger != "push" or not enabled:
        return None
    last = await last_advisory(db, repo, pr_number)
    if last is None or last.head_sha == head_sha:
        return None
    return IncrementalBase(last.head_sha, await pr_findings(db, repo, pr_number, status="open"))


async def track_findings(
    db: Database,
    repo: str,
    pr_number: int,
    deliberation_id: str,
    head_sha: str | None,
    prepared: PreparedReview,
    advisory: Advisory,
) -> Advisory:
    """Record what the review raised; on a re-review, mark what the new commits fixed and
    put the earlier and new findings on the advisory's scope. An advisory without a
    verdict (no quorum, a cost limit) records nothing and marks nothing."""
    tracking = prepared.tracking
    if tracking is None or not advisory.resolution.is_verdict:
        return advisory
    known = {f.fingerprint for f in await pr_findings(db, repo, pr_number)}
    raised = tracking.raised(advisory.findings)
    await record_raised(db, repo, pr_number, deliberation_id, head_sha, raised)
    if not tracking.incremental or advisory.scope is None or advisory.scope.rereview is None:
        return advisory
    fixed, rereview = tracking.outcome(raised, known)
    await mark(db, repo, pr_number, fixed, "fixed", fixed_sha=head_sha)
    scope = advisory.scope.model_copy(update={"rereview": rereview})
    return advisory.model_copy(update={"scope": scope})
