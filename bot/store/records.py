"""Typed queries over deliberations, outcomes, installations and daily costs.

Every function takes the `Database` first and returns pydantic models (never rows or
dicts), so callers outside `bot.store` never see SQLAlchemy. Each write is one transaction,
tried again while SQLite says the database is locked (`bot.store.db.retries_when_locked`).
"""

from __future__ import annotations

import uuid
from collections.abc import Sequence
from datetime import date, datetime
from enum import StrEnum
from typing import Literal, get_args

from pydantic import BaseModel, ConfigDict
from sqlalchemy import Select, case, delete, func, select
from sqlalchemy.dialects import postgresql, sqlite
from sqlalchemy.exc import IntegrityError
from sqlalchemy.ext.asyncio import AsyncSession
from sqlalchemy.orm import InstrumentedAttribute
from sqlalchemy.sql.dml import ReturningInsert

from bot.store.db import Database, retries_when_locked
from bot.store.models import (
    DailyCostRow,
    DeliberationRow,
    InstallationRow,
    OutcomeRow,
    PersonaOutcomeRow,
    utc_now,
)

__all__ = [
    "OUTCOME_BASES",
    "DeliberationNotFoundError",
    "DeliberationRecord",
    "DeliberationStatus",
    "InstallationRecord",
    "OutcomeBasis",
    "OutcomeRecord",
    "PersonaOutcome",
    "PersonaTrackRecord",
    "add_cost",
    "create_deliberation",
    "daily_cost",
    "delete_installation",
    "find_by_check_run",
    "find_deliberation",
    "get_deliberation",
    "get_installation",
    "get_outcome",
    "latest_for_pr",
    "persona_track_records",
    "record_outcome",
    "record_persona_outcomes",
    "record_publication",
    "running_for_pr",
    "set_status",
    "upsert_installation",
]


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


class _Record(BaseModel):
    model_config = ConfigDict(frozen=True, from_attributes=True)


class DeliberationRecord(_Record):
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


class OutcomeRecord(_Record):
    deliberation_id: str
    merged: bool
    closed_at: datetime
    # Identifiers of findings (the caller's stable key for a finding).
    addressed_findings: list[str]
    unaddressed_findings: list[str]


# How a persona outcome was scored (`bot.review.outcomes` gives the rule): a finding of the
# seat addressed, its vote, its assessment's verdict, or "legacy": made before the basis
# was recorded and not re-scored (migration 0007_outcome_basis).
OutcomeBasis = Literal["vote", "assessment", "finding-addressed", "legacy"]
OUTCOME_BASES: tuple[OutcomeBasis, ...] = get_args(OutcomeBasis)


class PersonaOutcome(_Record):
    """Whether one persona's contribution held up, for one task type of one deliberation,
    and how that was decided."""

    persona_id: str
    task_type: str
    success: bool
    basis: OutcomeBasis


class PersonaTrackRecord(_Record):
    persona_id: str
    task_type: str
    outcomes: int
    success_rate: float
    top_for_task_type: bool


class InstallationRecord(_Record):
    installation_id: int
    account: str
    repositories: list[str]
    updated_at: datetime


# --- deliberations ---------------------------------------------------------------------


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


async def _locked(session: AsyncSession, deliberation_id: str) -> DeliberationRow:
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
        row = await _locked(session, deliberation_id)
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
        row = await _locked(session, deliberation_id)
        _set_given(row, comment_id=comment_id, check_run_id=check_run_id)
        await session.flush()
        return DeliberationRecord.model_validate(row)


# --- outcomes and track records --------------------------------------------------------


@retries_when_locked
async def record_outcome(
    db: Database,
    deliberation_id: str,
    merged: bool,
    addressed: Sequence[str],
    unaddressed: Sequence[str],
    *,
    closed_at: datetime | None = None,
) -> OutcomeRecord:
    """Record (or replace, when a PR is closed again) how a reviewed PR ended."""
    async with db.session() as session:
        await _locked(session, deliberation_id)
        row = await session.get(OutcomeRow, deliberation_id)
        if row is None:
            row = OutcomeRow(deliberation_id=deliberation_id)
            session.add(row)
        row.merged = merged
        row.closed_at = closed_at or utc_now()
        row.addressed_findings = list(addressed)
        row.unaddressed_findings = list(unaddressed)
        await session.flush()
        return OutcomeRecord.model_validate(row)


async def get_outcome(db: Database, deliberation_id: str) -> OutcomeRecord | None:
    async with db.session(readonly=True) as session:
        row = await session.get(OutcomeRow, deliberation_id)
        return OutcomeRecord.model_validate(row) if row is not None else None


@retries_when_locked
async def record_persona_outcomes(
    db: Database, deliberation_id: str, outcomes: Sequence[PersonaOutcome]
) -> None:
    """Replace the deliberation's persona outcomes, so a redelivered close counts once."""
    async with db.session() as session:
        await _locked(session, deliberation_id)
        await session.execute(
            delete(PersonaOutcomeRow).where(PersonaOutcomeRow.deliberation_id == deliberation_id)
        )
        session.add_all(
            PersonaOutcomeRow(
                deliberation_id=deliberation_id,
                persona_id=outcome.persona_id,
                task_type=outcome.task_type,
                success=outcome.success,
                basis=outcome.basis,
            )
            for outcome in outcomes
        )


def _rank(record: PersonaTrackRecord) -> tuple[float, int, str]:
    """Sort key, best first: the success rate discounted below 5 outcomes (as the memory
    layer discounts it), then more outcomes, then persona id for a stable choice."""
    weighted = record.success_rate * min(record.outcomes / 5, 1.0)
    return (-weighted, -record.outcomes, record.persona_id)


def _mark_tops(records: list[PersonaTrackRecord]) -> list[PersonaTrackRecord]:
    """Flag the best persona of each task type, if it succeeded at all."""
    best: dict[str, PersonaTrackRecord] = {}
    for record in records:
        current = best.get(record.task_type)
        if current is None or _rank(record) < _rank(current):
            best[record.task_type] = record
    tops = {(r.persona_id, r.task_type) for r in best.values() if r.success_rate > 0}
    return [
        r.model_copy(update={"top_for_task_type": (r.persona_id, r.task_type) in tops})
        for r in records
    ]


async def persona_track_records(
    db: Database, task_types: Sequence[str]
) -> list[PersonaTrackRecord]:
    """Per persona and task type: outcome count, success rate, and the top persona.

    The top persona of a task type has the best success rate weighted by
    `min(outcomes / 5, 1)` and at least one success. Ordered by task type, then persona.
    """
    if not task_types:
        return []
    successes = func.sum(case((PersonaOutcomeRow.success, 1), else_=0))
    query = (
        select(
            PersonaOutcomeRow.persona_id,
            PersonaOutcomeRow.task_type,
            func.count(),
            successes,
        )
        .where(PersonaOutcomeRow.task_type.in_(list(task_types)))
        .group_by(PersonaOutcomeRow.persona_id, PersonaOutcomeRow.task_type)
        .order_by(PersonaOutcomeRow.task_type, PersonaOutcomeRow.persona_id)
    )
    async with db.session(readonly=True) as session:
        rows = (await session.execute(query)).all()
    records = [
        PersonaTrackRecord(
            persona_id=persona_id,
            task_type=task_type,
            outcomes=count,
            success_rate=int(wins or 0) / count,
            top_for_task_type=False,
        )
        for persona_id, task_type, count, wins in rows
    ]
    return _mark_tops(records)


# --- installations and daily costs -----------------------------------------------------


@retries_when_locked
async def upsert_installation(
    db: Database, installation_id: int, account: str, repositories: Sequence[str]
) -> InstallationRecord:
    async with db.session() as session:
        row = await session.get(InstallationRow, installation_id, with_for_update=True)
        if row is None:
            row = InstallationRow(installation_id=installation_id)
            session.add(row)
        row.account = account
        row.repositories = sorted(set(repositories))
        row.updated_at = utc_now()
        await session.flush()
        return InstallationRecord.model_validate(row)


async def get_installation(db: Database, installation_id: int) -> InstallationRecord | None:
    async with db.session(readonly=True) as session:
        row = await session.get(InstallationRow, installation_id)
        return InstallationRecord.model_validate(row) if row is not None else None


@retries_when_locked
async def delete_installation(db: Database, installation_id: int) -> bool:
    """Forget an uninstalled installation; False if it was not known."""
    async with db.session() as session:
        row = await session.get(InstallationRow, installation_id)
        if row is None:
            return False
        await session.delete(row)
        return True


def _cost_upsert(
    db: Database, installation_id: int, day: date, usd: float
) -> ReturningInsert[float]:
    """`INSERT ... ON CONFLICT DO UPDATE` adding to the day's total, returning it."""
    values = {"installation_id": installation_id, "day": day, "cost_usd": usd}
    keys = [DailyCostRow.installation_id, DailyCostRow.day]
    if db.backend == "postgresql":
        pg = postgresql.insert(DailyCostRow).values(values)
        return pg.on_conflict_do_update(
            index_elements=keys, set_={"cost_usd": DailyCostRow.cost_usd + pg.excluded.cost_usd}
        ).returning(DailyCostRow.cost_usd)
    lite = sqlite.insert(DailyCostRow).values(values)
    return lite.on_conflict_do_update(
        index_elements=keys, set_={"cost_usd": DailyCostRow.cost_usd + lite.excluded.cost_usd}
    ).returning(DailyCostRow.cost_usd)


@retries_when_locked
async def add_cost(db: Database, installation_id: int, day: date, usd: float) -> float:
    """Add to an installation's spend for a day, atomically; returns the day's total."""
    async with db.session() as session:
        return float(
            (await session.execute(_cost_upsert(db, installation_id, day, usd))).scalar_one()
        )


async def daily_cost(db: Database, installation_id: int, day: date) -> float:
    query = select(DailyCostRow.cost_usd).where(
        DailyCostRow.installation_id == installation_id, DailyCostRow.day == day
    )
    async with db.session(readonly=True) as session:
        return float(await session.scalar(query) or 0.0)


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
