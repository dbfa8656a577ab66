"""Typed queries over the app's installations (their account and repositories) and each
installation's daily cost.
"""

from __future__ import annotations

from collections.abc import Sequence
from datetime import date, datetime

from sqlalchemy import select
from sqlalchemy.dialects import postgresql, sqlite
from sqlalchemy.sql.dml import ReturningInsert

from bot.store.db import Database, retries_when_locked
from bot.store.deliberations import StoredRecord
from bot.store.models import DailyCostRow, InstallationRow, utc_now


class InstallationRecord(StoredRecord):
    installation_id: int
    account: str
    repositories: list[str]
    updated_at: datetime


@retries_when_locked
async def upsert_installation(
    db: Database, installation_id: int, account: str, repositories: Sequence[str]
) -> InstallationRecord:
    async with db.session() as session:
        row = await session.get(InstallationRow, installation_id, with_for_update=True)
        if row is None:
            row = InstallationRow(installation_id=installation_id)
            session.add(row)
        row.account = account
        row.repositories = sorted(set(repositories))
        row.updated_at = utc_now()
        await session.flush()
        return InstallationRecord.model_validate(row)


async def get_installation(db: Database, installation_id: int) -> InstallationRecord | None:
    async with db.session(readonly=True) as session:
        row = await session.get(InstallationRow, installation_id)
        return InstallationRecord.model_validate(row) if row is not None else None


@retries_when_locked
async def delete_installation(db: Database, installation_id: int) -> bool:
    """Forget an uninstalled installation; False if it was not known."""
    async with db.session() as session:
        row = await session.get(InstallationRow, installation_id)
        if row is None:
            return False
        await session.delete(row)
        return True


def _cost_upsert(
    db: Database, installation_id: int, day: date, usd: float
) -> ReturningInsert[float]:
    """`INSERT ... ON CONFLICT DO UPDATE` adding to the day's total, returning it."""
    values = {"installation_id": installation_id, "day": day, "cost_usd": usd}
    keys = [DailyCostRow.installation_id, DailyCostRow.day]
    if db.backend == "postgresql":
        pg = postgresql.insert(DailyCostRow).values(values)
        return pg.on_conflict_do_update(
            index_elements=keys, set_={"cost_usd": DailyCostRow.cost_usd + pg.excluded.cost_usd}
        ).returning(DailyCostRow.cost_usd)
    lite = sqlite.insert(DailyCostRow).values(values)
    return lite.on_conflict_do_update(
        index_elements=keys, set_={"cost_usd": DailyCostRow.cost_usd + lite.excluded.cost_usd}
    ).returning(DailyCostRow.cost_usd)


@retries_when_locked
async def add_cost(db: Database, installation_id: int, day: date, usd: float) -> float:
    """Add to an installation's spend for a day, atomically; returns the day's total."""
    async with db.session() as session:
        return float(
            (await session.execute(_cost_upsert(db, installation_id, day, usd))).scalar_one()
        )


async def daily_cost(db: Database, installation_id: int, day: date) -> float:
    query = select(DailyCostRow.cost_usd).where(
        DailyCostRow.installation_id == installation_id, DailyCostRow.day == day
    )
    async with db.session(readonly=True) as session:
        return float(await session.scalar(query) or 0.0)
