"""The discussion: rounds in which every member answers the others, and, where the protocol
is judged, a step-back judge after each round who decides whether it goes on."""

from __future__ import annotations

import asyncio

from bot.council import prompts
from bot.council.advisory import JudgeRecord, RoundMessage, RoundRecord, ShiftRecord
from bot.council.calls import CostLimitReached
from bot.council.ledger import EventKind
from bot.council.protocols import discussion_rounds
from bot.council.protocols.debate.record import positions_section
from bot.council.protocols.debate.state import DebateState, debate_state, mode_rule
from bot.council.run import Run, in_parallel, structured
from bot.council.schemas import DiscussionMessage, DiscussionReply, JudgeDecision
from bot.council.seats import Seat
from bot.council.transcript import judge_section, round_section

__all__ = ["discuss"]


async def discuss(run: Run) -> None:
    mode = mode_rule(run)
    judged = mode is not None and mode.judged
    # Only a judged protocol reports the cycles (its own state); another holds them here.
    state = debate_state(run) if mode is not None else DebateState()
    rounds = discussion_rounds(
        run.request.protocol,
        configured=run.request.board.discussion_rounds,
        mode=run.request.debate_mode,
    )
    state.exit = "max_cycles" if judged else "single_cycle"
    participants = run.valid()
    focus: str | None = None
    for round_no in range(1, rounds + 1):
        state.cycles = round_no
        run.progress("discuss", None, f"round {round_no}")
        replies: dict[str, list[DiscussionMessage]] = {}
        try:
            await _discussion_round(run, round_no, participants, focus, replies, state)
        except CostLimitReached as stop:
            stop.where = (
                f"in discussion round {round_no}, after {len(replies)} of "
                f"{len(participants)} replies"
            )
            raise
        finally:
            _record_round(run, round_no, replies, state)  # what was said, even if cut short
        run.writer.append(
            EventKind.ROUND_ENDED, {"round": round_no}, step=f"round_ended/{round_no}"
        )
        await run.writer.flush()  # a round is a phase step
        if not judged:
            continue
        decision = await _judge(run, round_no, rounds)
        if decision is None or decision.decision == "CONVERGED":
            state.exit = "no_judge_answer" if decision is None else "converged"
            break
        focus = decision.focus
        if decision.decision == "PARTIAL":
            named = set(decision.redebate_members)
            participants = [s for s in run.valid() if s.label in named] or run.valid()
        else:
            participants = run.valid()


async def _discussion_round(
    run: Run,
    round_no: int,
    participants: list[Seat],
    focus: str | None,
    replies: dict[str, list[DiscussionMessage]],
    state: DebateState,
) -> None:
    """One round; each reply lands in `replies` (and the state's) as it comes in."""
    transcript = run.transcript.text()
    task = prompts.discuss_task(round_no, focus)

    async def one(seat: Seat, warm: asyncio.Event, leader: bool) -> None:
        reply = await structured(
            run,
            seat,
            prompts.DISCUSS_TOOL,
            transcript,
            prompts.seat_brief(seat, run.valid()),
            task,
            f"discuss/{seat.seat_id}/{round_no}",
            warm,
            leader,
        )
        if isinstance(reply, DiscussionReply):
            replies[seat.seat_id] = reply.messages
            state.replies.setdefault(round_no, {})[seat.seat_id] = reply

    await in_parallel(participants, one)


def _record_round(
    run: Run, round_no: int, replies: dict[str, list[DiscussionMessage]], state: DebateState
) -> None:
    run.transcript.add(round_section(round_no, run.order, replies))
    if mode_rule(run) is not None:  # a debate: where each panelist stands now
        stood = positions_section(round_no, run.order, state.replies.get(round_no, {}))
        if stood:
            run.transcript.add(stood)
    messages = [
        RoundMessage(seat_id=s.seat_id, message=m)
        for s in run.order
        for m in replies.get(s.seat_id, ())
    ]
    run.rounds.append(RoundRecord(round=round_no, messages=messages))
    for item in messages:
        if item.message.type == "SHIFT":
            run.shifts.append(
                ShiftRecord(
                    seat_id=item.seat_id,
                    round=round_no,
                    original_position=item.message.original_position,
                    new_position=item.message.new_position,
                    changed_by=item.message.changed_by,
                )
            )


async def _judge(run: Run, cycle: int, max_cycles: int) -> JudgeDecision | None:
    judge = run.convened.judge
    discussion = run.protocol.discussion
    if judge is None or discussion is None:
        return None
    decision = await structured(
        run,
        judge,
        prompts.JUDGE_TOOL,
        run.transcript.text(),
        prompts.judge_brief(judge),
        prompts.judge_task(cycle, max_cycles),
        f"judge/{judge.seat_id}/{cycle}",
    )
    if not isinstance(decision, JudgeDecision):
        return None
    run.judged.append(JudgeRecord(cycle=cycle, decision=decision))
    run.transcript.add(
        judge_section(
            cycle, decision.decision, decision.reasoning, decision.focus, decision.option_c
        )
    )
    run.writer.append(
        EventKind.JUDGED,
        {"cycle": cycle, "decision": decision.decision},
        step=f"judged/{cycle}",
    )
    await run.writer.flush()
    return decision
