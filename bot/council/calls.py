"""Ledger-backed model calls: a step whose answer is in the ledger is never paid for twice.

Every seat call goes through `SeatCaller.call`: it replays a recorded step, or reserves the
call's worst-case cost with the deliberation's `Budget` (a call that would cross a cap does
not start), calls the provider, settles the reservation at what the call cost, and records
the validated answer (or the typed failure) with its tokens, cost and time.
"""

from __future__ import annotations

import asyncio
import time
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any, Protocol

from pydantic import BaseModel, JsonValue

from bot.council.advisory import UsageSummary
from bot.council.budget import Budget, CapReached, InMemoryBudget, Reservation
from bot.council.ledger import EventKind, Ledger
from bot.council.seats import Seat
from bot.providers import (
    ErrorKind,
    InvalidOutput,
    ModelCall,
    ModelCapabilities,
    Provider,
    ProviderError,
    StartedCall,
    Usage,
    worst_case_cost,
)
from bot.tokens import TokenEstimator, default_estimator

__all__ = [
    "Accounts",
    "Budget",
    "CapReached",
    "CostLimitReached",
    "InMemoryBudget",
    "Outcome",
    "ProviderSource",
    "Reservation",
    "SeatCaller",
]


class ProviderSource(Protocol):
    """Where the engine gets a provider for a model reference (the ProviderRegistry)."""

    def get(self, ref: str) -> Provider: ...

    def capabilities_of(self, ref: str) -> ModelCapabilities:
        """What the model accepts and costs, without building its client (a dry run asks
        too). Raises ProviderError (ConfigurationError) for a reference it cannot resolve."""
        ...


class CostLimitReached(Exception):
    """A call's reservation would have crossed a cost cap, so the call did not start.

    The phase that was running sets `where` (e.g. "after 3 of 5 assessments") before the
    engine turns the stop into the advisory's reason."""

    def __init__(self, refusal: CapReached, step: str) -> None:
        super().__init__(f"{refusal} reached before {step}")
        self.refusal = refusal
        self.step = step
        self.where: str | None = None

    def reason(self) -> str:
        """E.g. "The deliberation's cost cap of $2.00 stopped the council after 3 of 5
        assessments (the next call could have cost up to $0.1900)."."""
        cap = str(self.refusal)
        where = f" {self.where}" if self.where else ""
        return (
            f"{cap[:1].upper()}{cap[1:]} stopped the council{where} (the next call could have "
            f"cost up to ${self.refusal.amount_usd:.4f})."
        )


@dataclass
class Outcome:
    """The result of one step, fresh or replayed from the ledger."""

    output: BaseModel | None
    text: str
    error_kind: str | None
    error: str | None
    validation_error: str | None
    usage: Usage
    cost_usd: float
    ms: int
    replayed: bool = False

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

    def add(self, outcome: Outcome) -> None:
        self.usage = self.usage.plus(
            UsageSummary(
                calls=1,
                input_tokens=outcome.usage.input_tokens,
                output_tokens=outcome.usage.output_tokens,
                cache_write_tokens=outcome.usage.cache_write_tokens,
                cached_input_tokens=outcome.usage.cache_read_tokens,
                cost_usd=outcome.cost_usd,
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
        ledger: Ledger,
        accounts: Accounts,
        progress: ProgressFn,
        *,
        budget: Budget,
        estimator: TokenEstimator | None = None,
    ) -> None:
        self._id = deliberation_id
        self._providers = providers
        self._ledger = ledger
        self._accounts = accounts
        self._progress = progress
        self._budget = budget
        self._estimator = estimator or default_estimator()
        # The first refusal: once a cap stopped one call, this deliberation starts no more.
        self._stopped: CostLimitReached | None = None

    async def call(
        self,
        seat: Seat,
        step: str,
        request: ModelCall[Any],
        *,
        warm: asyncio.Event | None = None,
        leader: bool = False,
    ) -> Outcome:
        """Run one step. A `leader` streams and sets `warm` once its response began; the
        other seats of its model wait on `warm`, so they find the prefix it cached."""
        recorded = await self._ledger.step(self._id, step)
        if recorded is not None:
            if warm is not None and leader:
                warm.set()
            outcome = _replay(recorded.payload, request)
            self._accounts.add(outcome)
            return outcome
        if warm is not None and not leader:
            await warm.wait()
        try:
            held = await self._reserve(seat, step, request)
        except CostLimitReached:
            if warm is not None:
                warm.set()  # never leave the seats waiting on this one stuck
            raise
        try:
            await self._ledger.append(
                self._id,
                EventKind.SEAT_CALLED,
                {"seat": seat.seat_id, "step": step, "model": seat.model},
            )
        except Exception:
            await self._budget.release(held)  # the call never started
            raise
        self._progress(step.split("/")[0], seat.seat_id, "called", seat.persona_name)
        # Cancelled from here on (or the worker dies), the reservation stays charged.
        outcome = await self._invoke(seat, request, warm if leader else None)
        await self._settle(held, outcome)
        self._accounts.add(outcome)
        await self._ledger.append(
            self._id, EventKind.SEAT_RETURNED, _payload(seat, step, outcome), step=step
        )
        self._progress(
            step.split("/")[0], seat.seat_id, outcome.error_kind or "ok", seat.persona_name
        )
        return outcome

    async def _reserve(self, seat: Seat, step: str, request: ModelCall[Any]) -> Reservation:
        if self._stopped is None:
            held = await self._budget.reserve(self._worst_case(seat, request), step)
            if isinstance(held, Reservation):
                return held
            self._stopped = CostLimitReached(held, step)
        raise CostLimitReached(self._stopped.refusal, step)

    def _worst_case(self, seat: Seat, request: ModelCall[Any]) -> float:
        try:
            caps = self._providers.get(seat.model).capabilities
        except ProviderError:
            return 0.0  # no provider to call: the call fails before anything is sent
        return worst_case_cost(caps, request, self._estimator)

    async def _settle(self, held: Reservation, outcome: Outcome) -> None:
        usage = outcome.usage
        if outcome.ok or outcome.cost_usd > 0 or usage.total_input_tokens + usage.output_tokens:
            await self._budget.settle(held, outcome.cost_usd)
        elif outcome.error_kind == ErrorKind.TIMEOUT.value:
            # We stopped waiting; the provider may still have billed the answer.
            await self._budget.settle(held, held.amount_usd)
        else:
            await self._budget.release(held)  # refused before any token was billed

    async def _invoke(
        self, seat: Seat, request: ModelCall[Any], warm: asyncio.Event | None
    ) -> Outcome:
        started = time.monotonic()
        try:
            provider = self._providers.get(seat.model)
            if warm is None:
                result = await provider.call(request)
            else:
                result = await _streamed(provider.start(request), warm)
        except ProviderError as err:
            return _failure(err, int((time.monotonic() - started) * 1000))
        finally:
            if warm is not None:
                warm.set()
        return Outcome(
            output=result.output,
            text=result.text,
            error_kind=None,
            error=None,
            validation_error=None,
            usage=result.usage,
            cost_usd=result.cost_usd,
            ms=result.latency_ms,
        )


async def _streamed(started: StartedCall[Any], warm: asyncio.Event) -> Any:
    await started.wait_began()
    warm.set()
    return await started.result()


def _failure(err: ProviderError, ms: int) -> Outcome:
    return Outcome(
        output=None,
        text=err.raw if isinstance(err, InvalidOutput) else "",
        error_kind=err.kind.value,
        error=str(err),
        validation_error=err.validation_error if isinstance(err, InvalidOutput) else None,
        usage=err.usage,
        cost_usd=err.cost_usd,
        ms=ms,
    )


def _payload(seat: Seat, step: str, outcome: Outcome) -> dict[str, JsonValue]:
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
        "tokens_in": outcome.usage.input_tokens,
        "tokens_out": outcome.usage.output_tokens,
        "cache_write": outcome.usage.cache_write_tokens,
        "cache_read": outcome.usage.cache_read_tokens,
        "cost": outcome.cost_usd,
        "ms": outcome.ms,
    }


def _replay(payload: dict[str, JsonValue], request: ModelCall[Any]) -> Outcome:
    raw_output = payload.get("output")
    output = None
    if raw_output is not None and request.output is not None:
        output = request.output.schema.model_validate(raw_output)
    status = str(payload.get("status") or "ok")
    return Outcome(
        output=output,
        text=str(payload.get("text") or ""),
        error_kind=None if status == "ok" else status,
        error=_opt(payload.get("error")),
        validation_error=_opt(payload.get("validation_error")),
        usage=Usage(
            input_tokens=_int(payload.get("tokens_in")),
            output_tokens=_int(payload.get("tokens_out")),
            cache_write_tokens=_int(payload.get("cache_write")),
            cache_read_tokens=_int(payload.get("cache_read")),
        ),
        cost_usd=float(payload.get("cost") or 0.0),  # type: ignore[arg-type]
        ms=_int(payload.get("ms")),
        replayed=True,
    )


def _opt(value: JsonValue) -> str | None:
    return None if value is None else str(value)


def _int(value: JsonValue) -> int:
    return int(value) if isinstance(value, int | float) else 0
