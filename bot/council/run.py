"""A deliberation's run state, and the helpers every phase uses: the calls in parallel
(`in_parallel`), one structured call with its re-ask (`answered`, `structured`, `reasked`),
a seat's report. A protocol's own state rides in one slot (`Run.own_state`), so the run
names no protocol.

The engine builds a `Run` from the convened seats and hands it to each phase of the
protocol (`bot.council.phases`); every model call goes through the ledger (`SeatCaller`).
"""

from __future__ import annotations

import asyncio
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from typing import Any, TypeVar

from pydantic import BaseModel

from bot.council import prompts
from bot.council.advisory import (
    JudgeRecord,
    Resolution,
    RoundRecord,
    SeatReport,
    SeatState,
    ShiftRecord,
)
from bot.council.calls import Accounts, CallOutcome, CostLimitReached, SeatCaller
from bot.council.convene import Convened
from bot.council.findings import FindingKey
from bot.council.ledger import StepWriter
from bot.council.protocols import ANSWER_TRIES, Protocol, protocol
from bot.council.request import DeliberationRequest
from bot.council.resolution import ResolutionResult
from bot.council.schemas import Assessment, Synthesis, Vote
from bot.council.seats import Seat
from bot.council.transcript import Transcript
from bot.providers import Message, ModelCall, OutputTool

__all__ = [
    "Progress",
    "Run",
    "SeatRecord",
    "Stop",
    "answered",
    "in_parallel",
    "reasked",
    "seat_report",
    "structured",
]

# How a deliberation ended early, or its outcome: a resolution (None: none reached) and why.
Stop = tuple[Resolution | None, str | None]
# phase, seat, status, label (who the seat is, for a person watching)
Progress = Callable[..., None]
State = TypeVar("State")


@dataclass
class SeatRecord:
    seat: Seat
    state: SeatState = SeatState.OK
    error: str | None = None
    assessment: Assessment | None = None
    vote: Vote | None = None
    vote_missing: str | None = None  # why no vote came (bot.council.phases.vote)
    # The brief's lenses the kept assessment does not score.
    unscored: list[str] = field(default_factory=list)


@dataclass
class Run:
    request: DeliberationRequest
    convened: Convened
    caller: SeatCaller
    writer: StepWriter  # the ledger, one transaction per phase step
    accounts: Accounts
    system: list[Any]
    records: dict[str, SeatRecord]
    # Tells a person watching what the phase is doing: (phase, seat, status, label).
    progress: Progress = field(default=lambda *_: None)
    transcript: Transcript = field(default_factory=Transcript)
    rounds: list[RoundRecord] = field(default_factory=list)
    shifts: list[ShiftRecord] = field(default_factory=list)
    judged: list[JudgeRecord] = field(default_factory=list)
    peer_ranking: list[str] = field(default_factory=list)
    # The chair's merge groups of the seats' findings (None: no chair answer, so the
    # findings merge by their wording; see bot.council.findings).
    merge_groups: list[list[FindingKey]] | None = None
    resolution: ResolutionResult | None = None
    # What the model strengths did on a divergence (bot.council.strengths), for the
    # recommendation; None: nothing to weigh.
    weighting: str | None = None
    synthesis: Synthesis | None = None
    notes: list[str] = field(default_factory=list)
    # The protocol's own run state (`own_state`), made by its phases; None until then.
    own: object | None = None

    @property
    def protocol(self) -> Protocol:
        return protocol(self.request.protocol)

    def own_state(self, kind: type[State], make: Callable[[], State]) -> State:
        """The protocol's own run state, made by `make` the first time it is asked for."""
        if self.own is None:
            self.own = make()
        if not isinstance(self.own, kind):
            raise TypeError(f"the run holds a {type(self.own).__name__}, not a {kind.__name__}")
        return self.own

    @property
    def order(self) -> list[Seat]:
        """Seats in the stored anonymized member order."""
        by_id = {s.seat_id: s for s in self.convened.seats}
        return [by_id[i] for i in self.convened.order]

    def valid(self) -> list[Seat]:
        return [
            s
            for s in self.order
            if self.records[s.seat_id].assessment is not None
            and self.records[s.seat_id].state in (SeatState.OK, SeatState.NO_VOTE)
        ]

    def call(
        self,
        seat: Seat,
        tool: OutputTool,
        transcript: str,
        brief: str,
        task: str,
        *,
        extra: Sequence[Message] = (),
    ) -> ModelCall[Any]:
        return ModelCall(
            system=self.system,
            messages=[*prompts.messages(transcript, brief, task), *extra],
            output=tool,
            tools=prompts.tools_for(self.request.protocol),
            temperature=seat.temperature,
            max_tokens=tool.output_tokens(self.request.max_tokens),
            deadline_s=self.request.assessment_timeout_s,
            label=f"{seat.seat_id}/{tool.name}",
        )


def reasked(outcome: CallOutcome, reason: str | None) -> list[Message]:
    """The turns of a re-ask (every phase's): the answer, then why it is asked again. An
    answer cut off at the output limit is asked for a shorter one (the same answer would be
    cut off again)."""
    if outcome.truncated:
        ask = prompts.reask_shorter()
    else:
        ask = prompts.reask(reason or "the answer was incomplete")
    return [
        Message(role="assistant", content=outcome.text or "(no answer)"),
        Message(role="user", content=ask),
    ]


async def answered(
    run: Run,
    seat: Seat,
    tool: OutputTool,
    transcript: str,
    brief: str,
    task: str,
    step: str,
    warm: asyncio.Event | None = None,
    leader: bool = False,
) -> CallOutcome:
    """One structured call, re-asked on an invalid answer (`ANSWER_TRIES` in all; steps
    `step`, then `step/1`): the answer, a failure, or the last invalid answer."""
    extra: list[Message] = []
    for attempt in range(ANSWER_TRIES):
        call = run.call(seat, tool, transcript, brief, task, extra=extra)
        outcome = await run.caller.call(
            seat,
            f"{step}/{attempt}" if attempt else step,
            call,
            warm=warm if attempt == 0 else None,
            leader=leader,
        )
        if outcome.ok or not outcome.invalid:
            return outcome
        extra = reasked(outcome, outcome.validation_error or "invalid answer")
    return outcome


async def structured(
    run: Run,
    seat: Seat,
    tool: OutputTool,
    transcript: str,
    brief: str,
    task: str,
    step: str,
    warm: asyncio.Event | None = None,
    leader: bool = False,
) -> BaseModel | None:
    """One structured call with a single re-ask on an invalid answer; None: no valid one."""
    outcome = await answered(run, seat, tool, transcript, brief, task, step, warm, leader)
    return outcome.output if outcome.ok else None


def seat_report(record: SeatRecord) -> SeatReport:
    seat = record.seat
    return SeatReport(
        seat_id=seat.seat_id,
        label=seat.label,
        persona_id=seat.persona_id,
        persona_name=seat.persona_name,
        division=seat.division,
        model=seat.model,
        state=record.state,
        error=record.error,
        assessment=record.assessment,
        vote=record.vote,
        vote_missing=record.vote_missing,
        score=seat.score,
        lenses=list(seat.lenses),
        unscored_lenses=list(record.unscored),
    )


async def in_parallel(
    seats: Sequence[Seat],
    work: Callable[[Seat, asyncio.Event, bool], Any],
) -> None:
    """Run `work` for every seat at once; per model, one leader goes first and the rest
    start as soon as its response began (that is when its cache entry becomes readable).

    A seat stopped by a cost cap does not cancel the others: the calls that fit run to the
    end and their answers are kept; the first stop is raised once all are done."""
    warm: dict[str, asyncio.Event] = {}
    stops: list[CostLimitReached] = []

    async def seat_work(seat: Seat, event: asyncio.Event, leader: bool) -> None:
        try:
            await work(seat, event, leader)
        except CostLimitReached as stop:
            stops.append(stop)

    try:
        async with asyncio.TaskGroup() as group:
            for seat in seats:
                leader = seat.model not in warm
                event = warm.setdefault(seat.model, asyncio.Event())
                group.create_task(seat_work(seat, event, leader))
    except BaseExceptionGroup as failed:
        # Surface the first error itself (a bug) rather than the group.
        raise failed.exceptions[0] from None
    if stops:
        raise stops[0]
