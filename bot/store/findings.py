"""Findings by pull request over its reviews (`pr_findings`), by fingerprint.

Each review records what it raised (`record_raised`): a new fingerprint is `open`; a known
one stays what it was, unless it was `fixed` and is raised again (then it is open again). A
re-review marks what a push fixed (`mark`, status `fixed` with the fixing head); a dismissal
(a thread resolved, a thumbs-down) by a person with write access is `dismissed`, and a
dismissed finding is never raised on that pull request again (`dismissed_fingerprints`).
`bot.pr.followup` decides whose word counts, and never marks a critical finding
dismissed: it stays open, whoever dismissed it. Inline comments record where they were
posted (`posted`), so no re-review posts the same finding twice.
"""

from __future__ import annotations

from collections.abc import Sequence
from datetime import datetime
from typing import Literal

from pydantic import BaseModel, ConfigDict
from sqlalchemy import case, select, update
from sqlalchemy.dialects import postgresql, sqlite

from bot.store.db import Database
from bot.store.models import PrFindingRow, utc_now

__all__ = [
    "FindingStatus",
    "PrFinding",
    "RaisedFinding",
    "dismissed_fingerprints",
    "mark",
    "posted",
    "pr_findings",
    "record_raised",
]

FindingStatus = Literal["open", "fixed", "dismissed"]


class RaisedFinding(BaseModel):
    """What one review raised: the finding's fingerprint and how to show it."""

    model_config = ConfigDict(frozen=True)

    fingerprint: str
    path: str
    line: int | None
    title: str
    severity: str


class PrFinding(BaseModel):
    model_config = ConfigDict(frozen=True, from_attributes=True)

    repo: str
    pr_number: int
    fingerprint: str
    path: str
    line: int | None
    title: str
    severity: str
    status: FindingStatus
    first_deliberation_id: str
    last_deliberation_id: str
    head_sha: str | None
    fixed_sha: str | None
    review_comment_id: int | None
    thread_node_id: str | None
    updated_at: datetime


async def pr_findings(
    db: Database, repo: str, pr_number: int, *, status: FindingStatus | None = None
) -> list[PrFinding]:
    """Every finding known on the pull request (optionally of one status), oldest first."""
    query = select(PrFindingRow).where(
        PrFindingRow.repo == repo, PrFindingRow.pr_number == pr_number
    )
    if status is not None:
        query = query.where(PrFindingRow.status == status)
    async with db.session(readonly=True) as session:
        rows = (await session.scalars(query.order_by(PrFindingRow.id))).all()
        return [PrFinding.model_validate(r) for r in rows]


async def dismissed_fingerprints(db: Database, repo: str, pr_number: int) -> set[str]:
    return {f.fingerprint for f in await pr_findings(db, repo, pr_number, status="dismissed")}


async def record_raised(
    db: Database,
    repo: str,
    pr_number: int,
    deliberation_id: str,
    head_sha: str | None,
    raised: Sequence[RaisedFinding],
) -> None:
    """Record what a review raised: new fingerprints open; known ones keep their status
    (a fixed one raised again is open again; a dismissed one stays dismissed)."""
    if not raised:
        return
    dialect = postgresql if db.backend == "postgresql" else sqlite
    now = utc_now()
    async with db.session() as session:
        for f in {r.fingerprint: r for r in raised}.values():
            insert = dialect.insert(PrFindingRow).values(
                repo=repo,
                pr_number=pr_number,
                fingerprint=f.fingerprint,
                path=f.path,
                line=f.line,
                title=f.title,
                severity=f.severity,
                status="open",
                first_deliberation_id=deliberation_id,
                last_deliberation_id=deliberation_id,
                head_sha=head_sha,
                updated_at=now,
            )
            excluded = insert.excluded
            statement = insert.on_conflict_do_update(
                index_elements=[
                    PrFindingRow.repo,
                    PrFindingRow.pr_number,
                    PrFindingRow.fingerprint,
                ],
                set_={
                    "line": excluded.line,
                    "severity": excluded.severity,
                    "last_deliberation_id": excluded.last_deliberation_id,
                    "head_sha": excluded.head_sha,
                    "updated_at": excluded.updated_at,
                    # A fixed finding raised again is open again; dismissed stays dismissed.
                    "status": case(
                        (PrFindingRow.status == "fixed", "open"), else_=PrFindingRow.status
                    ),
                },
            )
            await session.execute(statement)


async def mark(
    db: Database,
    repo: str,
    pr_number: int,
    fingerprints: Sequence[str],
    status: FindingStatus,
    *,
    fixed_sha: str | None = None,
) -> int:
    """Set the status of these findings; returns how many rows changed. A dismissed finding
    is never marked otherwise (a person's word stands)."""
    if not fingerprints:
        return 0
    statement = (
        update(PrFindingRow)
        .where(
            PrFindingRow.repo == repo,
            PrFindingRow.pr_number == pr_number,
            PrFindingRow.fingerprint.in_(list(fingerprints)),
            PrFindingRow.status != "dismissed",
        )
        .values(
            status=status, fixed_sha=fixed_sha if status == "fixed" else None, updated_at=utc_now()
        )
    )
    async with db.session() as session:
        result = await session.execute(statement)
        return int(getattr(result, "rowcount", 0) or 0)


async def posted(
    db: Database,
    repo: str,
    pr_number: int,
    fingerprint: str,
    *,
    review_comment_id: int,
    thread_node_id: str | None = None,
) -> None:
    """Where the finding was posted as an inline review comment (and its thread)."""
    statement = (
        update(PrFindingRow)
        .where(
            PrFindingRow.repo == repo,
            PrFindingRow.pr_number == pr_number,
            PrFindingRow.fingerprint == fingerprint,
        )
        .values(
            review_comment_id=review_comment_id,
            thread_node_id=thread_node_id,
            updated_at=utc_now(),
        )
    )
    async with db.session() as session:
        await session.execute(statement)
