"""The vote phase: every valid seat votes APPROVE or REJECT (one re-ask on an invalid answer).

A vote is APPROVE or REJECT (`bot.council.schemas.Vote`): no seat can choose to abstain. A
vote that did not come is said as what happened, the same everywhere (the record the chair
reads, the ledger, the advisory and every rendering of it): "no vote (timed out)", "no vote
(invalid answer twice)", "no vote (server error)", ... The seat keeps its assessment (state
`SeatState.NO_VOTE`, still valid) and, as before, counts in no majority: the resolution
leaves a missing vote out of N (bot.council.resolution).

The ledger's VOTE_CAST event says `{"seat": ..., "vote": "APPROVE"}`, or for a vote that did
not come `{"seat": ..., "vote": null, "missing": "timed out"}`. Nothing reads it back: a
resumed deliberation replays the vote calls themselves (their SEAT_RETURNED records), so a
ledger written before (whose VOTE_CAST said "ABSTAIN") resumes as any other.
"""

from __future__ import annotations

import asyncio
from dataclasses import dataclass

from pydantic import JsonValue

from bot.council import prompts
from bot.council.advisory import SeatState
from bot.council.calls import CallOutcome, CostLimitReached
from bot.council.ledger import EventKind
from bot.council.protocols import ANSWER_TRIES
from bot.council.run import Run, answered, in_parallel
from bot.council.schemas import Vote
from bot.council.seats import Seat
from bot.council.transcript import votes_section
from bot.providers import ErrorKind

__all__ = ["INVALID_TWICE", "Ballot", "missing_reason", "vote"]

INVALID_TWICE = "invalid answer twice" if ANSWER_TRIES == 2 else f"invalid {ANSWER_TRIES} times"
# Why a call gave no answer, in a few words ("no vote (timed out)").
_FAILED: dict[str, str] = {
    ErrorKind.TIMEOUT: "timed out",
    ErrorKind.SERVER_ERROR: "server error",
    ErrorKind.REFUSED: "refused",
    ErrorKind.RATE_LIMITED: "rate limited",
    ErrorKind.CONTEXT_TOO_LONG: "prompt too long for the model",
    ErrorKind.UNREACHABLE: "server unreachable",
    ErrorKind.CONFIGURATION: "model not configured",
    ErrorKind.BAD_REQUEST: "request refused by the server",
    ErrorKind.INVALID_OUTPUT: INVALID_TWICE,
}


@dataclass(frozen=True)
class Ballot:
    """One seat's vote, or why it did not come."""

    vote: Vote | None
    missing: str | None = None

    def payload(self, seat_id: str) -> dict[str, JsonValue]:
        """The ledger's VOTE_CAST: `vote` stays the field it was (null: no vote came)."""
        if self.vote is not None:
            return {"seat": seat_id, "vote": self.vote.vote}
        return {"seat": seat_id, "vote": None, "missing": self.missing}


def missing_reason(outcome: CallOutcome) -> str:
    """Why a failed call gave no vote, in a few words: "timed out", "server error", ..."""
    kind = outcome.error_kind or ErrorKind.INVALID_OUTPUT.value
    return _FAILED.get(kind, kind.replace("_", " "))


async def vote(run: Run) -> None:
    """Every valid seat votes at once; the record every later phase reads gets the votes,
    and each seat whose vote did not come says why."""
    run.progress("vote", None, "started")
    transcript = run.transcript.text()
    task = prompts.vote_task([(s.label, run.records[s.seat_id].assessment) for s in run.valid()])

    async def one(seat: Seat, warm: asyncio.Event, leader: bool) -> None:
        record = run.records[seat.seat_id]
        try:
            ballot = await _ballot(run, seat, transcript, task, warm, leader)
        except CostLimitReached as stop:  # the council stops; no vote is recorded for it
            record.state, record.vote_missing = SeatState.NO_VOTE, f"stopped by {stop.refusal.cap}"
            raise
        record.vote = ballot.vote
        if ballot.vote is None:
            record.state, record.vote_missing = SeatState.NO_VOTE, ballot.missing
        run.writer.append(
            EventKind.VOTE_CAST, ballot.payload(seat.seat_id), step=f"vote_cast/{seat.seat_id}"
        )

    await in_parallel(run.valid(), one)
    voters = {s.seat_id: run.records[s.seat_id] for s in run.valid()}
    votes = {seat_id: r.vote for seat_id, r in voters.items()}
    missing = {seat_id: r.vote_missing for seat_id, r in voters.items()}
    run.transcript.add(votes_section(run.order, votes, missing))


async def _ballot(
    run: Run, seat: Seat, transcript: str, task: str, warm: asyncio.Event, leader: bool
) -> Ballot:
    """One seat's vote call, re-asked once on an invalid answer (steps "vote/<seat>/0",
    then "vote/<seat>/0/1")."""
    outcome = await answered(
        run,
        seat,
        prompts.VOTE_TOOL,
        transcript,
        prompts.seat_brief(seat, run.valid()),
        task,
        f"vote/{seat.seat_id}/0",
        warm,
        leader,
    )
    if outcome.ok:
        answer = outcome.output
        return Ballot(answer) if isinstance(answer, Vote) else Ballot(None, "not a vote")
    if not outcome.invalid:
        return Ballot(None, missing_reason(outcome))
    return Ballot(None, INVALID_TWICE)
