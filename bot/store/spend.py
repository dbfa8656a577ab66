"""The App's spend budget: `bot.council`'s `Budget`, kept in the store.

Each call's likely cost (`bot.council.reserving`: its input estimate and its model's usual
answer; the worst case for a model never seen) is reserved before it starts, against three
caps at once: the deliberation's (`max_cost_usd`), the pull request's over all its
deliberations (`max_pr_cost_usd`) and the installation's for the UTC day
(`COUNCIL_MAX_DAILY_COST_USD`). A reservation is admitted only if every cap has room for
what the call needs at the least (`need_usd`), and it says how much room the tightest cap
had left beyond what it holds (`Reservation.room_usd`): the call's output limit is clipped
to that room. What is charged (settled calls at their cost, open reservations in full) is
kept in `daily_costs` and `pr_costs`; each reservation is a row of `spend_reservations`.

Why the store and not Redis: the store is the record of what was spent, and a reservation
must check the caps and change that record in one step. Kept in Redis, the hold and the
record could disagree after a crash, and the daily total would live in two places. One
transaction per reservation makes it atomic across workers:

- PostgreSQL: the deliberation's row is locked first (`SELECT ... FOR UPDATE`); then each
  counter is raised by a conditional `UPDATE ... SET cost_usd = cost_usd + :amount WHERE
  ... AND cost_usd + :need <= :cap`, which takes the row's lock and re-reads the row once
  the lock is free, so two workers can never both pass a cap only one of them fits. Every
  transaction locks in one order (deliberation, day, pull request), so none deadlocks.
- SQLite: write transactions begin IMMEDIATE (`bot/store/db.py`): one writer at a time.

A refusal rolls the whole transaction back: nothing is held for a call that does not start.
"""

from __future__ import annotations

import uuid
from collections.abc import Callable
from dataclasses import dataclass
from datetime import UTC, date, datetime
from enum import StrEnum
from typing import Any

from pydantic import BaseModel, ConfigDict
from sqlalchemy import ColumnElement, case, func, select, update
from sqlalchemy.dialects import postgresql, sqlite
from sqlalchemy.ext.asyncio import AsyncSession

from bot.council.budget import DELIBERATION_CAP, CapReached, Reservation
from bot.store.db import Database
from bot.store.deliberations import DeliberationNotFoundError
from bot.store.models import (
    DailyCostRow,
    DeliberationRow,
    PullRequestCostRow,
    SpendReservationRow,
    utc_now,
)

__all__ = [
    "DAILY_CAP",
    "PR_CAP",
    "ReservationRecord",
    "ReservationState",
    "SpendCaps",
    "StoreBudget",
    "deliberation_charged",
    "pr_cost",
    "reservations",
    "utc_today",
]

DAILY_CAP = "the installation's daily cost cap"
PR_CAP = "the pull request's cost cap"

CounterRow = type[DailyCostRow] | type[PullRequestCostRow]


def utc_today() -> date:
    return datetime.now(UTC).date()


class ReservationState(StrEnum):
    RESERVED = "reserved"  # held in full: the call is under way, or its outcome is unknown
    SETTLED = "settled"  # charged at what the call cost
    RELEASED = "released"  # the call was never billed


@dataclass(frozen=True)
class SpendCaps:
    """USD caps; None: no cap (the spend is still recorded)."""

    deliberation_usd: float | None = None
    pr_usd: float | None = None
    daily_usd: float | None = None


class ReservationRecord(BaseModel):
    model_config = ConfigDict(frozen=True, from_attributes=True)

    id: str
    deliberation_id: str
    label: str
    installation_id: int | None
    day: date | None
    repo: str
    pr_number: int | None
    state: ReservationState
    reserved_usd: float
    actual_usd: float | None
    created_at: datetime
    settled_at: datetime | None


class _Refused(Exception):
    """Raised inside a reservation's transaction to roll it back."""

    def __init__(self, refusal: CapReached) -> None:
        super().__init__(str(refusal))
        self.refusal = refusal


def _charged() -> ColumnElement[Any]:
    """What one reservation row charges: its cost once settled, all of it while held."""
    row = SpendReservationRow
    return case(
        (row.state == ReservationState.SETTLED.value, row.actual_usd),
        (row.state == ReservationState.RESERVED.value, row.reserved_usd),
        else_=0.0,
    )


def _key(table: CounterRow, key: dict[str, Any]) -> list[ColumnElement[bool]]:
    return [getattr(table, name) == value for name, value in key.items()]


class StoreBudget:
    """Reservations for one deliberation; its row gives the installation and the PR
    charged (a deliberation without a PR or an installation has no such cap)."""

    def __init__(
        self,
        db: Database,
        deliberation_id: str,
        caps: SpendCaps,
        *,
        today: Callable[[], date] = utc_today,
    ) -> None:
        self._db = db
        self._id = deliberation_id
        self._caps = caps
        self._today = today

    async def reserve(
        self, amount_usd: float, label: str, *, need_usd: float | None = None
    ) -> Reservation | CapReached:
        need = amount_usd if need_usd is None else max(need_usd, amount_usd)
        try:
            async with self._db.session() as session:
                return await self._reserve(session, amount_usd, need, label)
        except _Refused as refused:
            return refused.refusal

    async def settle(self, reservation: Reservation, actual_usd: float) -> None:
        await self._close(reservation.id, ReservationState.SETTLED, actual_usd)

    async def release(self, reservation: Reservation) -> None:
        await self._close(reservation.id, ReservationState.RELEASED, 0.0)

    async def _reserve(
        self, session: AsyncSession, amount: float, need: float, label: str
    ) -> Reservation | CapReached:
        query = select(DeliberationRow).where(DeliberationRow.id == self._id).with_for_update()
        deliberation = (await session.scalars(query)).one_or_none()
        if deliberation is None:
            raise DeliberationNotFoundError(self._id)
        rooms: list[float] = []
        cap = self._caps.deliberation_usd
        if cap is not None:
            charged = await _deliberation_charged(session, self._id)
            if charged + need > cap:
                return CapReached(DELIBERATION_CAP, cap, charged, need)
            rooms.append(cap - charged - amount)
        day = self._today()
        if deliberation.installation_id is not None:
            key = {"installation_id": deliberation.installation_id, "day": day}
            caps = (self._caps.daily_usd, DAILY_CAP)
            rooms += await self._charge(session, DailyCostRow, key, amount, need, *caps)
        if deliberation.pr_number is not None:
            key = {"repo": deliberation.repo, "pr_number": deliberation.pr_number}
            caps = (self._caps.pr_usd, PR_CAP)
            rooms += await self._charge(session, PullRequestCostRow, key, amount, need, *caps)
        room = min(rooms) if rooms else None
        reservation = Reservation(str(uuid.uuid4()), amount, label, room)
        session.add(
            SpendReservationRow(
                id=reservation.id,
                deliberation_id=self._id,
                label=label[:255],
                installation_id=deliberation.installation_id,
                day=day if deliberation.installation_id is not None else None,
                repo=deliberation.repo,
                pr_number=deliberation.pr_number,
                state=ReservationState.RESERVED.value,
                reserved_usd=amount,
            )
        )
        return reservation

    async def _charge(
        self,
        session: AsyncSession,
        table: CounterRow,
        key: dict[str, Any],
        amount: float,
        need: float,
        cap: float | None,
        cap_name: str,
    ) -> list[float]:
        """Raise one counter by `amount` if `need` fits within `cap`; else refuse. Returns
        the room the cap has left after the raise ([] for no cap)."""
        dialect = postgresql if self._db.backend == "postgresql" else sqlite
        columns = [getattr(table, name) for name in key]
        await session.execute(
            dialect.insert(table)
            .values(**key, cost_usd=0.0)
            .on_conflict_do_nothing(index_elements=columns)
        )
        raise_by = update(table).where(*_key(table, key)).values(cost_usd=table.cost_usd + amount)
        if cap is not None:
            raise_by = raise_by.where(table.cost_usd + need <= cap)
        raised = await session.execute(
            raise_by.returning(table.cost_usd).execution_options(synchronize_session=False)
        )
        charged_now = raised.scalar_one_or_none()
        if charged_now is None:
            assert cap is not None
            charged = await session.scalar(select(table.cost_usd).where(*_key(table, key)))
            raise _Refused(CapReached(cap_name, cap, float(charged or 0.0), need))
        return [] if cap is None else [cap - float(charged_now)]

    async def _close(self, reservation_id: str, state: ReservationState, actual: float) -> None:
        """Replace what a reservation holds by what it charges now, once."""
        async with self._db.session() as session:
            query = select(SpendReservationRow).where(SpendReservationRow.id == reservation_id)
            row = (await session.scalars(query.with_for_update())).one_or_none()
            if row is None or row.state != ReservationState.RESERVED.value:
                return
            delta = actual - row.reserved_usd
            if row.installation_id is not None and row.day is not None:
                key: dict[str, Any] = {"installation_id": row.installation_id, "day": row.day}
                await _add(session, DailyCostRow, key, delta)
            if row.pr_number is not None:
                await _add(
                    session,
                    PullRequestCostRow,
                    {"repo": row.repo, "pr_number": row.pr_number},
                    delta,
                )
            row.state = state.value
            row.actual_usd = actual if state is ReservationState.SETTLED else None
            row.settled_at = utc_now()


async def _add(session: AsyncSession, table: CounterRow, key: dict[str, Any], delta: float) -> None:
    await session.execute(
        update(table)
        .where(*_key(table, key))
        .values(cost_usd=table.cost_usd + delta)
        .execution_options(synchronize_session=False)
    )


async def _deliberation_charged(session: AsyncSession, deliberation_id: str) -> float:
    query = select(func.coalesce(func.sum(_charged()), 0.0)).where(
        SpendReservationRow.deliberation_id == deliberation_id
    )
    return float(await session.scalar(query) or 0.0)


async def deliberation_charged(db: Database, deliberation_id: str) -> float:
    """What a deliberation's calls charge: settled at their cost, open ones in full."""
    async with db.session(readonly=True) as session:
        return await _deliberation_charged(session, deliberation_id)


async def pr_cost(db: Database, repo: str, pr_number: int) -> float:
    """What a pull request's deliberations charge, all of them together."""
    query = select(PullRequestCostRow.cost_usd).where(
        PullRequestCostRow.repo == repo, PullRequestCostRow.pr_number == pr_number
    )
    async with db.session(readonly=True) as session:
        return float(await session.scalar(query) or 0.0)


async def reservations(db: Database, deliberation_id: str) -> list[ReservationRecord]:
    """A deliberation's reservations, oldest first."""
    query = (
        select(SpendReservationRow)
        .where(SpendReservationRow.deliberation_id == deliberation_id)
        .order_by(SpendReservationRow.created_at, SpendReservationRow.id)
    )
    async with db.session(readonly=True) as session:
        return [ReservationRecord.model_validate(row) for row in await session.scalars(query)]
