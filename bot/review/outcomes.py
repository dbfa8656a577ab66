"""What happened after the advice, scored when the pull request closes.

A finding is "addressed" when the lines it points at changed between the head the council
reviewed and the PR's final head. A persona's contribution held up when one of its findings
was addressed, or when its vote matched what the people decided (approve and merged, reject
and not merged). These records feed the memory layer of board scoring.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass

from bot.context.diff import hunk_ranges
from bot.council.advisory import Advisory, MergedFinding, finding_key
from bot.council.ledger import EventKind
from bot.github.fetch import PullFile
from bot.store.db import Database
from bot.store.ledger import SqlLedger
from bot.store.records import (
    DeliberationRecord,
    PersonaOutcome,
    record_outcome,
    record_persona_outcomes,
)

__all__ = ["Outcome", "finding_key", "record_pr_outcome", "touched"]


@dataclass(frozen=True)
class Outcome:
    merged: bool
    addressed: list[str]  # finding keys
    unaddressed: list[str]


def touched(f: MergedFinding, changed: Mapping[str, PullFile]) -> bool:
    """Did the change after the advice touch the finding's lines (old side of the compare)?"""
    file = changed.get(f.path)
    if file is None:
        return False
    if f.start_line is None or not file.patch:
        return True
    end = f.end_line or f.start_line
    return any(
        h.source_start <= end and f.start_line <= h.source_start + max(h.source_length, 1) - 1
        for h in hunk_ranges(file.patch)
    )


async def record_pr_outcome(
    db: Database, record: DeliberationRecord, changed: Mapping[str, PullFile], merged: bool
) -> Outcome:
    """Score the record's advisory against the files changed since its head, and store it.

    `record` carries an advisory (`advisory_json`); `changed` maps path -> the file as
    compared from the reviewed head to the final one (empty when the head did not move).
    """
    advisory = Advisory.model_validate_json(record.advisory_json or "")
    addressed = [finding_key(f) for f in advisory.findings if touched(f, changed)]
    unaddressed = [finding_key(f) for f in advisory.findings if not touched(f, changed)]
    await record_outcome(db, record.id, merged, addressed, unaddressed)
    task_type = await _task_type(db, record.id)
    outcomes = [
        PersonaOutcome(
            persona_id=seat.persona_id,
            task_type=task_type,
            success=_held_up(
                seat.seat_id,
                seat.vote.vote if seat.vote else None,
                merged,
                advisory,
                set(addressed),
            ),
        )
        for seat in advisory.valid_seats()
    ]
    await record_persona_outcomes(db, record.id, outcomes)
    return Outcome(merged=merged, addressed=addressed, unaddressed=unaddressed)


def _held_up(
    seat_id: str, vote: str | None, merged: bool, advisory: Advisory, addressed: set[str]
) -> bool:
    if any(seat_id in f.raised_by and finding_key(f) in addressed for f in advisory.findings):
        return True
    return (vote == "APPROVE" and merged) or (vote == "REJECT" and not merged)


async def _task_type(db: Database, deliberation_id: str) -> str:
    published = await SqlLedger(db).step(deliberation_id, "published")
    if published is not None and published.kind == EventKind.PUBLISHED:
        value = published.payload.get("task_type")
        if isinstance(value, str):
            return value
    return "general"
