"""The deliberation engine: convene, assess, gate, discuss, vote, resolve, synthesize.

A protocol is a choice of phases over one run state (`_Run`): the engine runs the phases
its entry in `bot.council.protocols` lists, one method per phase (`Engine._steps`). Every
model call goes through the ledger (`SeatCaller`), so an interrupted deliberation resumes
where it stopped. The engine does no I/O of its own beyond the provider interface and the
ledger.
"""

from __future__ import annotations

import asyncio
import time
from collections.abc import Awaitable, Callable, Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any, Literal

from pydantic import BaseModel, ConfigDict, Field

from bot.council import critique, prompts, voting
from bot.council.advisory import (
    Advisory,
    JudgeRecord,
    Resolution,
    RoundMessage,
    RoundRecord,
    SeatReport,
    SeatState,
    ShiftRecord,
)
from bot.council.board import BoardConfig, PinnedSeat
from bot.council.budget import Budget, InMemoryBudget
from bot.council.calls import (
    Accounts,
    CostLimitReached,
    Outcome,
    ProviderSource,
    SeatCaller,
    TokenBudget,
    ledger_tokens,
)
from bot.council.convene import Convened, ConveneRequest, convene
from bot.council.debate import (
    DebateRecord,
    build_report,
    choice_options,
    outside_model,
    outside_section,
    positions_section,
)
from bot.council.debate_report import DebateReport, ExitReason, OutsideRecord
from bot.council.findings import (
    FindingKey,
    merge_candidates,
    merge_findings,
    normalize_path,
)
from bot.council.gate import Gated, gate_assessment
from bot.council.ledger import EventKind, Ledger, LedgerEvent, StepWriter
from bot.council.merge_groups import resolve_groups
from bot.council.partial import limited_advisory, partial_synthesis
from bot.council.personas import Catalog
from bot.council.protocols import (
    ANSWER_TRIES,
    ASSESS_TRIES,
    DebateModeRule,
    Phase,
    Protocol,
    ProtocolName,
    debate_mode,
    discussion_rounds,
    protocol,
)
from bot.council.reserving import AnswerSizes
from bot.council.resolution import (
    ResolutionResult,
    resolve_assessments,
    resolve_votes,
    settled_conditions,
    top_findings,
)
from bot.council.schemas import (
    Assessment,
    DiscussionMessage,
    DiscussionReply,
    Finding,
    JudgeDecision,
    MergeDecision,
    OutsideOpinion,
    PeerRanking,
    Synthesis,
    Vote,
)
from bot.council.scoring import PersonaRecord, ReviewSignals
from bot.council.seats import Seat
from bot.council.strengths import weigh_resolution
from bot.council.transcript import (
    Transcript,
    assessments_section,
    judge_section,
    round_section,
)
from bot.council.verdicts import settled_synthesis
from bot.council.voting import reasked
from bot.providers import Message, ModelCall, OutputTool, ProviderError
from bot.tokens import TokenEstimator

MAX_REASKS = ASSESS_TRIES - 1


class DeliberationRequest(BaseModel):
    model_config = ConfigDict(extra="forbid", frozen=True)

    deliberation_id: str
    topic: str
    protocol: ProtocolName = "board"
    context: str  # the packed, fenced context every seat reads
    signals: ReviewSignals = Field(default_factory=lambda: ReviewSignals(topic=""))
    models: list[str] = Field(min_length=1)
    allowed_models: list[str] = Field(default_factory=list)
    chair_model: str | None = None
    board: BoardConfig = Field(default_factory=BoardConfig)
    pinned: list[PinnedSeat] = Field(default_factory=list)
    max_cost_usd: float | None = Field(default=None, gt=0)
    assessment_timeout_s: float = Field(default=300.0, gt=0)
    language: str | None = None
    notes: list[str] = Field(default_factory=list)
    # Every answer's ceiling: a call asks its tool's budget, at most this (then clipped).
    max_tokens: int = Field(default=8192, ge=256)
    # A cap in tokens (input, cache writes and reads, output) over the deliberation, beside
    # the dollar caps: what bounds a model with no known price. None: no token cap.
    max_spend_tokens: int | None = Field(default=None, gt=0)
    # debate: "quick" (one cycle, no judge), "standard" (a judge, up to 2 cycles), "full"
    # (up to 3 cycles and an outside opinion); None: as the protocol table plans it.
    debate_mode: Literal["quick", "standard", "full"] | None = None
    # board: personas seated (`+persona`) or kept off (`-persona`) for this run.
    board_add: list[str] = Field(default_factory=list)
    board_remove: list[str] = Field(default_factory=list)
    # The repo's `chair_votes`: the chair model also sits as a voting member.
    chair_votes: bool = False
    # The operator's COUNCIL_MODEL_STRENGTHS: model -> areas (concepts) it is strong in,
    # weighed on a divergence (bot.council.strengths).
    model_strengths: dict[str, list[str]] = Field(default_factory=dict)


# How a deliberation ended early, or its outcome: a resolution (None: none reached) and why.
_Stop = tuple[Resolution | None, str | None]


@dataclass
class ProgressEvent:
    phase: str
    seat_id: str | None
    status: str
    # Who the seat is, for a person watching (its persona's name, "Chair", ...).
    label: str | None = None


@dataclass
class _SeatRecord:
    seat: Seat
    state: SeatState = SeatState.OK
    error: str | None = None
    assessment: Assessment | None = None
    vote: Vote | None = None
    vote_missing: str | None = None  # why no vote came (bot.council.voting)
    # The brief's lenses the kept assessment does not score.
    unscored: list[str] = field(default_factory=list)


@dataclass
class _Run:
    request: DeliberationRequest
    convened: Convened
    caller: SeatCaller
    writer: StepWriter  # the ledger, one transaction per phase step
    accounts: Accounts
    system: list[Any]
    records: dict[str, _SeatRecord]
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
    # debate: every reply by cycle and seat, the cycles held and why they stopped, and
    # the outside opinion (full mode).
    replies: dict[int, dict[str, DiscussionReply]] = field(default_factory=dict)
    cycles: int = 0
    exit: ExitReason = "max_cycles"
    outside: OutsideRecord | None = None
    # strategies: the critique rounds' answers and what they decided (bot.council.critique).
    strategies: critique.StrategiesState | None = None

    @property
    def protocol(self) -> Protocol:
        return protocol(self.request.protocol)

    @property
    def mode(self) -> DebateModeRule | None:
        """The debate's mode (the request's, else the default); None for other protocols."""
        return debate_mode(self.request.debate_mode) if self.protocol.judged else None

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


def _convene_request(request: DeliberationRequest) -> ConveneRequest:
    return ConveneRequest(
        deliberation_id=request.deliberation_id,
        protocol=request.protocol,
        topic=request.topic,
        signals=request.signals,
        models=request.models,
        allowed_models=request.allowed_models,
        chair_model=request.chair_model,
        board_size=request.board.default_size,
        board_min_size=request.board.min_size,
        pinned=[(p.persona, p.model) for p in request.pinned],
        board_add=list(request.board_add),
        board_remove=list(request.board_remove),
        chair_votes=request.chair_votes,
        system=prompts.system_blocks(
            request.protocol, request.context, language=request.language, mode=request.debate_mode
        ),
        max_tokens=request.max_tokens,
        deadline_s=request.assessment_timeout_s,
    )


class Engine:
    def __init__(
        self,
        providers: ProviderSource,
        catalog: Catalog,
        ledger: Ledger,
        *,
        track_records: Sequence[PersonaRecord] = (),
        on_progress: Callable[[ProgressEvent], None] | None = None,
        estimator: TokenEstimator | None = None,
        answer_sizes: AnswerSizes | None = None,
    ) -> None:
        self._providers = providers
        self._catalog = catalog
        self._ledger = ledger
        self._records = list(track_records)
        self._on_progress = on_progress
        # Estimates each call's input for its reservation; None: the process's estimator.
        self._estimator = estimator
        # The models' recent answer sizes, which reservations follow (bot.council.reserving);
        # None: none known, every call reserves its worst case.
        self._answer_sizes = answer_sizes

    def _progress(
        self, phase: str, seat_id: str | None, status: str, label: str | None = None
    ) -> None:
        if self._on_progress is not None:
            self._on_progress(ProgressEvent(phase, seat_id, status, label))

    async def deliberate(
        self, request: DeliberationRequest, *, budget: Budget | None = None
    ) -> Advisory:
        """Run the deliberation (resuming what its ledger holds). Every call reserves its
        cost with `budget` first (bot.council.reserving); None: an in-memory budget for
        `request.max_cost_usd` that counts what the ledger's recorded calls cost."""
        started = time.monotonic()
        # One read of what the ledger holds: the spend so far, and whether any step ran.
        events = await self._ledger.events(request.deliberation_id)
        writer = StepWriter(self._ledger, request.deliberation_id, events)
        if budget is None:
            budget = InMemoryBudget(request.max_cost_usd, spent_usd=_paid(events))
        accounts = Accounts()
        caller = SeatCaller(
            request.deliberation_id,
            self._providers,
            writer,
            accounts,
            self._progress,
            budget=budget,
            tokens=TokenBudget(request.max_spend_tokens, spent_tokens=_paid_tokens(events)),
            estimator=self._estimator,
            sizes=self._answer_sizes,
        )
        try:
            convened = await self._convene(request, caller, writer)
        except CostLimitReached as stop:
            stop.where = stop.where or "before the panel was designed"
            await writer.flush()
            return await self._stopped_convening(request, accounts, stop, started, writer)
        except BaseException:
            await writer.flush_quietly()
            raise
        run = _Run(
            request=request,
            convened=convened,
            caller=caller,
            writer=writer,
            accounts=accounts,
            system=prompts.system_blocks(
                request.protocol,
                request.context,
                language=request.language,
                mode=request.debate_mode,
            ),
            records={s.seat_id: _SeatRecord(s) for s in convened.seats},
            notes=[*request.notes, *convened.notes],
        )
        outcome: Resolution | None = None
        reason: str | None = None
        try:
            outcome, reason = await self._phases(run)
        except CostLimitReached as stop:
            outcome, reason = Resolution.COST_LIMIT, stop.reason()
        try:
            advisory = self._advisory(run, outcome, reason, started)
        except BaseException:
            await writer.flush_quietly()  # the last step's answers are kept
            raise
        return await self._synthesized(advisory, writer)

    async def _synthesized(self, advisory: Advisory, writer: StepWriter) -> Advisory:
        writer.append(
            EventKind.SYNTHESIZED,
            {"advisory": advisory.model_dump(mode="json")},
            step="synthesized",
        )
        await writer.flush()
        return advisory

    def _accepts_temperature(self, model: str) -> bool:
        """Whether `model` takes a temperature (a reference that does not resolve: no)."""
        try:
            return self._providers.capabilities_of(model).accepts_temperature
        except ProviderError:
            return False

    async def _stopped_convening(
        self,
        request: DeliberationRequest,
        accounts: Accounts,
        stop: CostLimitReached,
        started: float,
        writer: StepWriter,
    ) -> Advisory:
        """A cap stopped the one call of convening (the debate's panel design)."""
        usage = accounts.usage.model_copy(
            update={"wall_ms": int((time.monotonic() - started) * 1000)}
        )
        return await self._synthesized(
            Advisory(
                deliberation_id=request.deliberation_id,
                protocol=request.protocol,
                topic=request.topic,
                resolution=Resolution.COST_LIMIT,
                notes=[*request.notes, *accounts.notes],
                usage=usage,
                reason=stop.reason(),
            ),
            writer,
        )

    async def preview(self, request: DeliberationRequest) -> Convened | None:
        """The seats `deliberate` would convene for `request`, with no model call and no
        ledger write (the dry run); None where a model designs them (debate)."""
        if protocol(request.protocol).seats.convene == "designed":
            return None
        return await convene(
            _convene_request(request),
            self._catalog,
            self._records,
            None,
            accepts_temperature=self._accepts_temperature,
        )

    async def _convene(
        self, request: DeliberationRequest, caller: SeatCaller, writer: StepWriter
    ) -> Convened:
        recorded = await writer.step("convened")
        if recorded is not None:
            return Convened.model_validate(recorded.payload)
        self._progress("convene", None, "started")
        convened = await convene(
            _convene_request(request),
            self._catalog,
            self._records,
            caller,
            accepts_temperature=self._accepts_temperature,
        )
        writer.append(EventKind.CONVENED, convened.model_dump(mode="json"), step="convened")
        await writer.flush()
        self._progress("convene", None, "done")
        return convened

    def _steps(self) -> Mapping[Phase, Callable[[_Run], Awaitable[_Stop | None]]]:
        """The code of each phase a protocol can list. "convene" runs before the others
        (its result is the run itself); "judge" runs inside the discussion, after each round."""
        return {
            "assess": self._assess,
            "gate": self._gate,
            "discuss": self._discuss,
            "outside": self._outside,
            "critique": lambda run: critique.critique(self, run),
            "reconcile": lambda run: critique.reconcile(self, run),
            "rank": self._rank,
            "vote": lambda run: voting.vote(run, self._progress, _in_parallel),
            "resolve": self._resolve,
            "synthesize": self._synthesize,
        }

    async def _phases(self, run: _Run) -> _Stop:
        steps = self._steps()
        last = run.protocol.phases[-1]
        for phase in run.protocol.phases:
            if phase in ("convene", "judge"):
                continue
            try:
                stop = await steps[phase](run)
            except CostLimitReached as capped:
                capped.where = capped.where or _where_stopped(run, capped.step)
                await run.writer.flush_quietly()
                raise
            except BaseException:
                await run.writer.flush_quietly()  # the answers this step paid for are kept
                raise
            if phase != last:  # the last step's events go with the advisory's
                await run.writer.flush()  # one transaction per phase step
            if stop is not None:
                return stop
        return (run.resolution.resolution if run.resolution else None), None

    # --- assess + completeness gate -------------------------------------------------------

    async def _assess(self, run: _Run) -> None:
        self._progress("assess", None, "started")
        task = prompts.assess_task(run.request.topic, questions=run.protocol.discusses)
        await _in_parallel(
            run.order, lambda seat, warm, leader: self._assess_seat(run, seat, task, warm, leader)
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

    async def _assess_seat(
        self, run: _Run, seat: Seat, task: str, warm: asyncio.Event, leader: bool
    ) -> None:
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
            self._progress("assess", seat.seat_id, "re-asked", seat.persona_name)
            extra = reasked(outcome, reason)
        if partial is not None:  # a real answer, its missing lenses not scored
            _keep(record, partial)
            return
        record.state = SeatState.INVALID
        record.error = f"incomplete after {MAX_REASKS} re-asks: {reason}"

    async def _gate(self, run: _Run) -> _Stop | None:
        """The quorum after the assessments (each answer was gated as it came in)."""
        if len(run.valid()) < 2:
            return Resolution.NO_QUORUM, _no_quorum_reason(run)
        return None

    # --- discuss (+ judge in debate) -------------------------------------------------------

    async def _discuss(self, run: _Run) -> None:
        mode = run.mode
        judged = run.protocol.judged and (mode is None or mode.judged)
        rounds = discussion_rounds(
            run.request.protocol,
            configured=run.request.board.discussion_rounds,
            mode=run.request.debate_mode,
        )
        run.exit = "max_cycles" if judged else "single_cycle"
        participants = run.valid()
        focus: str | None = None
        for round_no in range(1, rounds + 1):
            run.cycles = round_no
            self._progress("discuss", None, f"round {round_no}")
            replies: dict[str, list[DiscussionMessage]] = {}
            try:
                await self._discussion_round(run, round_no, participants, focus, replies)
            except CostLimitReached as stop:
                stop.where = (
                    f"in discussion round {round_no}, after {len(replies)} of "
                    f"{len(participants)} replies"
                )
                raise
            finally:
                self._record_round(run, round_no, replies)  # what was said, even if cut short
            run.writer.append(
                EventKind.ROUND_ENDED, {"round": round_no}, step=f"round_ended/{round_no}"
            )
            await run.writer.flush()  # a round is a phase step
            if not judged:
                continue
            decision = await self._judge(run, round_no, rounds)
            if decision is None or decision.decision == "CONVERGED":
                run.exit = "no_judge_answer" if decision is None else "converged"
                break
            focus = decision.focus
            if decision.decision == "PARTIAL":
                named = set(decision.redebate_members)
                participants = [s for s in run.valid() if s.label in named] or run.valid()
            else:
                participants = run.valid()

    async def _discussion_round(
        self,
        run: _Run,
        round_no: int,
        participants: list[Seat],
        focus: str | None,
        replies: dict[str, list[DiscussionMessage]],
    ) -> None:
        """One round; each reply lands in `replies` as it comes in."""
        transcript = run.transcript.text()
        task = prompts.discuss_task(round_no, focus)

        async def one(seat: Seat, warm: asyncio.Event, leader: bool) -> None:
            reply = await self._structured(
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
                run.replies.setdefault(round_no, {})[seat.seat_id] = reply

        await _in_parallel(participants, one)

    def _record_round(
        self, run: _Run, round_no: int, replies: dict[str, list[DiscussionMessage]]
    ) -> None:
        run.transcript.add(round_section(round_no, run.order, replies))
        if run.mode is not None:  # a debate: where each panelist stands now
            stood = positions_section(round_no, run.order, run.replies.get(round_no, {}))
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

    async def _judge(self, run: _Run, cycle: int, max_cycles: int) -> JudgeDecision | None:
        judge = run.convened.judge
        discussion = run.protocol.discussion
        if judge is None or discussion is None:
            return None
        decision = await self._structured(
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

    # --- debate --full: the outside opinion ------------------------------------------------

    async def _outside(self, run: _Run) -> None:
        """One call to a configured model that is not on the panel, given the debate so
        far, for an independent opinion (full mode only). With a single model there is
        none: the advisory says the debate ran without one."""
        mode = run.mode
        if mode is None or not mode.outside_opinion:
            return
        model = outside_model(
            run.request.models, [s.model for s in run.order], run.request.chair_model
        )
        if model is None:
            note = (
                "Full debate without an outside opinion: only one model is configured, "
                "so no model outside the panel could give one."
            )
            run.outside = OutsideRecord(note=note)
            run.notes.append(note)
            return
        seat = Seat(
            seat_id="outside",
            label="Outside reviewer",
            persona_id="outside",
            persona_name="Outside reviewer",
            division="council",
            persona_text="Outside reviewer",
            lenses=("independent opinion",),
            model=model,
            role="outside",
        )
        self._progress("outside", None, "started", seat.persona_name)
        opinion = await self._structured(
            run,
            seat,
            prompts.OUTSIDE_TOOL,
            run.transcript.text(),
            prompts.outside_brief(seat),
            prompts.outside_task(run.request.topic),
            f"outside/{seat.seat_id}/0",
        )
        if isinstance(opinion, OutsideOpinion):
            seated = model in {s.model for s in run.order}
            run.outside = OutsideRecord(
                model=model,
                opinion=opinion,
                note=f"{model} also seats a panelist: every configured model is on the panel."
                if seated
                else None,
            )
            run.transcript.add(outside_section(opinion))
        else:
            run.outside = OutsideRecord(model=model, note=f"{model} gave no valid opinion.")

    # --- council: anonymized peer ranking ---------------------------------------------------

    async def _rank(self, run: _Run) -> None:
        if not run.protocol.ranks(len(run.valid())):
            return
        transcript = run.transcript.text()
        ballots: dict[str, list[str]] = {}

        async def one(seat: Seat, warm: asyncio.Event, leader: bool) -> None:
            others = [s.label for s in run.valid() if s.seat_id != seat.seat_id]
            ranking = await self._structured(
                run,
                seat,
                prompts.RANK_TOOL,
                transcript,
                prompts.seat_brief(seat, run.valid()),
                prompts.rank_task(others),
                f"rank/{seat.seat_id}/0",
                warm,
                leader,
            )
            if isinstance(ranking, PeerRanking):
                ballots[seat.seat_id] = [label for label in ranking.ranking if label in others]

        await _in_parallel(run.valid(), one)
        run.peer_ranking = _borda(run, ballots)

    # --- resolve ---------------------------------------------------------------------------

    async def _resolve(self, run: _Run) -> _Stop | None:
        """Deterministic: from the votes, or from the assessment verdicts (after the chair
        said which findings are one issue)."""
        valid = [run.records[s.seat_id] for s in run.valid()]
        per_seat = [
            (r.seat.seat_id, r.assessment.findings) for r in valid if r.assessment is not None
        ]
        capped = await self._merge(run, per_seat)
        # Critical findings no approval answered keep the result from plain APPROVED.
        findings = merge_findings(per_seat, run.merge_groups)
        if run.protocol.resolution == "votes":
            run.resolution = resolve_votes([r.vote for r in valid], findings)
        else:
            run.resolution = resolve_assessments([r.assessment for r in valid], findings)
        run.weighting = weigh_resolution(
            run.resolution,
            [(r.seat.model, r.assessment, r.vote) for r in valid],
            by_votes=run.protocol.resolution == "votes",
            strengths=run.request.model_strengths,
            signals=run.request.signals,
            findings=findings,
        )
        run.resolution = critique.resolve(run, run.resolution)  # strategies: the matrix
        run.writer.append(
            EventKind.RESOLVED, run.resolution.model_dump(mode="json"), step="resolved"
        )
        if capped is not None:  # no later call would start: stop with the findings merged
            raise capped
        if run.resolution.resolution == Resolution.NO_QUORUM:
            return Resolution.NO_QUORUM, "fewer than 2 members voted"
        return None

    async def _merge(
        self, run: _Run, per_seat: Sequence[tuple[str, Sequence[Finding]]]
    ) -> CostLimitReached | None:
        """One chair call that groups the findings that are one issue, made only when two
        findings share a file and overlapping lines or read alike elsewhere; the groups are
        checked (`resolve_groups`), a refusal said in the notes. No answer (failed, invalid
        after the re-ask, or a cap refused the call) leaves `run.merge_groups` None: the
        findings then merge by their wording. A cap's refusal is returned, to stop the
        council once the resolution is recorded."""
        candidates = merge_candidates(per_seat)
        if not candidates:
            return None
        chair = run.convened.chair
        labels = {s.seat_id: s.label for s in run.order}
        task = prompts.merge_task(
            [
                (
                    c.id,
                    labels.get(c.seat, c.seat),
                    normalize_path(c.finding.path),
                    _lines(c.finding),
                    c.finding.severity,
                    c.finding.title,
                    c.finding.detail,
                )
                for c in candidates
            ]
        )
        self._progress("merge", None, "started")
        try:
            decision = await self._structured(
                run,
                chair,
                prompts.MERGE_TOOL,
                "",
                prompts.merge_brief(chair),
                task,
                f"merge/{chair.seat_id}/0",
            )
        except CostLimitReached as stop:
            stop.where = "before the chair merged the findings"
            return stop
        if isinstance(decision, MergeDecision):
            chair_groups = resolve_groups(candidates, [g.findings for g in decision.groups])
            run.merge_groups = chair_groups.groups
            run.notes += chair_groups.notes()  # each group the code did not take whole
        else:
            run.notes.append(
                "The chair did not say which findings are the same issue; they were merged "
                "by their wording."
            )
        return None

    # --- synthesize ------------------------------------------------------------------------

    async def _synthesize(self, run: _Run) -> None:
        self._progress("synthesize", None, "started")
        chair = run.convened.chair
        result = run.resolution
        assert result is not None
        # Whether the question is a choice: the debate's panel designer said (and named
        # options of its own: `choice_options`); elsewhere the chair reads the question itself.
        panel = run.convened.panel
        options = choice_options(panel) if panel is not None else []
        choice = bool(options) if panel is not None else None
        synthesis = await self._structured(
            run,
            chair,
            prompts.SYNTH_TOOL,
            run.transcript.text(),
            prompts.chair_brief(chair),
            prompts.synth_task(
                run.request.topic,
                result.resolution.value,
                choice,
                result.all_conditions,
                options=options,
                decision_guide=run.mode is not None,
            ),
            f"synthesize/{chair.seat_id}/0",
        )
        if isinstance(synthesis, Synthesis):
            if choice is False:  # no choice, no tradeoff map: whatever the chair wrote
                synthesis = synthesis.model_copy(update={"tradeoff_map": []})
            # The verdict sentence must say what the resolution says (bot.council.verdicts).
            run.synthesis, replaced = settled_synthesis(
                synthesis,
                result.resolution,
                approvals=result.approvals,
                rejections=result.rejections,
                conditions=len(settled_conditions(result, synthesis)),
            )
            if replaced:
                run.notes.append(
                    "The chair's verdict sentence contradicted the resolution; "
                    "it was replaced by the resolution's own."
                )
        else:
            run.notes.append("The chair's synthesis failed; the record below is complete.")
        if run.synthesis is not None:
            run.synthesis = _council_text(run, run.synthesis)
        elif run.weighting:
            run.notes.append(run.weighting)

    async def _structured(
        self,
        run: _Run,
        seat: Seat,
        tool: OutputTool,
        transcript: str,
        brief: str,
        task: str,
        step: str,
        warm: asyncio.Event | None = None,
        leader: bool = False,
    ) -> BaseModel | None:
        """One structured call with a single re-ask on an invalid answer."""
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
            if outcome.ok:
                return outcome.output
            if not outcome.invalid:
                return None
            extra = reasked(outcome, outcome.validation_error or "invalid answer")
        return None

    # --- the advisory ----------------------------------------------------------------------

    def _advisory(
        self, run: _Run, resolution: Resolution | None, reason: str | None, started: float
    ) -> Advisory:
        seats = [_report(run.records[s.seat_id]) for s in run.order]
        merged = merge_findings(
            [(s.seat_id, s.assessment.findings) for s in seats if s.assessment is not None],
            run.merge_groups,
        )
        lost = [s for s in seats if not s.is_valid]
        result = run.resolution
        usage = run.accounts.usage.model_copy(
            update={"wall_ms": int((time.monotonic() - started) * 1000)}
        )
        advisory = Advisory(
            deliberation_id=run.request.deliberation_id,
            protocol=run.request.protocol,
            topic=run.request.topic,
            resolution=resolution or Resolution.NO_QUORUM,
            confidence=result.confidence if result else 0.0,
            seats=seats,
            findings=merged,
            top_findings=top_findings(merged, seats),
            conditions=settled_conditions(result, run.synthesis) if result else [],
            synthesis=run.synthesis,
            rounds=run.rounds,
            shifts=run.shifts,
            judge_decisions=run.judged,
            peer_ranking=run.peer_ranking,
            notes=[*run.notes, *run.accounts.notes],
            partial=bool(lost),
            missing_perspectives=[f"{s.persona_name} ({s.state.value})" for s in lost],
            usage=usage,
            reason=reason,
            debate=_debate_report(run),
            strategies=critique.report(run),
        )
        # One seat of several answered: a limited advisory (bot.council.partial).
        return limited_advisory(advisory)


def _debate_report(run: _Run) -> DebateReport | None:
    """The debate's report (bot.council.debate); None for the other protocols."""
    mode = run.mode
    if mode is None:
        return None
    valid = run.valid()
    return build_report(
        DebateRecord(
            rule=mode,
            seats=valid,
            assessments={
                s.seat_id: a for s in valid if (a := run.records[s.seat_id].assessment) is not None
            },
            replies=run.replies,
            judged=[j.decision for j in run.judged],
            cycles=run.cycles,
            exit=run.exit,
            panel=run.convened.panel,
            synthesis=run.synthesis,
            outside=run.outside,
            votes={
                s.seat_id: v for s in valid if isinstance(v := run.records[s.seat_id].vote, Vote)
            },
        ),
        committee=run.order,
    )


def _council_text(run: _Run, synthesis: Synthesis) -> Synthesis:
    """The council's own words in the chair's synthesis: the partial-synthesis wording
    (bot.council.partial) and what the model strengths weighed (bot.council.strengths)."""
    synthesis = partial_synthesis(synthesis, [_report(run.records[s.seat_id]) for s in run.order])
    if run.weighting:
        said = f"{synthesis.recommendation.strip()} {run.weighting}".strip()
        synthesis = synthesis.model_copy(update={"recommendation": said})
    return synthesis


def _lines(finding: Finding) -> str:
    """A finding's lines for the chair: "L10", "L10-L14", or "file-wide"."""
    if finding.start_line is None:
        return "file-wide"
    end = finding.end_line
    return f"L{finding.start_line}" + (f"-L{end}" if end and end != finding.start_line else "")


def _gate_reason(outcome: Outcome, seat: Seat) -> tuple[str | None, Gated | None]:
    """Why to re-ask the answer (None: it is complete), and the completeness gate's
    judgement of it when it is a valid assessment."""
    if outcome.invalid:
        return outcome.validation_error or "the answer did not validate", None
    if not outcome.ok:
        return outcome.error or "the call failed", None
    assert isinstance(outcome.output, Assessment)
    gated = gate_assessment(outcome.output, seat.lenses)
    return gated.reason, gated


def _best_partial(kept: Gated | None, gated: Gated | None) -> Gated | None:
    """The real answer to keep if no re-ask completes it: the one that misses the fewest
    lenses (the later one on a tie)."""
    if gated is None or not gated.answered:
        return kept
    if kept is None or len(gated.missing) <= len(kept.missing):
        return gated
    return kept


def _keep(record: _SeatRecord, gated: Gated) -> None:
    """Keep a gated answer: its lenses renamed to the brief's, the ones it misses unscored."""
    record.assessment = gated.assessment
    record.unscored = list(gated.missing)


def _report(record: _SeatRecord) -> SeatReport:
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


def _where_stopped(run: _Run, step: str) -> str:
    """How far the council got when a cap stopped the call of `step` (e.g. "vote/seat-2/0")."""
    phase, _, rest = step.partition("/")
    records = run.records.values()
    if phase == "assess":
        gathered = sum(1 for r in records if r.assessment is not None)
        return f"after {gathered} of {len(run.order)} assessments"
    if phase == "vote":
        cast = sum(1 for r in records if r.vote is not None)
        return f"after {cast} of {len(run.valid())} votes"
    if phase == "judge":
        return f"before the judge's decision on round {rest.rsplit('/', 1)[-1]}"
    if phase == "rank":
        return "during the peer ranking"
    if phase == "outside":
        return "before the outside opinion"
    if phase == "merge":
        return "before the chair merged the findings"
    if phase == "synthesize":
        return "before the chair's synthesis"
    return f"at {step}"


def _no_quorum_reason(run: _Run) -> str:
    """Why there is no quorum. Every rendering puts the resolution's title ("The council
    could not convene") before the reason, so the reason does not say it again."""
    states = ", ".join(
        f"{s.label} ({s.persona_name}, {s.model}): {run.records[s.seat_id].state.value}"
        for s in run.order
    )
    return f"Fewer than 2 valid assessments. Seats: {states}"


def _paid(events: Sequence[LedgerEvent]) -> float:
    """What the calls the ledger already holds cost (a resumed deliberation's)."""
    costs = [e.payload.get("cost") for e in events if e.kind is EventKind.SEAT_RETURNED]
    return sum(float(c) for c in costs if isinstance(c, int | float))


def _paid_tokens(events: Sequence[LedgerEvent]) -> int:
    """The tokens the calls the ledger already holds used (a resumed deliberation's)."""
    return sum(ledger_tokens(e.payload) for e in events if e.kind is EventKind.SEAT_RETURNED)


def _borda(run: _Run, ballots: dict[str, list[str]]) -> list[str]:
    by_label = {s.label: s.seat_id for s in run.valid()}
    points: dict[str, int] = dict.fromkeys(by_label.values(), 0)
    for ranking in ballots.values():
        for position, label in enumerate(ranking):
            points[by_label[label]] += len(ranking) - position
    return sorted(points, key=lambda seat_id: (-points[seat_id], seat_id))


async def _in_parallel(
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
