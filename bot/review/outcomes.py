"""What happened after the advice, scored when the pull request closes.

A finding is "addressed" when the lines it points at changed between the head the council
reviewed and the PR's final head. Each valid seat's contribution is then scored against
what the people did, and the persona outcome records how (its `basis`):

- "finding-addressed": one of the seat's findings was addressed. It held up, whatever the
  seat said and whether or not the PR merged.
- Otherwise the seat's stance decides, and the stance is:
  - its vote (basis "vote") in a protocol that votes (`board`, `debate`);
  - else its assessment's verdict (basis "assessment"): the seats of `quick`, `council`
    and `strategies` (which do not vote; a `strategies` seat's verdict is the one its
    critique rounds left it, `bot.council.protocols.strategies.critique`), and a seat of a
    voting protocol whose vote was invalid (it abstained).
  A stance held up when:
  - APPROVE: the PR merged;
  - REJECT: the PR did not merge;
  - CONCERNS ("mergeable, with concerns worth handling"): the PR did not go in as it
    was: it did not merge (a merge after changes that touched one of the seat's
    findings is the "finding-addressed" case above). A PR merged with none of its
    findings touched did not hold the concerns up.

Records made before the basis existed were re-scored by this rule where their advisory
and outcome were still stored (migration 0007_outcome_basis); the rest say "legacy".
These records feed the memory layer of board scoring (`bot.council.scoring`) and
`council stats` (`bot.store.history`).
"""

from __future__ import annotations

from collections.abc import Mapping, Set
from dataclasses import dataclass

from bot.context.diff import hunk_ranges
from bot.council.advisory import Advisory, MergedFinding, SeatReport, finding_key
from bot.council.ledger import EventKind
from bot.council.places import Place, places
from bot.forge import PullFile
from bot.store.db import Database
from bot.store.deliberations import DeliberationRecord
from bot.store.ledger import SqlLedger
from bot.store.outcomes import OutcomeBasis, PersonaOutcome, record_outcome, record_persona_outcomes

__all__ = [
    "Outcome",
    "SeatScore",
    "finding_key",
    "record_pr_outcome",
    "score_seat",
    "stance_held_up",
    "touched",
]


@dataclass(frozen=True)
class Outcome:
    merged: bool
    addressed: list[str]  # finding keys
    unaddressed: list[str]


@dataclass(frozen=True)
class SeatScore:
    held_up: bool
    basis: OutcomeBasis


def touched(f: MergedFinding, changed: Mapping[str, PullFile]) -> bool:
    """Did the change after the advice touch the finding's lines (old side of the compare),
    at its location or at another place of the same issue (`also_at`)?"""
    return any(_touched(place, changed) for place in places(f))


def _touched(place: Place, changed: Mapping[str, PullFile]) -> bool:
    path, start, end = place
    file = changed.get(path)
    if file is None:
        return False
    if start is None or not file.patch:
        return True
    end = end or start
    return any(
        h.source_start <= end and start <= h.source_start + max(h.source_length, 1) - 1
        for h in hunk_ranges(file.patch)
    )


def stance_held_up(stance: str, merged: bool) -> bool:
    """APPROVE holds up when the PR merged; REJECT and CONCERNS when it did not."""
    return merged if stance == "APPROVE" else not merged


def score_seat(
    seat: SeatReport, advisory: Advisory, merged: bool, addressed: Set[str]
) -> SeatScore | None:
    """How a valid seat's contribution held up (the module docstring's rule); None for a
    seat whose assessment does not count."""
    if not seat.is_valid or seat.assessment is None:
        return None
    if any(seat.seat_id in f.raised_by and finding_key(f) in addressed for f in advisory.findings):
        return SeatScore(held_up=True, basis="finding-addressed")
    if seat.vote is not None:
        return SeatScore(held_up=stance_held_up(seat.vote.vote, merged), basis="vote")
    return SeatScore(held_up=stance_held_up(seat.assessment.verdict, merged), basis="assessment")


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
    outcomes: list[PersonaOutcome] = []
    for seat in advisory.valid_seats():
        score = score_seat(seat, advisory, merged, set(addressed))
        if score is not None:
            outcomes.append(
                PersonaOutcome(
                    persona_id=seat.persona_id,
                    task_type=task_type,
                    success=score.held_up,
                    basis=score.basis,
                )
            )
    await record_persona_outcomes(db, record.id, outcomes)
    return Outcome(merged=merged, addressed=addressed, unaddressed=unaddressed)


async def _task_type(db: Database, deliberation_id: str) -> str:
    published = await SqlLedger(db).step(deliberation_id, "published")
    if published is not None and published.kind == EventKind.PUBLISHED:
        value = published.payload.get("task_type")
        if isinstance(value, str):
            return value
    return "general"
