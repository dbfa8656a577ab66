"""Deliveries the receiver could not enqueue, kept until Redis is back.

When Redis fails or does not answer in time, the receiver keeps the routed delivery here
and still answers GitHub (which never redelivers by itself); the web process's drainer
enqueues the oldest ones once Redis answers, then deletes them. Enqueueing deduplicates
by delivery id, so a delivery that reached Redis after all, or that two web processes
drain at once, still makes one job: deleting is all that must not come first.
"""

from __future__ import annotations

from datetime import datetime

from pydantic import BaseModel, ConfigDict
from sqlalchemy import delete, select
from sqlalchemy.dialects import postgresql, sqlite

from bot.store.db import Database
from bot.store.models import PendingDeliveryRow

__all__ = ["PendingDelivery", "delete_pending", "keep_delivery", "oldest_pending"]


class PendingDelivery(BaseModel):
    """One kept delivery: its job (id, function, `JobRequest` JSON) and where it came from."""

    model_config = ConfigDict(frozen=True, from_attributes=True)

    delivery_id: str
    job_id: str
    function: str
    payload: str
    body_digest: str
    received_at: datetime


async def keep_delivery(db: Database, delivery: PendingDelivery) -> bool:
    """Keep `delivery`; False if its delivery id is kept already (the first copy stays)."""
    dialect = postgresql if db.backend == "postgresql" else sqlite
    statement = (
        dialect.insert(PendingDeliveryRow)
        .values(**delivery.model_dump())
        .on_conflict_do_nothing(index_elements=[PendingDeliveryRow.delivery_id])
        .returning(PendingDeliveryRow.delivery_id)
    )
    async with db.session() as session:
        return (await session.execute(statement)).scalar_one_or_none() is not None


async def oldest_pending(db: Database, limit: int) -> list[PendingDelivery]:
    """Up to `limit` kept deliveries, the oldest first."""
    query = (
        select(PendingDeliveryRow)
        .order_by(PendingDeliveryRow.received_at, PendingDeliveryRow.delivery_id)
        .limit(limit)
    )
    async with db.session(readonly=True) as session:
        rows = (await session.scalars(query)).all()
        return [PendingDelivery.model_validate(row) for row in rows]


async def delete_pending(db: Database, delivery_id: str) -> bool:
    """Forget a kept delivery (it is enqueued); False if it was not kept."""
    statement = (
        delete(PendingDeliveryRow)
        .where(PendingDeliveryRow.delivery_id == delivery_id)
        .returning(PendingDeliveryRow.delivery_id)
    )
    async with db.session() as session:
        return (await session.execute(statement)).scalar_one_or_none() is not None
