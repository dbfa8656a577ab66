"""The deliberation ledger: every step of a deliberation is an event appended here.

A step whose result is in the ledger is never run again, so an interrupted deliberation
resumes from its ledger and pays only for the calls it had not finished. This module is the
protocol and an in-memory implementation (unit tests, CLI runs without a database);
`bot.store.ledger.SqlLedger` is the durable one.

Idempotency lives on `step`: a unique key of a step within one deliberation, e.g.
`"assess/seat-2/1"`. Appending a step that is already recorded returns the recorded event
and writes nothing, because two workers may race on the same deliberation after a crash.
"""

from __future__ import annotations

import asyncio
from collections import defaultdict
from datetime import UTC, datetime
from enum import StrEnum
from typing import Protocol, runtime_checkable

from pydantic import BaseModel, ConfigDict, Field, JsonValue

__all__ = [
    "EventKind",
    "InMemoryLedger",
    "Ledger",
    "LedgerEvent",
    "UnknownDeliberationError",
]


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

    async def events(self, deliberation_id: str) -> list[LedgerEvent]:
        return list(self._events.get(deliberation_id, ()))

    async def step(self, deliberation_id: str, step: str) -> LedgerEvent | None:
        return self._steps.get((deliberation_id, step))
