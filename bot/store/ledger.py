"""`SqlLedger`: the durable ledger (see `bot.council.ledger` for the protocol).

Appends to one deliberation are serialized by a lock on its `deliberations` row
(PostgreSQL `SELECT ... FOR UPDATE`; on SQLite the write transaction is IMMEDIATE and
holds the database's write lock), so `seq` is `max + 1` without gaps and a step already
recorded is found before it is written twice. The unique constraints on (deliberation, seq)
and (deliberation, step) stay the last word: a violation means another writer won, so the
append looks its step up again or retries with a fresh `seq`.
"""

from __future__ import annotations

from collections.abc import Awaitable, Callable, Sequence

from pydantic import JsonValue, TypeAdapter
from sqlalchemy import func, select
from sqlalchemy.exc import IntegrityError
from sqlalchemy.ext.asyncio import AsyncSession

from bot.council.ledger import EventKind, LedgerEvent, PendingEvent, UnknownDeliberationError
from bot.store.db import Database
from bot.store.models import DeliberationRow, LedgerEventRow, utc_now

__all__ = ["SqlLedger"]

# Checked before anything is written, as `LedgerEvent` would check it afterwards.
PAYLOAD = TypeAdapter(dict[str, JsonValue])
# Retries after a unique violation; each one means another writer committed meanwhile.
MAX_APPEND_ATTEMPTS = 20


def to_event(row: LedgerEventRow) -> LedgerEvent:
    return LedgerEvent(
        deliberation_id=row.deliberation_id,
        seq=row.seq,
        kind=EventKind(row.kind),
        step=row.step,
        payload=row.payload,
        created_at=row.created_at,
    )


async def _step_row(
    session: AsyncSession, deliberation_id: str, step: str
) -> LedgerEventRow | None:
    query = select(LedgerEventRow).where(
        LedgerEventRow.deliberation_id == deliberation_id, LedgerEventRow.step == step
    )
    return (await session.scalars(query)).one_or_none()


async def _lock_deliberation(session: AsyncSession, deliberation_id: str) -> None:
    query = select(DeliberationRow.id).where(DeliberationRow.id == deliberation_id)
    if await session.scalar(query.with_for_update()) is None:
        raise UnknownDeliberationError(deliberation_id)


async def _next_seq(session: AsyncSession, deliberation_id: str) -> int:
    query = select(func.coalesce(func.max(LedgerEventRow.seq) + 1, 0)).where(
        LedgerEventRow.deliberation_id == deliberation_id
    )
    return int(await session.scalar(query) or 0)


Fence = Callable[[], Awaitable[None]]


class SqlLedger:
    """The ledger in the `ledger_events` table; the deliberation row must exist first.

    `fence`, when given, runs before every write but a returned answer's and raises to
    refuse it: a runner that lost its claim on the deliberation (bot/queue/lease.py) writes
    nothing more, and since each paid call is preceded by a write, pays for nothing more;
    an answer it had already paid for is still kept."""

    def __init__(self, database: Database, *, fence: Fence | None = None) -> None:
        self._db = database
        self._fence = fence

    async def append(
        self,
        deliberation_id: str,
        kind: EventKind,
        payload: dict[str, JsonValue],
        *,
        step: str | None = None,
    ) -> LedgerEvent:
        payload = PAYLOAD.validate_python(payload)
        if self._fence is not None and kind != EventKind.SEAT_RETURNED:
            # A paid answer is kept whoever paid for it (its step makes it one copy);
            # everything else, the call before paying above all, needs the claim.
            await self._fence()
        for _ in range(MAX_APPEND_ATTEMPTS - 1):
            try:
                return await self._append_once(deliberation_id, kind, payload, step)
            except IntegrityError:
                if step is not None and (known := await self.step(deliberation_id, step)):
                    return known
        return await self._append_once(deliberation_id, kind, payload, step)

    async def _append_once(
        self,
        deliberation_id: str,
        kind: EventKind,
        payload: dict[str, JsonValue],
        step: str | None,
    ) -> LedgerEvent:
        async with self._db.session() as session:
            await _lock_deliberation(session, deliberation_id)
            if step is not None and (known := await _step_row(session, deliberation_id, step)):
                return to_event(known)
            row = LedgerEventRow(
                deliberation_id=deliberation_id,
                seq=await _next_seq(session, deliberation_id),
                kind=kind.value,
                step=step,
                payload=payload,
                created_at=utc_now(),
            )
            session.add(row)
            await session.flush()
            return to_event(row)

    async def guard(self) -> None:
        """The fence alone: raise if this runner lost its claim (nothing is written)."""
        if self._fence is not None:
            await self._fence()

    async def append_many(
        self, deliberation_id: str, events: Sequence[PendingEvent]
    ) -> list[LedgerEvent]:
        """Every event in one transaction, in order (a phase step's; see
        `bot.council.ledger.StepWriter`). The fence runs once; refused, the returned answers
        among the events are still written (as `append` keeps them) and the refusal raised."""
        checked = [PendingEvent(e.kind, PAYLOAD.validate_python(e.payload), e.step) for e in events]
        if not checked:
            return []
        if self._fence is not None and any(e.kind != EventKind.SEAT_RETURNED for e in checked):
            try:
                await self._fence()
            except Exception:
                answers = [e for e in checked if e.kind == EventKind.SEAT_RETURNED]
                if answers:
                    await self._append_many(deliberation_id, answers)
                raise
        return await self._append_many(deliberation_id, checked)

    async def _append_many(
        self, deliberation_id: str, events: Sequence[PendingEvent]
    ) -> list[LedgerEvent]:
        for _ in range(MAX_APPEND_ATTEMPTS - 1):
            try:
                return await self._append_many_once(deliberation_id, events)
            except IntegrityError:
                continue  # another writer committed meanwhile: look again
        return await self._append_many_once(deliberation_id, events)

    async def _append_many_once(
        self, deliberation_id: str, events: Sequence[PendingEvent]
    ) -> list[LedgerEvent]:
        async with self._db.session() as session:
            await _lock_deliberation(session, deliberation_id)
            steps = [e.step for e in events if e.step is not None]
            known: dict[str, LedgerEvent] = {}
            if steps:
                query = select(LedgerEventRow).where(
                    LedgerEventRow.deliberation_id == deliberation_id,
                    LedgerEventRow.step.in_(steps),
                )
                known = {
                    row.step: to_event(row) for row in await session.scalars(query) if row.step
                }
            seq = await _next_seq(session, deliberation_id)
            written: list[LedgerEvent | LedgerEventRow] = []
            rows: list[LedgerEventRow] = []
            for event in events:
                if event.step is not None and event.step in known:
                    written.append(known[event.step])
                    continue
                row = LedgerEventRow(
                    deliberation_id=deliberation_id,
                    seq=seq,
                    kind=event.kind.value,
                    step=event.step,
                    payload=event.payload,
                    created_at=utc_now(),
                )
                seq += 1
                rows.append(row)
                written.append(row)
                if event.step is not None:
                    known[event.step] = to_event(row)  # a step twice in one batch: once
            session.add_all(rows)
            await session.flush()
            return [w if isinstance(w, LedgerEvent) else to_event(w) for w in written]

    async def events(self, deliberation_id: str) -> list[LedgerEvent]:
        query = (
            select(LedgerEventRow)
            .where(LedgerEventRow.deliberation_id == deliberation_id)
            .order_by(LedgerEventRow.seq)
        )
        async with self._db.session(readonly=True) as session:
            return [to_event(row) for row in await session.scalars(query)]

    async def step(self, deliberation_id: str, step: str) -> LedgerEvent | None:
        async with self._db.session(readonly=True) as session:
            row = await _step_row(session, deliberation_id, step)
            return to_event(row) if row is not None else None
