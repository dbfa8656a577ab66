"""One behavioural suite for every ledger: in memory, SQLite, and PostgreSQL.

What a deliberation relies on: events come back in append order with `seq` 0, 1, 2, ...;
a step already recorded is never recorded twice, even when workers race.
"""

from __future__ import annotations

import asyncio
import uuid
from collections.abc import AsyncIterator, Awaitable, Callable
from dataclasses import dataclass
from datetime import UTC, datetime
from pathlib import Path

import pytest
from pydantic import ValidationError
from sqlalchemy.engine import URL

from bot.council.ledger import (
    EventKind,
    InMemoryLedger,
    Ledger,
    PendingEvent,
    StepWriter,
)
from bot.store import Database, SqlLedger
from bot.store.deliberations import create_deliberation
from tests.support.postgres import worker_database

BACKENDS = ["memory", "sqlite", "postgresql"]


@pytest.fixture(scope="session")
async def ledger_pg_url() -> AsyncIterator[URL | str]:
    """This worker's PostgreSQL database, or the reason there is none (to skip with)."""
    async with worker_database("ledger", drop_stale=True) as found:
        yield found


@dataclass
class LedgerUnderTest:
    ledger: Ledger
    new_deliberation: Callable[[], Awaitable[str]]


async def _sql_deliberation(db: Database) -> str:
    key = f"job-{uuid.uuid4()}"
    record = await create_deliberation(
        db,
        key=key,
        repo="octo/repo",
        pr_number=7,
        head_sha="a" * 40,
        trigger="opened",
        protocol="board",
        topic="Review this pull request",
    )
    return record.id


async def _memory_deliberation() -> str:
    return str(uuid.uuid4())


@pytest.fixture(params=BACKENDS)
async def subject(
    request: pytest.FixtureRequest, tmp_path: Path, ledger_pg_url: URL | str
) -> AsyncIterator[LedgerUnderTest]:
    if request.param == "memory":
        yield LedgerUnderTest(InMemoryLedger(), _memory_deliberation)
        return
    if request.param == "sqlite":
        url: URL | str = f"sqlite:///{tmp_path / 'council.db'}"
    elif isinstance(ledger_pg_url, URL):
        url = ledger_pg_url
    else:
        pytest.skip(ledger_pg_url)
    db = Database(url)
    await db.connect()
    try:
        yield LedgerUnderTest(SqlLedger(db), lambda: _sql_deliberation(db))
    finally:
        await db.dispose()


async def test_implements_the_protocol(subject: LedgerUnderTest) -> None:
    assert isinstance(subject.ledger, Ledger)


async def test_events_come_back_in_append_order(subject: LedgerUnderTest) -> None:
    ledger, did = subject.ledger, await subject.new_deliberation()
    kinds = [EventKind.CONVENED, EventKind.SEAT_CALLED, EventKind.SEAT_RETURNED, EventKind.FAILED]
    for index, kind in enumerate(kinds):
        await ledger.append(did, kind, {"index": index, "nested": {"list": [1, "two", None]}})

    events = await ledger.events(did)

    assert [event.seq for event in events] == [0, 1, 2, 3]
    assert [event.kind for event in events] == kinds
    assert events[2].payload == {"index": 2, "nested": {"list": [1, "two", None]}}
    assert all(event.deliberation_id == did for event in events)
    assert all(event.created_at.tzinfo is not None for event in events)
    assert events[0].created_at.astimezone(UTC) <= events[-1].created_at.astimezone(UTC)


async def test_each_deliberation_counts_from_zero(subject: LedgerUnderTest) -> None:
    first, second = await subject.new_deliberation(), await subject.new_deliberation()
    await subject.ledger.append(first, EventKind.CONVENED, {})
    await subject.ledger.append(first, EventKind.RESOLVED, {})
    event = await subject.ledger.append(second, EventKind.CONVENED, {})

    assert event.seq == 0
    assert [e.seq for e in await subject.ledger.events(first)] == [0, 1]
    assert await subject.ledger.events(str(uuid.uuid4())) == []


async def test_a_recorded_step_is_returned_not_repeated(subject: LedgerUnderTest) -> None:
    ledger, did = subject.ledger, await subject.new_deliberation()
    first = await ledger.append(
        did, EventKind.SEAT_RETURNED, {"answer": "first"}, step="assess/seat-1/1"
    )
    again = await ledger.append(
        did, EventKind.SEAT_RETURNED, {"answer": "second"}, step="assess/seat-1/1"
    )

    assert again == first
    assert again.payload == {"answer": "first"}
    assert [e.step for e in await ledger.events(did)] == ["assess/seat-1/1"]


async def test_step_lookup(subject: LedgerUnderTest) -> None:
    ledger, did = subject.ledger, await subject.new_deliberation()
    assert await ledger.step(did, "vote/seat-1") is None

    cast = await ledger.append(did, EventKind.VOTE_CAST, {"vote": "APPROVE"}, step="vote/seat-1")

    assert await ledger.step(did, "vote/seat-1") == cast
    assert await ledger.step(did, "vote/seat-2") is None
    # Steps are per deliberation: the same key elsewhere is a different step.
    assert await ledger.step(await subject.new_deliberation(), "vote/seat-1") is None


async def test_events_without_a_step_are_all_kept(subject: LedgerUnderTest) -> None:
    ledger, did = subject.ledger, await subject.new_deliberation()
    for _ in range(3):
        await ledger.append(did, EventKind.ROUND_ENDED, {})

    assert [e.step for e in await ledger.events(did)] == [None, None, None]


async def test_concurrent_distinct_steps_get_gapless_seqs(subject: LedgerUnderTest) -> None:
    ledger, did = subject.ledger, await subject.new_deliberation()

    appended = await asyncio.gather(
        *(
            ledger.append(did, EventKind.SEAT_RETURNED, {"seat": n}, step=f"assess/seat-{n}/1")
            for n in range(20)
        )
    )

    assert sorted(event.seq for event in appended) == list(range(20))
    stored = await ledger.events(did)
    assert [event.seq for event in stored] == list(range(20))
    assert {event.step for event in stored} == {f"assess/seat-{n}/1" for n in range(20)}
    assert {event.seq: event.payload for event in stored} == {
        event.seq: event.payload for event in appended
    }


async def test_concurrent_same_step_is_recorded_once(subject: LedgerUnderTest) -> None:
    ledger, did = subject.ledger, await subject.new_deliberation()
    await ledger.append(did, EventKind.CONVENED, {"seats": 3})

    appended = await asyncio.gather(
        *(
            ledger.append(did, EventKind.SYNTHESIZED, {"worker": n}, step="synthesize")
            for n in range(10)
        )
    )

    stored = await ledger.events(did)
    assert [event.kind for event in stored] == [EventKind.CONVENED, EventKind.SYNTHESIZED]
    assert all(event == stored[1] for event in appended)


async def test_a_payload_that_is_not_json_is_refused_unwritten(subject: LedgerUnderTest) -> None:
    ledger, did = subject.ledger, await subject.new_deliberation()

    with pytest.raises(ValidationError):
        await ledger.append(did, EventKind.FAILED, {"at": datetime.now(UTC)}, step="fail")  # type: ignore[dict-item]

    assert await ledger.events(did) == []
    assert await ledger.step(did, "fail") is None


# --- several events in one transaction (the engine's phase steps) -------------------------


async def test_append_many_writes_in_order_and_skips_recorded_steps(
    subject: LedgerUnderTest,
) -> None:
    ledger, did = subject.ledger, await subject.new_deliberation()
    assert isinstance(ledger, Ledger)
    first = await ledger.append(did, EventKind.SEAT_RETURNED, {"n": 0}, step="assess/seat-1/0")

    written = await ledger.append_many(
        did,
        [
            PendingEvent(EventKind.SEAT_CALLED, {"n": 1}),
            PendingEvent(EventKind.SEAT_RETURNED, {"n": 2}, "assess/seat-1/0"),  # recorded
            PendingEvent(EventKind.SEAT_RETURNED, {"n": 3}, "assess/seat-2/0"),
            PendingEvent(EventKind.VOTE_CAST, {"n": 4}, "vote_cast/seat-2"),
        ],
    )

    assert written[1] == first
    assert [e.payload["n"] for e in written] == [1, 0, 3, 4]
    stored = await ledger.events(did)
    assert [e.seq for e in stored] == [0, 1, 2, 3]
    assert [e.payload["n"] for e in stored] == [0, 1, 3, 4]
    assert await ledger.step(did, "vote_cast/seat-2") == stored[3]
    assert await ledger.append_many(did, []) == []


async def test_a_step_writer_writes_at_flush_and_reads_nothing_when_fresh(
    subject: LedgerUnderTest,
) -> None:
    ledger, did = subject.ledger, await subject.new_deliberation()
    writer = StepWriter(ledger, did, await ledger.events(did))
    assert writer.fresh
    writer.append(EventKind.SEAT_CALLED, {"n": 1})
    writer.append(EventKind.SEAT_RETURNED, {"n": 2}, step="assess/seat-1/0")
    writer.append(EventKind.SEAT_RETURNED, {"n": 9}, step="assess/seat-1/0")  # kept once
    kept = await writer.step("assess/seat-1/0")
    assert kept is not None and kept.payload == {"n": 2}
    assert await ledger.events(did) == []  # nothing written before the step ends

    await writer.flush()
    await writer.flush()  # nothing more to write: no transaction
    assert writer.transactions == 1
    assert [e.payload for e in await ledger.events(did)] == [{"n": 1}, {"n": 2}]
    resumed = StepWriter(ledger, did, await ledger.events(did))
    assert not resumed.fresh  # a resumed deliberation reads its steps, as before
    recorded = await resumed.step("assess/seat-1/0")
    assert recorded is not None and recorded.payload == {"n": 2}


async def test_a_lost_claim_refuses_the_batch_but_keeps_its_answers(tmp_path: Path) -> None:
    db = Database(f"sqlite:///{tmp_path / 'council.db'}")
    await db.connect()
    try:
        did = await _sql_deliberation(db)

        async def lost() -> None:
            raise PermissionError("the claim is lost")

        fenced = SqlLedger(db, fence=lost)
        with pytest.raises(PermissionError):
            await fenced.guard()
        with pytest.raises(PermissionError):
            await fenced.append_many(
                did,
                [
                    PendingEvent(EventKind.SEAT_CALLED, {"n": 1}),
                    PendingEvent(EventKind.SEAT_RETURNED, {"n": 2}, "assess/seat-1/0"),
                    PendingEvent(EventKind.VOTE_CAST, {"n": 3}, "vote_cast/seat-1"),
                ],
            )
        stored = await SqlLedger(db).events(did)
        assert [(e.kind, e.payload) for e in stored] == [(EventKind.SEAT_RETURNED, {"n": 2})]
    finally:
        await db.dispose()
