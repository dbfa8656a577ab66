"""The deliberation engine: convene, then the phase loop, the ledger and the advisory.

A protocol is a choice of phases over one run state (`bot.council.run.Run`): the engine
runs the phases its entry in `bot.council.protocols` lists, each phase's code looked up in
`bot.council.phases.PHASES`; it names no protocol. Every model call goes through the
ledger (`SeatCaller`), so an interrupted deliberation resumes where it stopped. The engine
does no I/O of its own beyond the provider interface and the ledger.
"""

from __future__ import annotations

import time
from collections.abc import Callable, Sequence

from bot.council import prompts
from bot.council.advisory import Advisory, Resolution
from bot.council.budget import Budget, InMemoryBudget
from bot.council.calls import (
    Accounts,
    CostLimitReached,
    ProviderSource,
    SeatCaller,
    TokenBudget,
    ledger_tokens,
)
from bot.council.convene import Convened, convene
from bot.council.findings import merge_findings
from bot.council.ledger import EventKind, Ledger, LedgerEvent, StepWriter
from bot.council.partial import limited_advisory
from bot.council.personas import Catalog
from bot.council.phases import PHASES, report_parts
from bot.council.protocols import protocol
from bot.council.request import ConveneRequest, DeliberationRequest, ProgressEvent
from bot.council.reserving import AnswerSizes
from bot.council.resolution import settled_conditions, top_findings
from bot.council.run import Run, SeatRecord, Stop, seat_report
from bot.council.scoring import PersonaRecord
from bot.providers import ProviderError
from bot.tokens import TokenEstimator

__all__ = ["DeliberationRequest", "Engine", "ProgressEvent"]


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
        run = self._run(request, convened, caller, writer, accounts)
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

    def _run(
        self,
        request: DeliberationRequest,
        convened: Convened,
        caller: SeatCaller,
        writer: StepWriter,
        accounts: Accounts,
    ) -> Run:
        """The run state the phases share, from the convened seats."""
        return Run(
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
            records={s.seat_id: SeatRecord(s) for s in convened.seats},
            progress=self._progress,
            notes=[*request.notes, *convened.notes],
        )

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
        """A cap stopped the one call of convening (a panel's design, a task's classification)."""
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
        ledger write (the dry run); None where a model designs them (convening "designed")."""
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

    async def _phases(self, run: Run) -> Stop:
        last = run.protocol.phases[-1]
        for phase in run.protocol.phases:
            if phase in ("convene", "judge"):
                continue
            try:
                stop = await PHASES[phase](run)
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

    def _advisory(
        self, run: Run, resolution: Resolution | None, reason: str | None, started: float
    ) -> Advisory:
        seats = [seat_report(run.records[s.seat_id]) for s in run.order]
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
            **report_parts(run),
        )
        # One seat of several answered: a limited advisory (bot.council.partial).
        return limited_advisory(advisory)


def _where_stopped(run: Run, step: str) -> str:
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


def _paid(events: Sequence[LedgerEvent]) -> float:
    """What the calls the ledger already holds cost (a resumed deliberation's)."""
    costs = [e.payload.get("cost") for e in events if e.kind is EventKind.SEAT_RETURNED]
    return sum(float(c) for c in costs if isinstance(c, int | float))


def _paid_tokens(events: Sequence[LedgerEvent]) -> int:
    """The tokens the calls the ledger already holds used (a resumed deliberation's)."""
    return sum(ledger_tokens(e.payload) for e in events if e.kind is EventKind.SEAT_RETURNED)
