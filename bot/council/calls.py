"""Ledger-backed model calls: a step whose answer is in the ledger is never paid for twice.

Every seat call goes through `SeatCaller.call`: it replays a recorded step, or reserves the
call's tokens with the deliberation's `TokenBudget` and its cost with its `Budget` (a call
that would cross a cap does not start), calls the provider, settles the reservations at what
the call used and cost, and records the validated answer (or the typed failure) with its
tokens, cost and time. The record is written with the rest of its phase step
(`bot.council.ledger.StepWriter`): a worker killed mid-step asks that step's calls again.

A call reserves its input estimate and the 95th percentile of its model's recent answers
(`bot.council.reserving`; the full output limit for a model never seen). When a cap has
less room left than the call's worst case, the call is sent a `max_tokens` clipped to that
room, so it cannot spend past the cap. Each answer's output tokens are recorded for the
reservations of the calls after it (`AnswerSizes`).

A model's capabilities come from `ProviderSource.capabilities_of` (no client is built for
them): the output limit the call is sent, its price, and whether that price is known at all.

A call is fitted to its model's window before it is reserved and again before it is sent
(`bot.council.fitting`: the context cut by whole sections from the end, the output limit
within what the window leaves), where the window is said: by a refusal this process saw,
the endpoint's setting or the model's server (`bot.providers.window`), or the capability
table. A call the server refuses as longer than its window (`ContextTooLong`) is fitted to
the window the refusal names and sent once more; the model's window is remembered, so its
later calls fit before they are sent. `Accounts.notes` says, once per model, how far its
context was cut.
"""

from __future__ import annotations

import asyncio
import time
from collections.abc import Callable
from dataclasses import dataclass, field, replace
from typing import Any, Protocol

from pydantic import BaseModel, JsonValue

from bot.council.advisory import UsageSummary
from bot.council.budget import (
    Budget,
    CapReached,
    InMemoryBudget,
    Refusal,
    Reservation,
    TokenBudget,
    TokenCapReached,
    TokenReservation,
)
from bot.council.fitting import ContextFitter, Cut
from bot.council.ledger import EventKind, StepWriter
from bot.council.reserving import AnswerSizes, CallPlan, plan_call
from bot.council.seats import Seat
from bot.providers import (
    ContextTooLong,
    ErrorKind,
    InvalidOutput,
    ModelCall,
    ModelCapabilities,
    Provider,
    ProviderError,
    StartedCall,
    Usage,
)
from bot.providers.window import Window, remembered
from bot.tokens import TokenEstimator, default_estimator

__all__ = [
    "Accounts",
    "Budget",
    "CallOutcome",
    "CapReached",
    "CostLimitReached",
    "InMemoryBudget",
    "ProviderSource",
    "Reservation",
    "SeatCaller",
    "TokenBudget",
    "TokenCapReached",
    "ledger_tokens",
]


class ProviderSource(Protocol):
    """Where the engine gets a provider for a model reference (the ProviderRegistry)."""

    def get(self, ref: str) -> Provider: ...

    def capabilities_of(self, ref: str) -> ModelCapabilities:
        """What the model accepts and costs, without building its client (a dry run asks
        too). Raises ProviderError (ConfigurationError) for a reference it cannot resolve."""
        ...


class CostLimitReached(Exception):
    """A call's reservation would have crossed a cost cap or the token cap, so the call did
    not start.

    The phase that was running sets `where` (e.g. "after 3 of 5 assessments") before the
    engine turns the stop into the advisory's reason."""

    def __init__(self, refusal: Refusal, step: str) -> None:
        super().__init__(f"{refusal} reached before {step}")
        self.refusal = refusal
        self.step = step
        self.where: str | None = None

    def reason(self) -> str:
        """E.g. "The deliberation's cost cap of $2.00 stopped the council after 3 of 5
        assessments (the next call could have cost up to $0.1900).", or "The token cap of
        200,000 tokens (COUNCIL_MAX_SPEND_TOKENS) stopped the council after 3 of 5
        assessments (the next call could have used up to 12,345 tokens)."; for a model
        whose answers are known, "(the next call needed at least $0.0400)"."""
        cap = str(self.refusal)
        where = f" {self.where}" if self.where else ""
        return (
            f"{cap[:1].upper()}{cap[1:]} stopped the council{where} (the next call "
            f"{self.refusal.next_call()})."
        )


@dataclass
class CallOutcome:
    """The result of one step, fresh or replayed from the ledger."""

    output: BaseModel | None
    text: str
    error_kind: str | None
    error: str | None
    validation_error: str | None
    usage: Usage  # its reasoning_tokens are a part of its output_tokens
    cost_usd: float
    ms: int
    replayed: bool = False
    # The answer was cut off at the output limit (an InvalidOutput with `truncated`).
    truncated: bool = False
    # False when nothing says what the model costs: its $0 is unknown, not free.
    priced: bool = True
    # What was adjusted to read the answer (a number brought into the schema's range).
    adjusted: tuple[str, ...] = ()
    # The server reported no tokens: `usage` is the estimator's count.
    usage_estimated: bool = False

    @property
    def ok(self) -> bool:
        return self.error_kind is None

    @property
    def invalid(self) -> bool:
        return self.error_kind == ErrorKind.INVALID_OUTPUT.value


@dataclass
class Accounts:
    """Usage and cost over the whole deliberation, replayed steps included. (What may be
    spent is the `Budget`'s business.)"""

    usage: UsageSummary = field(default_factory=UsageSummary)
    fresh_calls: int = 0
    # For the advisory: each model whose context was cut for its window, and how far.
    notes: list[str] = field(default_factory=list)

    def add(self, outcome: CallOutcome, model: str = "") -> None:
        self.usage = self.usage.plus(
            UsageSummary(
                calls=1,
                input_tokens=outcome.usage.input_tokens,
                output_tokens=outcome.usage.output_tokens,
                cache_write_tokens=outcome.usage.cache_write_tokens,
                cached_input_tokens=outcome.usage.cache_read_tokens,
                reasoning_tokens=outcome.usage.reasoning_tokens,
                truncated=int(outcome.truncated),
                cost_usd=outcome.cost_usd,
                unpriced_models=[] if outcome.priced else [model],
                # A call whose server sent no usage (llama-cpp-python's streams) was counted
                # by the estimator: the reports say which part of the totals is an estimate.
                estimated_calls=int(outcome.usage_estimated),
                estimated_tokens=(
                    outcome.usage.total_input_tokens + outcome.usage.output_tokens
                    if outcome.usage_estimated
                    else 0
                ),
            )
        )
        if not outcome.replayed:
            self.fresh_calls += 1


ProgressFn = Callable[[str, str | None, str, str | None], None]  # phase, seat, status, label


class SeatCaller:
    def __init__(
        self,
        deliberation_id: str,
        providers: ProviderSource,
        ledger: StepWriter,
        accounts: Accounts,
        progress: ProgressFn,
        *,
        budget: Budget,
        tokens: TokenBudget | None = None,
        estimator: TokenEstimator | None = None,
        sizes: AnswerSizes | None = None,
    ) -> None:
        self._id = deliberation_id
        self._providers = providers
        self._ledger = ledger
        self._accounts = accounts
        self._progress = progress
        self._budget = budget
        # The cap in tokens beside the dollar caps; None: no token cap.
        self._tokens = tokens if tokens is not None else TokenBudget(None)
        self._estimator = estimator or default_estimator()
        # The models' recent answer sizes; None: none known (every call holds its worst case).
        self._sizes = sizes
        # The first refusal: once a cap stopped one call, this deliberation starts no more.
        self._stopped: CostLimitReached | None = None
        # Fits each call to its model's window, and remembers how far each context was cut.
        self._fitter = ContextFitter(self._estimator)

    async def call(
        self,
        seat: Seat,
        step: str,
        request: ModelCall[Any],
        *,
        warm: asyncio.Event | None = None,
        leader: bool = False,
    ) -> CallOutcome:
        """Run one step. A `leader` streams and sets `warm` once its response began; the
        other seats of its model wait on `warm`, so they find the prefix it cached."""
        # A fresh deliberation's writer answers without reading the ledger.
        recorded = await self._ledger.step(step)
        if recorded is not None:
            if warm is not None and leader:
                warm.set()
            return self._replayed(seat, recorded.payload, request)
        # Everything a call needs before it is sent (its reservation, the claim's check) is
        # done before a seat waits for its leader: once the leader's response begins, every
        # seat of the phase is ready to send at once (a budget in the database or a lease
        # in Redis would otherwise delay the last seat by every seat's round trips).
        caps = self._capabilities(seat.model)
        try:
            held = await self._reserve(caps, seat.model, step, self._fit(seat, caps, request))
        except CostLimitReached:
            if warm is not None and leader:
                warm.set()  # never leave the seats waiting on this one stuck
            raise
        try:
            await self._ledger.guard()  # a runner that lost its claim pays for nothing more
            if warm is not None and not leader:
                await warm.wait()
        except BaseException:
            await self._release(held)  # the call never started
            raise
        # Written with the answer or the rest of its phase step (bot.council.ledger.StepWriter).
        self._ledger.append(
            EventKind.SEAT_CALLED, {"seat": seat.seat_id, "step": step, "model": seat.model}
        )
        self._progress(step.split("/")[0], seat.seat_id, "called", seat.persona_name)
        # Cancelled from here on (or the worker dies), the reservation stays charged.
        outcome = await self._sent(seat, caps, held, request, warm if leader else None)
        outcome.priced = caps is not None and caps.priced
        await self._settle(held, outcome)
        self._accounts.add(outcome, seat.model)
        self._accounts.notes = self._fitter.notes()
        self._ledger.append(EventKind.SEAT_RETURNED, self._payload(seat, step, outcome), step=step)
        # A paid answer is written as it arrives: a worker killed mid-phase never pays for it
        # twice (the rest of the step's events go with it, in the same transaction).
        await self._ledger.flush()
        # The answer's size, once the answer is safe: what later calls of the model reserve.
        if self._sizes is not None and outcome.usage.output_tokens > 0:
            await self._sizes.record(seat.model, outcome.usage.output_tokens)
        self._progress(
            step.split("/")[0], seat.seat_id, outcome.error_kind or "ok", seat.persona_name
        )
        return outcome

    async def _sent(
        self,
        seat: Seat,
        caps: ModelCapabilities | None,
        held: _Held,
        request: ModelCall[Any],
        warm: asyncio.Event | None,
    ) -> CallOutcome:
        """The call, fitted to its model's window (one learned while this call waited for
        its leader included); refused as longer than the window, fitted to the window the
        refusal names and sent once more."""
        sent = held.sent(self._fit(seat, caps, request))
        outcome, error = await self._invoke(seat, sent, warm)
        if not isinstance(error, ContextTooLong) or caps is None:
            return outcome
        # No await from the refusal to `refit`'s learning the window: the seats its leader's
        # response let go fit their calls to it before they send them.
        window = self._window(seat.model, caps) or Window(caps.context_window, "default")
        refit = self._fitter.refit(seat.model, request, sent, error, window)
        if refit is None:
            tokens = error.window or window.tokens
            outcome.error = (
                f"{outcome.error} (cut to its diff, the context still leaves no room for an "
                f"answer in the window of {tokens:,} tokens)"
            )
            return outcome
        retried, _ = await self._invoke(seat, held.sent(refit.request), None)
        return retried

    def _fit(
        self, seat: Seat, caps: ModelCapabilities | None, request: ModelCall[Any]
    ) -> ModelCall[Any]:
        """`request` fitted to the model's window where one is said; else as it is."""
        window = self._window(seat.model, caps)
        if window is None:
            return request
        return self._fitter.fit(seat.model, request, window).request

    @staticmethod
    def _window(model: str, caps: ModelCapabilities | None) -> Window | None:
        """The model's window where it is said: by a refusal, the endpoint's setting or the
        model's server (as this process found), or the capability table."""
        said = remembered(model)
        if said is None and caps is not None and caps.known:
            said = Window(caps.context_window, "table")
        return said

    def _replayed(
        self, seat: Seat, payload: dict[str, JsonValue], request: ModelCall[Any]
    ) -> CallOutcome:
        """A recorded step's outcome, and the cut its context had for the model's window."""
        outcome = _replay(payload, request, self._priced(seat.model))
        cut = payload.get("context_cut")
        if isinstance(cut, list) and len(cut) == 3:
            window, before, after = (_int(n) for n in cut)
            self._fitter.recorded(seat.model, Cut(window, before, after))
            self._accounts.notes = self._fitter.notes()
        self._accounts.add(outcome, seat.model)
        return outcome

    def _payload(self, seat: Seat, step: str, outcome: CallOutcome) -> dict[str, JsonValue]:
        """The step's record, with the cut of the model's context for its window, if any."""
        payload = _payload(seat, step, outcome)
        cut = self._fitter.cut_of(seat.model)
        if cut is not None:
            payload["context_cut"] = [cut.window, cut.before, cut.after]
        return payload

    def _capabilities(self, model: str) -> ModelCapabilities | None:
        """None: the reference does not resolve (the call fails before anything is sent)."""
        try:
            return self._providers.capabilities_of(model)
        except ProviderError:
            return None

    def _priced(self, model: str) -> bool:
        caps = self._capabilities(model)
        return caps is not None and caps.priced

    async def _reserve(
        self, caps: ModelCapabilities | None, model: str, step: str, request: ModelCall[Any]
    ) -> _Held:
        """Hold the call's tokens, then its cost (input estimate + the model's usual answer,
        or its worst case when never seen); either refusal stops this call and every later
        one. The output limit the call is sent fits in the room both caps had left."""
        p95 = None
        if self._stopped is None and caps is not None and self._sizes is not None:
            p95 = await self._sizes.p95(model)
        # No await from this check to the token budget's hold.
        if self._stopped is None:
            plan = plan_call(caps, request, self._estimator, p95)
            tokens = self._tokens.reserve(plan.hold_tokens, step, need=plan.need_tokens)
            if isinstance(tokens, TokenCapReached):
                self._stopped = CostLimitReached(replace(tokens, worst_case=not plan.seen), step)
            else:
                money = await self._budget.reserve(plan.hold_usd, step, need_usd=plan.need_usd)
                if isinstance(money, Reservation):
                    limit = plan.max_tokens(tokens.room_tokens, money.room_usd)
                    return _Held(money, tokens, plan, limit)
                self._tokens.release(tokens)
                self._stopped = CostLimitReached(replace(money, worst_case=not plan.seen), step)
        raise CostLimitReached(self._stopped.refusal, step)

    async def _release(self, held: _Held) -> None:
        self._tokens.release(held.tokens)
        await self._budget.release(held.money)

    async def _settle(self, held: _Held, outcome: CallOutcome) -> None:
        usage = outcome.usage
        used = usage.total_input_tokens + usage.output_tokens
        if outcome.ok or outcome.cost_usd > 0 or used:
            self._tokens.settle(held.tokens, used)
            await self._budget.settle(held.money, outcome.cost_usd)
        elif outcome.error_kind == ErrorKind.TIMEOUT.value:
            # We stopped waiting; the provider may still have billed the answer, up to the
            # output limit the call was sent.
            self._tokens.settle(held.tokens, held.plan.worst_tokens(held.max_tokens))
            await self._budget.settle(held.money, held.plan.worst_usd(held.max_tokens))
        else:
            await self._release(held)  # refused before any token was billed

    async def _invoke(
        self, seat: Seat, request: ModelCall[Any], warm: asyncio.Event | None
    ) -> tuple[CallOutcome, ProviderError | None]:
        """The call's outcome, and the error it failed with (None: it answered)."""
        started = time.monotonic()
        try:
            provider = self._providers.get(seat.model)
            if warm is None:
                result = await provider.call(request)
            else:
                result = await _streamed(provider.start(request), warm)
        except ProviderError as err:
            return _failure(err, int((time.monotonic() - started) * 1000)), err
        finally:
            if warm is not None:
                warm.set()
        answered = CallOutcome(
            output=result.output,
            text=result.text,
            error_kind=None,
            error=None,
            validation_error=None,
            usage=result.usage,
            cost_usd=result.cost_usd,
            ms=result.latency_ms,
            adjusted=result.adjusted,
            usage_estimated=result.usage_estimated,
        )
        return answered, None


@dataclass(frozen=True)
class _Held:
    """What one call holds (its cost and its tokens), its plan, and the output limit it
    is sent: the model's, or less when a cap had less room left than the worst case."""

    money: Reservation
    tokens: TokenReservation
    plan: CallPlan
    max_tokens: int

    def sent(self, request: ModelCall[Any]) -> ModelCall[Any]:
        """The request as sent: its `max_tokens` clipped to what the caps had room for (a
        request fitted to its model's window may ask for less already)."""
        if self.max_tokens >= self.plan.max_output or self.max_tokens >= request.max_tokens:
            return request
        return replace(request, max_tokens=self.max_tokens)


async def _streamed(started: StartedCall[Any], warm: asyncio.Event) -> Any:
    try:
        await started.wait_began()
    except BaseException:
        # Cancelled while waiting for the response to begin (a stop, a superseding push):
        # the call must stop too, not run on with nobody to read its answer or its error.
        started.task.cancel()
        raise
    warm.set()
    return await started.result()  # awaiting the task directly: a cancel reaches it


def _notes(value: JsonValue | None) -> tuple[str, ...]:
    """A recorded list of notes (absent in a record written before they were kept)."""
    return tuple(v for v in value if isinstance(v, str)) if isinstance(value, list) else ()


def _failure(err: ProviderError, ms: int) -> CallOutcome:
    return CallOutcome(
        output=None,
        text=err.raw if isinstance(err, InvalidOutput) else "",
        error_kind=err.kind.value,
        error=str(err),
        validation_error=err.validation_error if isinstance(err, InvalidOutput) else None,
        usage=err.usage,
        cost_usd=err.cost_usd,
        ms=ms,
        truncated=isinstance(err, InvalidOutput) and err.truncated,
    )


def _payload(seat: Seat, step: str, outcome: CallOutcome) -> dict[str, JsonValue]:
    phase, _, rest = step.partition("/")
    return {
        "seat": seat.seat_id,
        "model": seat.model,
        "phase": phase,
        "step": step,
        "round": rest.rsplit("/", 1)[-1],
        "status": outcome.error_kind or "ok",
        "output": outcome.output.model_dump(mode="json") if outcome.output else None,
        "text": outcome.text[:20_000],
        "error": outcome.error,
        "validation_error": outcome.validation_error,
        "adjusted": list(outcome.adjusted),
        "usage_estimated": outcome.usage_estimated,
        "tokens_in": outcome.usage.input_tokens,
        "tokens_out": outcome.usage.output_tokens,
        "cache_write": outcome.usage.cache_write_tokens,
        "cache_read": outcome.usage.cache_read_tokens,
        "reasoning": outcome.usage.reasoning_tokens,
        "truncated": outcome.truncated,
        "priced": outcome.priced,
        "cost": outcome.cost_usd,
        "ms": outcome.ms,
    }


def ledger_tokens(payload: dict[str, JsonValue]) -> int:
    """The tokens a recorded call used (input, cache writes and reads, output): what a
    resumed deliberation counts against its token cap."""
    return sum(
        _int(payload.get(key)) for key in ("tokens_in", "cache_write", "cache_read", "tokens_out")
    )


def _replay(payload: dict[str, JsonValue], request: ModelCall[Any], priced: bool) -> CallOutcome:
    """The recorded outcome; `priced` (the model's price is known now) stands in for a
    record written before the ledger said."""
    raw_output = payload.get("output")
    output = None
    if raw_output is not None and request.output is not None:
        output = request.output.schema.model_validate(raw_output)
    status = str(payload.get("status") or "ok")
    return CallOutcome(
        output=output,
        text=str(payload.get("text") or ""),
        error_kind=None if status == "ok" else status,
        error=_opt(payload.get("error")),
        validation_error=_opt(payload.get("validation_error")),
        adjusted=_notes(payload.get("adjusted")),
        usage_estimated=payload.get("usage_estimated") is True,
        usage=Usage(
            input_tokens=_int(payload.get("tokens_in")),
            output_tokens=_int(payload.get("tokens_out")),
            cache_write_tokens=_int(payload.get("cache_write")),
            cache_read_tokens=_int(payload.get("cache_read")),
            reasoning_tokens=_int(payload.get("reasoning")),
        ),
        cost_usd=float(payload.get("cost") or 0.0),  # type: ignore[arg-type]
        ms=_int(payload.get("ms")),
        replayed=True,
        truncated=payload.get("truncated") is True,
        priced=recorded if isinstance(recorded := payload.get("priced"), bool) else priced,
    )


def _opt(value: JsonValue) -> str | None:
    return None if value is None else str(value)


def _int(value: JsonValue) -> int:
    return int(value) if isinstance(value, int | float) else 0
