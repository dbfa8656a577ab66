"""The deliberation ledger: every step of a deliberation is an event appended here.

A step whose result is in the ledger is never run again, so an interrupted deliberation
resumes from its ledger and pays only for the calls it had not finished. This module is the
protocol and an in-memory implementation (unit tests, CLI runs without a database);
`bot.store.ledger.SqlLedger` is the durable one.

Idempotency lives on `step`: a unique key of a step within one deliberation, e.g.
`"assess/seat-2/1"`. Appending a step that is already recorded returns the recorded event
and writes nothing, because two workers may race on the same deliberation after a crash.

The engine writes through a `StepWriter`: the events of one phase step are kept in memory
and written together, in one transaction, when the step ends (see its docstring for what
that trades).
"""

from __future__ import annotations

import asyncio
from collections import defaultdict
from collections.abc import Sequence
from dataclasses import dataclass
from datetime import UTC, datetime
from enum import StrEnum
from typing import Protocol, runtime_checkable

import structlog
from pydantic import BaseModel, ConfigDict, Field, JsonValue

__all__ = [
    "EventKind",
    "InMemoryLedger",
    "Ledger",
    "LedgerEvent",
    "PendingEvent",
    "StepWriter",
    "UnknownDeliberationError",
]

log = structlog.get_logger(__name__)


class EventKind(StrEnum):
    REQUESTED = "requested"  # the job that asked for it, to run it again if its worker dies
    RESUMED = "resumed"  # handed to a live worker after its runner's claim lapsed
    PUBLISH_DEFERRED = "publish_deferred"  # the advisory's next posting try, as scheduled
    CONVENED = "convened"
    SEAT_CALLED = "seat_called"
    SEAT_RETURNED = "seat_returned"
    ROUND_ENDED = "round_ended"
    JUDGED = "judged"
    VOTE_CAST = "vote_cast"
    RESOLVED = "resolved"
    SYNTHESIZED = "synthesized"
    PUBLISHED = "published"
    FAILED = "failed"
    CANCELLED = "cancelled"


class LedgerEvent(BaseModel):
    """One recorded step. `seq` counts from 0 per deliberation, without gaps."""

    model_config = ConfigDict(frozen=True)

    deliberation_id: str
    seq: int = Field(ge=0)
    kind: EventKind
    step: str | None = None
    payload: dict[str, JsonValue] = Field(default_factory=dict)
    created_at: datetime


class UnknownDeliberationError(LookupError):
    """Raised by a ledger that knows its deliberations when asked to append to an unknown one."""

    def __init__(self, deliberation_id: str) -> None:
        super().__init__(f"no deliberation with id {deliberation_id!r}")
        self.deliberation_id = deliberation_id


@runtime_checkable
class Ledger(Protocol):
    async def append(
        self,
        deliberation_id: str,
        kind: EventKind,
        payload: dict[str, JsonValue],
        *,
        step: str | None = None,
    ) -> LedgerEvent:
        """Record an event; if `step` is already recorded, return that event instead."""
        ...

    async def events(self, deliberation_id: str) -> list[LedgerEvent]:
        """All events of a deliberation in `seq` order."""
        ...

    async def step(self, deliberation_id: str, step: str) -> LedgerEvent | None:
        """The event recorded for `step`, or None if the step has not run."""
        ...

    async def append_many(
        self, deliberation_id: str, events: Sequence[PendingEvent]
    ) -> list[LedgerEvent]:
        """`append` of each event in order, in one transaction (a recorded step is skipped
        and its recorded event returned)."""
        ...

    async def guard(self) -> None:
        """Raise if this runner may not write (its claim on the deliberation is lost)."""
        ...


@dataclass(frozen=True)
class PendingEvent:
    """An event not written yet (`StepWriter`'s buffer, `append_many`'s argument)."""

    kind: EventKind
    payload: dict[str, JsonValue]
    step: str | None = None


# Events written before the engine runs (the job's request, a hand-over, a deferred post):
# a deliberation whose ledger holds only these has no step recorded yet.
_NOT_STEPS = frozenset({EventKind.REQUESTED, EventKind.PUBLISH_DEFERRED})


class StepWriter:
    """The engine's way to the ledger for one deliberation: few transactions, no reads.

    `append` keeps an event in memory; `flush` writes what was kept in one transaction. The
    caller flushes when a paid answer arrives (so an answer is durable before anything
    depends on it, and a worker killed mid-phase never pays for it twice: the resumed
    deliberation replays it) and the engine when a phase step ends (convening, each phase,
    each discussion round, each judgement, the synthesis). The events between (a seat
    called, a round ended, a vote tallied) ride along: a 5-seat board writes about 22
    transactions instead of one per event plus a read before every call (61). A fresh
    deliberation (`fresh`: its ledger held no step when it started, and no other runner
    was handed it) reads nothing before a call: no step of it can be recorded but by this
    writer. A step that ends by an exception (a cap, a bug, a cancellation, a lost claim)
    still writes what it kept (`flush_quietly`), and a returned answer is written even past
    a lost claim.

    `guard` runs before every paid call: the check the SEAT_CALLED write used to make (a
    runner that lost its claim starts no more calls), without writing.
    """

    def __init__(self, ledger: Ledger, deliberation_id: str, events: Sequence[LedgerEvent]):
        self._ledger = ledger
        self._id = deliberation_id
        self._pending: list[PendingEvent] = []
        self._kept: dict[str, PendingEvent] = {}
        self.fresh = all(e.kind in _NOT_STEPS for e in events)
        self.transactions = 0  # flushes that wrote something (the tests and bench read it)

    @property
    def ledger(self) -> Ledger:
        return self._ledger

    async def step(self, step: str) -> LedgerEvent | PendingEvent | None:
        """What is recorded (or kept to be written) for `step`; None: it has not run. A
        fresh deliberation's steps are known without a read."""
        if (kept := self._kept.get(step)) is not None:
            return kept
        if self.fresh:
            return None
        return await self._ledger.step(self._id, step)

    def append(
        self, kind: EventKind, payload: dict[str, JsonValue], *, step: str | None = None
    ) -> None:
        event = PendingEvent(kind, payload, step)
        if step is not None:
            if step in self._kept:
                return
            self._kept[step] = event
        self._pending.append(event)

    async def guard(self) -> None:
        await self._ledger.guard()

    async def flush(self) -> None:
        """Write what was kept since the last flush, in one transaction."""
        if not self._pending:
            return
        # Written or refused, these are not written again (a refusal is a lost claim).
        pending, self._pending = self._pending, []
        self.transactions += 1
        await self._ledger.append_many(self._id, pending)

    async def flush_quietly(self) -> None:
        """`flush` while an exception is on its way out: a failure to write is logged, and
        the exception that ended the step is the one raised."""
        try:
            await self.flush()
        except Exception:
            log.warning("ledger_flush_failed", deliberation=self._id, exc_info=True)


def utc_now() -> datetime:
    return datetime.now(UTC)


class InMemoryLedger:
    """A process-local ledger with the same ordering and idempotency as the SQL one."""

    def __init__(self) -> None:
        self._events: defaultdict[str, list[LedgerEvent]] = defaultdict(list)
        self._steps: dict[tuple[str, str], LedgerEvent] = {}
        # Appends never await while holding state, but the lock keeps that true if they do.
        self._lock = asyncio.Lock()

    async def append(
        self,
        deliberation_id: str,
        kind: EventKind,
        payload: dict[str, JsonValue],
        *,
        step: str | None = None,
    ) -> LedgerEvent:
        async with self._lock:
            if step is not None and (known := self._steps.get((deliberation_id, step))):
                return known
            log = self._events[deliberation_id]
            event = LedgerEvent(
                deliberation_id=deliberation_id,
                seq=len(log),
                kind=kind,
                step=step,
                payload=payload,
                created_at=utc_now(),
            )
            log.append(event)
            if step is not None:
                self._steps[(deliberation_id, step)] = event
            return event

    async def append_many(
        self, deliberation_id: str, events: Sequence[PendingEvent]
    ) -> list[LedgerEvent]:
        return [await self.append(deliberation_id, e.kind, e.payload, step=e.step) for e in events]

    async def guard(self) -> None:
        return None

    async def events(self, deliberation_id: str) -> list[LedgerEvent]:
        return list(self._events.get(deliberation_id, ()))

    async def step(self, deliberation_id: str, step: str) -> LedgerEvent | None:
        return self._steps.get((deliberation_id, step))
