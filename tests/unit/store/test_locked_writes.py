"""A store write SQLite refuses as "database is locked" is tried again, whole, until the
lock is gone (within `lock_retry_s`), as for a superseded review's status: another
connection - another process, as a busy worker or `council review` is - holds the write
lock on the same SQLite file for about a second meanwhile.

The store's busy timeout is made short here (0.1 s) so that SQLite gives up waiting well
inside that second, as it does under load with the default one (or at once, where its busy
handler does not apply); what must then save the write is the store's retry.
"""

from __future__ import annotations

import asyncio
import sqlite3
import time
from collections.abc import AsyncIterator, Awaitable, Callable
from pathlib import Path
from typing import Any

import pytest
from sqlalchemy.exc import OperationalError

from bot.store.db import Database
from bot.store.deliberations import (
    DeliberationRecord,
    DeliberationStatus,
    create_deliberation,
    get_deliberation,
    record_publication,
    set_status,
)

HOLD_S = 1.0


@pytest.fixture
def path(tmp_path: Path) -> Path:
    return tmp_path / "council.db"


async def open_store(path: Path, **options: Any) -> Database:
    db = Database(f"sqlite:///{path}", busy_timeout_s=0.1, **options)
    await db.connect()
    return db


@pytest.fixture
async def db(path: Path) -> AsyncIterator[Database]:
    store = await open_store(path)
    try:
        yield store
    finally:
        await store.dispose()


async def running(db: Database) -> DeliberationRecord:
    return await create_deliberation(
        db,
        key=f"command:{time.time_ns()}",
        repo="acme/widgets",
        pr_number=3,
        head_sha="ab" * 20,
        trigger="command",
        protocol="quick",
        topic="Review",
    )


class WriteLock:
    """Another connection to the SQLite file that takes its write lock and lets it go after
    `seconds` (or when closed)."""

    def __init__(self, path: Path, seconds: float) -> None:
        connection = sqlite3.connect(path, isolation_level=None, check_same_thread=False)
        connection.execute("BEGIN IMMEDIATE")
        connection.execute("UPDATE deliberations SET updated_at = updated_at")
        self.connection: sqlite3.Connection | None = connection
        self.release = asyncio.get_running_loop().call_later(seconds, self.close)

    def close(self) -> None:
        self.release.cancel()
        if self.connection is not None:
            self.connection.execute("COMMIT")
            self.connection.close()
            self.connection = None


async def while_locked(
    path: Path, write: Callable[[], Awaitable[Any]], seconds: float = HOLD_S
) -> tuple[Any, float]:
    lock = WriteLock(path, seconds)
    try:
        started = time.monotonic()
        result = await write()
        return result, time.monotonic() - started
    finally:
        lock.close()


async def test_a_stopped_review_s_status_write_waits_out_the_lock(db: Database, path: Path) -> None:
    record = await running(db)
    stopped, waited = await while_locked(
        path,
        lambda: set_status(
            db,
            record.id,
            DeliberationStatus.SUPERSEDED,
            resolution="CANCELLED",
            conclusion="cancelled",
        ),
    )
    assert waited >= HOLD_S * 0.9  # it did meet the lock, and outlasted it
    assert stopped.status == DeliberationStatus.SUPERSEDED
    kept = await get_deliberation(db, record.id)
    assert kept is not None
    assert (kept.status, kept.resolution, kept.conclusion) == (
        DeliberationStatus.SUPERSEDED,
        "CANCELLED",
        "cancelled",
    )


async def test_the_other_record_writes_wait_out_the_lock_too(db: Database, path: Path) -> None:
    record = await running(db)
    published, _ = await while_locked(
        path, lambda: record_publication(db, record.id, check_run_id=42), 0.5
    )
    assert published.check_run_id == 42
    created, waited = await while_locked(path, lambda: running(db), 0.5)
    assert waited >= 0.45
    assert await get_deliberation(db, created.id) is not None


async def test_a_lock_held_past_the_retry_time_is_still_an_error(path: Path) -> None:
    store = await open_store(path, lock_retry_s=0.3)
    try:
        record = await running(store)
        started = time.monotonic()
        with pytest.raises(OperationalError, match="database is locked"):
            await while_locked(
                path, lambda: set_status(store, record.id, DeliberationStatus.CANCELLED)
            )
        assert time.monotonic() - started < HOLD_S
        kept = await get_deliberation(store, record.id)
        assert kept is not None and kept.status == DeliberationStatus.RUNNING
    finally:
        await store.dispose()
