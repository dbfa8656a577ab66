"""Typed queries over how reviewed pull requests ended: each deliberation's outcome, its
personas' outcomes, and their track records by task type.
"""

from __future__ import annotations

from collections.abc import Sequence
from datetime import datetime
from typing import Literal, get_args

from sqlalchemy import case, delete, func, select

from bot.store.db import Database, retries_when_locked
from bot.store.deliberations import StoredRecord, locked_deliberation
from bot.store.models import OutcomeRow, PersonaOutcomeRow, utc_now


class OutcomeRecord(StoredRecord):
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


class PersonaOutcome(StoredRecord):
    """Whether one persona's contribution held up, for one task type of one deliberation,
    and how that was decided."""

    persona_id: str
    task_type: str
    success: bool
    basis: OutcomeBasis


class PersonaTrackRecord(StoredRecord):
    persona_id: str
    task_type: str
    outcomes: int
    success_rate: float
    top_for_task_type: bool


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
        await locked_deliberation(session, deliberation_id)
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
        await locked_deliberation(session, deliberation_id)
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
