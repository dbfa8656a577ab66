"""Typed queries over deliberations: each one created, found (by id, key, check run or
pull request), moved from status to status, where it was published, and the stale ones the
reconciler checks.
"""

from __future__ import annotations

import uuid
from collections.abc import Sequence
from datetime import datetime
from enum import StrEnum

from pydantic import BaseModel, ConfigDict
from sqlalchemy import Select, select
from sqlalchemy.exc import IntegrityError
from sqlalchemy.ext.asyncio import AsyncSession
from sqlalchemy.orm import InstrumentedAttribute

from bot.store.db import Database, retries_when_locked
from bot.store.models import DeliberationRow, utc_now


class DeliberationStatus(StrEnum):
    RUNNING = "running"
    # Deliberated, the advisory stored (`advisory_json`), but GitHub would not take it yet:
    # the queue's `publish_pending` job posts it later.
    PUBLISH_PENDING = "publish_pending"
    COMPLETED = "completed"
    FAILED = "failed"
    CANCELLED = "cancelled"
    SUPERSEDED = "superseded"

    @property
    def finished(self) -> bool:
        return self not in (DeliberationStatus.RUNNING, DeliberationStatus.PUBLISH_PENDING)


class DeliberationNotFoundError(LookupError):
    def __init__(self, deliberation_id: str) -> None:
        super().__init__(f"no deliberation with id {deliberation_id!r}")
        self.deliberation_id = deliberation_id


class StoredRecord(BaseModel):
    """A record of the store: frozen, read off its row."""

    model_config = ConfigDict(frozen=True, from_attributes=True)


class DeliberationRecord(StoredRecord):
    id: str
    key: str
    repo: str
    pr_number: int | None
    head_sha: str
    installation_id: int | None
    trigger: str
    protocol: str
    topic: str
    status: DeliberationStatus
    resolution: str | None
    conclusion: str | None
    comment_id: int | None
    check_run_id: int | None
    cost_usd: float
    created_at: datetime
    updated_at: datetime
    finished_at: datetime | None
    advisory_json: str | None


def _by_key(key: str) -> Select[DeliberationRow]:
    return select(DeliberationRow).where(DeliberationRow.key == key)


async def _one(db: Database, query: Select[DeliberationRow]) -> DeliberationRecord | None:
    async with db.session(readonly=True) as session:
        row = (await session.scalars(query.limit(1))).one_or_none()
        return DeliberationRecord.model_validate(row) if row is not None else None


@retries_when_locked
async def create_deliberation(
    db: Database,
    *,
    key: str,
    repo: str,
    pr_number: int | None,
    head_sha: str,
    trigger: str,
    protocol: str,
    topic: str,
    installation_id: int | None = None,
) -> DeliberationRecord:
    """Get-or-create by `key`: a retried job finds the deliberation its first run started."""
    if existing := await find_deliberation(db, key):
        return existing
    row = DeliberationRow(
        id=str(uuid.uuid4()),
        key=key,
        repo=repo,
        pr_number=pr_number,
        head_sha=head_sha,
        installation_id=installation_id,
        trigger=trigger,
        protocol=protocol,
        topic=topic,
        status=DeliberationStatus.RUNNING.value,
        cost_usd=0.0,
    )
    try:
        async with db.session() as session:
            session.add(row)
    except IntegrityError:
        # Another worker created it between our look-up and insert.
        if raced := await find_deliberation(db, key):
            return raced
        raise
    return DeliberationRecord.model_validate(row)


async def get_deliberation(db: Database, deliberation_id: str) -> DeliberationRecord | None:
    return await _one(db, select(DeliberationRow).where(DeliberationRow.id == deliberation_id))


async def find_deliberation(db: Database, key: str) -> DeliberationRecord | None:
    return await _one(db, _by_key(key))


async def find_by_check_run(db: Database, check_run_id: int) -> DeliberationRecord | None:
    query = select(DeliberationRow).where(DeliberationRow.check_run_id == check_run_id)
    return await _one(db, query.order_by(DeliberationRow.created_at.desc()))


def _for_pr(repo: str, pr_number: int) -> Select[DeliberationRow]:
    return (
        select(DeliberationRow)
        .where(DeliberationRow.repo == repo, DeliberationRow.pr_number == pr_number)
        .order_by(DeliberationRow.created_at.desc(), DeliberationRow.id)
    )


async def latest_for_pr(db: Database, repo: str, pr_number: int) -> DeliberationRecord | None:
    return await _one(db, _for_pr(repo, pr_number))


async def last_published_for_pr(
    db: Database, repo: str, pr_number: int, resolutions: Sequence[str]
) -> DeliberationRecord | None:
    """The newest deliberation of the pull request that completed with its comment posted
    and one of `resolutions`."""
    query = _for_pr(repo, pr_number).where(
        DeliberationRow.status == DeliberationStatus.COMPLETED.value,
        DeliberationRow.comment_id.is_not(None),
        DeliberationRow.resolution.in_(list(resolutions)),
    )
    return await _one(db, query)


async def reviewed_at(
    db: Database, repo: str, pr_number: int, head_sha: str, triggers: Sequence[str]
) -> DeliberationRecord | None:
    """An automatic review of this exact head SHA that ran or is running (not one that
    failed): label and push triggers are deduplicated by head SHA."""
    query = _for_pr(repo, pr_number).where(
        DeliberationRow.head_sha == head_sha,
        DeliberationRow.trigger.in_(list(triggers)),
        DeliberationRow.status != DeliberationStatus.FAILED.value,
    )
    return await _one(db, query)


async def running_for_pr(db: Database, repo: str, pr_number: int) -> list[DeliberationRecord]:
    """Running deliberations of a PR, newest first (the caller may supersede the older)."""
    query = _for_pr(repo, pr_number).where(
        DeliberationRow.status == DeliberationStatus.RUNNING.value
    )
    async with db.session(readonly=True) as session:
        return [DeliberationRecord.model_validate(row) for row in await session.scalars(query)]


async def locked_deliberation(session: AsyncSession, deliberation_id: str) -> DeliberationRow:
    query = select(DeliberationRow).where(DeliberationRow.id == deliberation_id)
    row = (await session.scalars(query.with_for_update())).one_or_none()
    if row is None:
        raise DeliberationNotFoundError(deliberation_id)
    return row


@retries_when_locked
async def set_status(
    db: Database,
    deliberation_id: str,
    status: DeliberationStatus,
    *,
    resolution: str | None = None,
    conclusion: str | None = None,
    advisory_json: str | None = None,
    cost_usd: float | None = None,
) -> DeliberationRecord:
    """Set the status; each keyword given (not None) is set too, the rest are kept."""
    async with db.session() as session:
        row = await locked_deliberation(session, deliberation_id)
        now = utc_now()
        row.status = status.value
        row.updated_at = now
        row.finished_at = now if status.finished else None
        _set_given(
            row,
            resolution=resolution,
            conclusion=conclusion,
            advisory_json=advisory_json,
            cost_usd=cost_usd,
        )
        await session.flush()
        return DeliberationRecord.model_validate(row)


def _set_given(row: DeliberationRow, **fields: object) -> None:
    """Set each field that was given; None means "keep what is there"."""
    for name, value in fields.items():
        if value is not None:
            setattr(row, name, value)


@retries_when_locked
async def record_publication(
    db: Database,
    deliberation_id: str,
    *,
    comment_id: int | None = None,
    check_run_id: int | None = None,
) -> DeliberationRecord:
    """Remember where the advisory was published; an id not given is kept as it was."""
    async with db.session() as session:
        row = await locked_deliberation(session, deliberation_id)
        _set_given(row, comment_id=comment_id, check_run_id=check_run_id)
        await session.flush()
        return DeliberationRecord.model_validate(row)


async def stale_running(db: Database, *, created_before: datetime) -> list[DeliberationRecord]:
    """Running deliberations of every repository started before `created_before`: the
    candidates whose runner may have died (the reconciler checks each one's claim)."""
    return await _stale(db, DeliberationStatus.RUNNING, DeliberationRow.created_at, created_before)


async def stale_pending(db: Database, *, updated_before: datetime) -> list[DeliberationRecord]:
    """Advisories kept for a later posting try that nothing has touched since
    `updated_before` (the reconciler checks their try is still queued)."""
    return await _stale(
        db, DeliberationStatus.PUBLISH_PENDING, DeliberationRow.updated_at, updated_before
    )


async def _stale(
    db: Database,
    status: DeliberationStatus,
    column: InstrumentedAttribute[datetime],
    before: datetime,
) -> list[DeliberationRecord]:
    """At most 500 deliberations in `status` whose `column` is older than `before`, oldest
    first."""
    query = (
        select(DeliberationRow)
        .where(DeliberationRow.status == status.value, column < before)
        .order_by(column)
        .limit(500)
    )
    async with db.session(readonly=True) as session:
        return [DeliberationRecord.model_validate(row) for row in await session.scalars(query)]
