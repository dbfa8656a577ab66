"""Deliveries kept while Redis is unavailable, on SQLite files and on PostgreSQL: kept once
per delivery id, listed oldest first and bounded, deleted once."""

from __future__ import annotations

import asyncio
import uuid
from collections.abc import AsyncIterator
from datetime import UTC, datetime, timedelta
from pathlib import Path

import pytest

from bot.store import Database
from bot.store.pending import PendingDelivery, delete_pending, keep_delivery, oldest_pending
from tests.support.postgres import PostgresServer, find_postgres

BACKENDS = ["sqlite", "postgresql"]
NOW = datetime(2026, 12, 8, 9, 30, tzinfo=UTC)


@pytest.fixture(scope="session")
async def pending_pg() -> AsyncIterator[PostgresServer | str]:
    """This worker's PostgreSQL server, or why there is none (the PG cases then skip)."""
    server, reason = await find_postgres()
    yield reason if server is None else server


@pytest.fixture(params=BACKENDS)
async def db(
    request: pytest.FixtureRequest, tmp_path: Path, pending_pg: PostgresServer | str
) -> AsyncIterator[Database]:
    """An empty store of its own per test: listing sees every kept delivery."""
    if request.param == "sqlite":
        async with Database(f"sqlite:///{tmp_path / 'council.db'}") as database:
            yield database
        return
    if isinstance(pending_pg, str):
        pytest.skip(pending_pg)
    async with pending_pg.database("pending") as url, Database(url) as database:
        yield database


def delivery(received_at: datetime = NOW, **changes: str) -> PendingDelivery:
    identifier = changes.pop("delivery_id", str(uuid.uuid4()))
    values = {
        "delivery_id": identifier,
        "job_id": f"comment:{uuid.uuid4().int % 10**12}",
        "function": "deliberate",
        "payload": f'{{"trigger": "command", "delivery_id": "{identifier}"}}',
        "body_digest": uuid.uuid4().hex * 2,
        "received_at": received_at,
    }
    return PendingDelivery.model_validate(values | changes)


async def test_a_kept_delivery_comes_back_as_it_was_kept(db: Database) -> None:
    kept = delivery(job_id="pr:octo/" + "x" * 300 + ":1:" + "a" * 40 + ":label:bug")

    assert await keep_delivery(db, kept) is True

    assert await oldest_pending(db, 10) == [kept]
    (back,) = await oldest_pending(db, 10)
    assert back.received_at.tzinfo is not None


async def test_a_delivery_id_is_kept_once_and_the_first_copy_stays(db: Database) -> None:
    first = delivery()
    again = delivery(delivery_id=first.delivery_id, received_at=NOW + timedelta(seconds=5))

    assert await keep_delivery(db, first) is True
    assert await keep_delivery(db, again) is False

    assert await oldest_pending(db, 10) == [first]


async def test_deliveries_are_listed_oldest_first_and_bounded(db: Database) -> None:
    kept = [delivery(NOW + timedelta(seconds=offset)) for offset in (30, 0, 20, 10)]
    for each in kept:
        await keep_delivery(db, each)
    by_age = sorted(kept, key=lambda each: each.received_at)

    assert await oldest_pending(db, 10) == by_age
    assert await oldest_pending(db, 2) == by_age[:2]


async def test_deleting_forgets_one_delivery_once(db: Database) -> None:
    gone, stays = delivery(NOW), delivery(NOW + timedelta(seconds=1))
    await keep_delivery(db, gone)
    await keep_delivery(db, stays)

    assert await delete_pending(db, gone.delivery_id) is True
    assert await delete_pending(db, gone.delivery_id) is False

    assert await oldest_pending(db, 10) == [stays]


async def test_two_handles_keeping_one_delivery_at_once_keep_it_once(
    db: Database,
) -> None:
    """Two web processes receiving one redelivery: one row, and exactly one of them wins."""
    other = Database(db.url)
    try:
        kept = delivery()
        results = await asyncio.gather(keep_delivery(db, kept), keep_delivery(other, kept))
    finally:
        await other.dispose()

    assert sorted(results) == [False, True]
    assert await oldest_pending(db, 10) == [kept]
