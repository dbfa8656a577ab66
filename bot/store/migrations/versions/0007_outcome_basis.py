"""Persona outcomes say how they were scored (`basis`), and the old ones are re-scored.

Until now a seat of a protocol without a vote (`quick`, `council`, `strategies`) held up
only when one of its findings was addressed: an approving `quick` seat on a PR that merged
counted as wrong. `bot.review.outcomes` now scores a seat by its vote, else by its
assessment's verdict, and records how. This revision adds the column and re-scores, by the
same rule, every existing record whose deliberation still has its advisory and its outcome
(merged or not, the findings addressed); the rest keep their value and say "legacy".

The rule is copied here as it is at this revision (a revision never imports live code): a
finding of the seat addressed: held up ("finding-addressed"); else its vote ("vote") or
its assessment's verdict ("assessment"): APPROVE holds up when the PR merged, REJECT and
CONCERNS when it did not. An advisory that does not parse, or whose valid seats are not
the personas of the stored rows, is left alone.

Revision ID: 0007_outcome_basis
Revises: 0006_answer_sizes
Create Date: 2026-12-16
"""

from __future__ import annotations

import json
from collections import Counter, defaultdict
from collections.abc import Iterator, Sequence
from typing import Any

import sqlalchemy as sa
from alembic import context, op
from sqlalchemy.dialects.postgresql import JSONB

revision: str = "0007_outcome_basis"
down_revision: str | None = "0006_answer_sizes"
branch_labels: str | None = None
depends_on: str | None = None

# Frozen copies of what the rule reads (a revision never imports the live models).
JSON_TYPE = sa.JSON().with_variant(JSONB(), "postgresql")
VALID_STATES = frozenset({"ok", "abstained"})
STANCES = frozenset({"APPROVE", "CONCERNS", "REJECT"})
CHUNK = 200

deliberations = sa.table(
    "deliberations", sa.column("id", sa.String), sa.column("advisory_json", sa.Text)
)
outcomes = sa.table(
    "outcomes",
    sa.column("deliberation_id", sa.String),
    sa.column("merged", sa.Boolean),
    sa.column("addressed_findings", JSON_TYPE),
)
persona_outcomes = sa.table(
    "persona_outcomes",
    sa.column("id", sa.BigInteger),
    sa.column("deliberation_id", sa.String),
    sa.column("persona_id", sa.String),
    sa.column("success", sa.Boolean),
    sa.column("basis", sa.String),
)

Scored = tuple[str, bool, str]  # (persona id, held up, basis)
Update = tuple[int, bool, str]  # (persona outcome row id, held up, basis)


def upgrade() -> None:
    with op.batch_alter_table("persona_outcomes") as batch:
        batch.add_column(sa.Column("basis", sa.String(32), server_default="legacy", nullable=False))
    if not context.is_offline_mode():
        rescore(op.get_bind())


def downgrade() -> None:
    with op.batch_alter_table("persona_outcomes") as batch:
        batch.drop_column("basis")


def rescore(connection: sa.Connection) -> int:
    """Re-score the persona outcomes that can be; returns how many rows it re-scored."""
    joined = (
        sa.select(persona_outcomes.c.deliberation_id)
        .distinct()
        .join(outcomes, outcomes.c.deliberation_id == persona_outcomes.c.deliberation_id)
    )
    ids = sorted(connection.execute(joined).scalars())
    done = 0
    for chunk in _chunks(ids):
        rows: dict[str, list[tuple[int, str]]] = defaultdict(list)
        columns = persona_outcomes.c
        query = (
            sa.select(columns.id, columns.deliberation_id, columns.persona_id)
            .where(columns.deliberation_id.in_(chunk))
            .order_by(columns.id)
        )
        for row_id, deliberation_id, persona_id in connection.execute(query):
            rows[deliberation_id].append((row_id, persona_id))
        stored = sa.select(
            deliberations.c.id,
            deliberations.c.advisory_json,
            outcomes.c.merged,
            outcomes.c.addressed_findings,
        ).join(outcomes, outcomes.c.deliberation_id == deliberations.c.id)
        stored = stored.where(deliberations.c.id.in_(chunk))
        updates: list[dict[str, Any]] = []
        for deliberation_id, advisory_json, merged, addressed in connection.execute(stored):
            scored = score(advisory_json, bool(merged), addressed)
            matched = match(rows[deliberation_id], scored) if scored is not None else None
            updates += [
                {"row_id": row_id, "new_success": success, "new_basis": basis}
                for row_id, success, basis in matched or []
            ]
        if updates:
            connection.execute(
                sa.update(persona_outcomes)
                .where(persona_outcomes.c.id == sa.bindparam("row_id"))
                .values(success=sa.bindparam("new_success"), basis=sa.bindparam("new_basis")),
                updates,
            )
        done += len(updates)
    return done


def _chunks(ids: Sequence[str]) -> Iterator[list[str]]:
    for start in range(0, len(ids), CHUNK):
        yield list(ids[start : start + CHUNK])


def _loaded(value: Any) -> Any:
    if isinstance(value, str | bytes):
        try:
            return json.loads(value)
        except ValueError:
            return None
    return value


def finding_key(finding: dict[str, Any]) -> str | None:
    """`bot.council.advisory.finding_key` on the stored JSON of a merged finding."""
    path, title = finding.get("path"), finding.get("title")
    if not isinstance(path, str) or not isinstance(title, str):
        return None
    start = finding.get("start_line") or 0
    end = finding.get("end_line") or finding.get("start_line") or 0
    return f"{path}:{start}-{end}:{title}"


class Unreadable(ValueError):
    """A stored advisory this revision does not know how to read."""


def score(advisory_json: Any, merged: bool, addressed_json: Any) -> list[Scored] | None:
    """Each valid seat's (persona, held up, basis), in seat order; None when the stored
    advisory or outcome is not what this revision knows how to read."""
    advisory, addressed = _loaded(advisory_json), _loaded(addressed_json)
    if not isinstance(advisory, dict) or not isinstance(addressed, list):
        return None
    try:
        raised = _raised_addressed(advisory, {k for k in addressed if isinstance(k, str)})
        seats = advisory.get("seats")
        if not isinstance(seats, list):
            raise Unreadable("seats")
        scored = [_seat(seat, merged, raised) for seat in seats]
    except Unreadable:
        return None
    return [one for one in scored if one is not None]


def _raised_addressed(advisory: dict[str, Any], addressed: set[str]) -> set[str]:
    """The seat ids that raised a finding listed as addressed."""
    findings = advisory.get("findings", [])
    if not isinstance(findings, list):
        raise Unreadable("findings")
    raised: set[str] = set()
    for finding in findings:
        if not isinstance(finding, dict) or not isinstance(finding.get("raised_by"), list):
            raise Unreadable("finding")
        if finding_key(finding) in addressed:
            raised.update(s for s in finding["raised_by"] if isinstance(s, str))
    return raised


def _seat(seat: Any, merged: bool, raised_addressed: set[str]) -> Scored | None:
    """A valid seat's score; None for a seat whose assessment does not count."""
    if not isinstance(seat, dict):
        raise Unreadable("seat")
    seat_id, persona_id = seat.get("seat_id"), seat.get("persona_id")
    if not isinstance(seat_id, str) or not isinstance(persona_id, str):
        raise Unreadable("seat")
    assessment = seat.get("assessment")
    if seat.get("state", "ok") not in VALID_STATES or not isinstance(assessment, dict):
        return None
    if seat_id in raised_addressed:
        return (persona_id, True, "finding-addressed")
    vote = seat.get("vote")
    stance, basis = (vote.get("vote"), "vote") if isinstance(vote, dict) else (None, "")
    if stance is None:
        stance, basis = assessment.get("verdict"), "assessment"
    if stance not in STANCES:
        raise Unreadable("stance")
    return (persona_id, merged if stance == "APPROVE" else not merged, basis)


def match(rows: list[tuple[int, str]], scored: list[Scored]) -> list[Update] | None:
    """Each stored row (id, persona) given its seat's score, a persona's rows in order of
    id taking its seats in seat order; None when the personas differ."""
    if Counter(persona for _, persona in rows) != Counter(persona for persona, _, _ in scored):
        return None
    by_persona: dict[str, list[Scored]] = defaultdict(list)
    for one in scored:
        by_persona[one[0]].append(one)
    updates: list[Update] = []
    for row_id, persona in rows:
        _, success, basis = by_persona[persona].pop(0)
        updates.append((row_id, success, basis))
    return updates
