"""The assessments and the completeness gate: every seat assesses at once; an incomplete
answer is re-asked up to twice; the quorum is checked after."""

from __future__ import annotations

import asyncio

from bot.council import prompts
from bot.council.advisory import Resolution, SeatState
from bot.council.calls import CallOutcome, CostLimitReached
from bot.council.gate import Gated, gate_assessment
from bot.council.protocols import ASSESS_TRIES
from bot.council.run import Run, SeatRecord, Stop, in_parallel, reasked
from bot.council.schemas import Assessment
from bot.council.seats import Seat
from bot.council.transcript import assessments_section
from bot.providers import Message

__all__ = ["MAX_REASKS", "assess", "gate"]

MAX_REASKS = ASSESS_TRIES - 1


async def assess(run: Run) -> None:
    run.progress("assess", None, "started")
    task = prompts.assess_task(run.request.topic, questions=run.protocol.discusses)
    await in_parallel(
        run.order, lambda seat, warm, leader: _assess_seat(run, seat, task, warm, leader)
    )
    if not run.protocol.discusses:  # nobody would answer them: questions are ignored
        for record in run.records.values():
            if record.assessment is not None and record.assessment.questions:
                record.assessment = record.assessment.model_copy(update={"questions": []})
    run.transcript.add(
        assessments_section(
            run.order,
            {
                seat_id: record.assessment
                for seat_id, record in run.records.items()
                if record.assessment is not None
            },
        )
    )


async def _assess_seat(run: Run, seat: Seat, task: str, warm: asyncio.Event, leader: bool) -> None:
    record = run.records[seat.seat_id]
    brief = prompts.seat_brief(seat, run.order)
    extra: list[Message] = []
    # The best real answer that left lenses unscored: kept when no re-ask completes it.
    partial: Gated | None = None
    for attempt in range(MAX_REASKS + 1):
        call = run.call(seat, prompts.ASSESS_TOOL, "", brief, task, extra=extra)
        try:
            outcome = await run.caller.call(
                seat,
                f"assess/{seat.seat_id}/{attempt}",
                call,
                warm=warm if attempt == 0 else None,
                leader=leader,
            )
        except CostLimitReached as stop:
            if partial is not None:
                _keep(record, partial)
                raise
            record.state = SeatState.SKIPPED if attempt == 0 else SeatState.INVALID
            record.error = f"not {'called' if attempt == 0 else 're-asked'}: {stop.refusal}"
            raise
        reason, gated = _gate_reason(outcome, seat)
        if gated is not None and reason is None:
            _keep(record, gated)
            return
        if partial is not None and _no_progress(partial, gated):  # no lens more scored
            _keep(record, _best_partial(partial, gated) or partial)
            return
        partial = _best_partial(partial, gated)
        if not outcome.ok and not outcome.invalid:
            if partial is not None:  # a re-ask failed: the earlier answer stands
                _keep(record, partial)
                return
            record.state = (
                SeatState.TIMED_OUT if outcome.error_kind == "timeout" else SeatState.ERROR
            )
            record.error = outcome.error
            return
        run.progress("assess", seat.seat_id, "re-asked", seat.persona_name)
        extra = reasked(outcome, reason)
    if partial is not None:  # a real answer, its missing lenses not scored
        _keep(record, partial)
        return
    record.state = SeatState.INVALID
    record.error = f"incomplete after {MAX_REASKS} re-asks: {reason}"


async def gate(run: Run) -> Stop | None:
    """The quorum after the assessments (each answer was gated as it came in)."""
    if len(run.valid()) < 2:
        return Resolution.NO_QUORUM, _no_quorum_reason(run)
    return None


def _gate_reason(outcome: CallOutcome, seat: Seat) -> tuple[str | None, Gated | None]:
    """Why to re-ask the answer (None: it is complete), and the completeness gate's
    judgement of it when it is a valid assessment."""
    if outcome.invalid:
        return outcome.validation_error or "the answer did not validate", None
    if not outcome.ok:
        return outcome.error or "the call failed", None
    assert isinstance(outcome.output, Assessment)
    gated = gate_assessment(outcome.output, seat.lenses)
    return gated.reason, gated


def _no_progress(partial: Gated, gated: Gated | None) -> bool:
    """A re-asked answer that leaves as many lenses unscored as the earlier one: the model
    does not do what the re-ask asks, and another re-ask would cost another answer (on a
    CPU server, minutes) for the same one."""
    if gated is None or not (partial.answered and gated.answered):
        return False
    return bool(gated.missing) and len(gated.missing) >= len(partial.missing)


def _best_partial(kept: Gated | None, gated: Gated | None) -> Gated | None:
    """The real answer to keep if no re-ask completes it: the one that misses the fewest
    lenses (the later one on a tie)."""
    if gated is None or not gated.answered:
        return kept
    if kept is None or len(gated.missing) <= len(kept.missing):
        return gated
    return kept


def _keep(record: SeatRecord, gated: Gated) -> None:
    """Keep a gated answer: its lenses renamed to the brief's, the ones it misses unscored."""
    record.assessment = gated.assessment
    record.unscored = list(gated.missing)


def _no_quorum_reason(run: Run) -> str:
    """Why there is no quorum. Every rendering puts the resolution's title ("The council
    could not convene") before the reason, so the reason does not say it again."""
    states = ", ".join(
        f"{s.label} ({s.persona_name}, {s.model}): {run.records[s.seat_id].state.value}"
        for s in run.order
    )
    return f"Fewer than 2 valid assessments. Seats: {states}"
