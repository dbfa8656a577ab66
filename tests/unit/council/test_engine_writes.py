"""What a deliberation writes to its ledger: one transaction per phase step, no read before a
call of a fresh deliberation, and what a step paid for kept when the step is cut short.

Counted on the real database engine (SQLAlchemy's own events), against the fake model
server through the real SDKs.
"""

from __future__ import annotations

import asyncio
from collections.abc import AsyncIterator
from pathlib import Path
from typing import Any

import pytest
from sqlalchemy import event

from bot.council.advisory import Resolution
from bot.council.budget import CapReached, InMemoryBudget, Reservation
from bot.council.engine import Engine, ProgressEvent
from bot.council.ledger import EventKind
from bot.council.personas import load_catalog
from bot.providers import ProviderRegistry
from bot.store.db import Database
from bot.store.deliberations import create_deliberation
from bot.store.ledger import SqlLedger
from tests.support.council_answers import CouncilScript
from tests.support.model_server import FakeModelServer, Fault
from tests.unit.council.test_engine import ANTHROPIC, engine, request
from tests.unit.providers.test_providers import make_settings

# The one read of what the ledger held when the deliberation started; then convened,
# assess, discussion round 1, vote, resolve, and the synthesis with the advisory.
MAX_TRANSACTIONS = 7


@pytest.fixture
async def registry(models: FakeModelServer) -> AsyncIterator[ProviderRegistry]:
    reg = ProviderRegistry(make_settings(models, max_retries=0))
    yield reg
    await reg.aclose()


@pytest.fixture
async def db(tmp_path: Path) -> AsyncIterator[Database]:
    database = Database(f"sqlite+aiosqlite:///{tmp_path / 'ledger.db'}")
    await database.connect()
    yield database
    await database.dispose()


async def new_deliberation(db: Database, key: str = "job-1") -> str:
    record = await create_deliberation(
        db,
        key=key,
        repo="o/r",
        pr_number=1,
        head_sha="abc",
        trigger="command",
        protocol="board",
        topic="t",
    )
    return record.id


class Statements:
    """Transactions committed and ledger statements run, on the real engine."""

    def __init__(self, db: Database) -> None:
        self.commits = 0
        self.ledger_reads = 0
        engine = db.engine.sync_engine
        event.listen(engine, "commit", self._commit)
        event.listen(engine, "before_cursor_execute", self._statement)

    def _commit(self, _conn: Any) -> None:
        self.commits += 1

    def _statement(self, _conn: Any, _cursor: Any, sql: str, *_: Any) -> None:
        text = sql.lstrip().upper()
        if text.startswith("SELECT") and "FROM LEDGER_EVENTS" in text:
            self.ledger_reads += 1


async def test_a_fresh_board_writes_one_transaction_per_answer_and_per_phase_step(
    models: FakeModelServer, registry: ProviderRegistry, db: Database
) -> None:
    models.default(CouncilScript().reply)
    did = await new_deliberation(db)
    counted = Statements(db)
    advisory = await engine(registry, SqlLedger(db)).deliberate(request(did=did))
    assert advisory.resolution == Resolution.APPROVED
    events = await SqlLedger(db).events(did)
    calls = len(models.calls)
    assert sum(e.kind == EventKind.SEAT_RETURNED for e in events) == calls
    assert sum(e.kind == EventKind.SEAT_CALLED for e in events) == calls
    assert [e.seq for e in events] == list(range(len(events)))
    # Each paid answer is written as it arrives (with the events before it); the events of
    # a step that are not answers go with the step's end: far fewer than one per event.
    assert counted.commits <= calls + MAX_TRANSACTIONS + 1  # + the events() read above
    assert len(events) > 1.5 * counted.commits
    # No "is this step recorded?" read before a call: the start's read, each flush's look-up
    # of its steps and its next seq, and the events() above.
    assert counted.ledger_reads <= 1 + 2 * (calls + MAX_TRANSACTIONS) + 1


async def test_a_resumed_deliberation_still_replays_each_recorded_step(
    models: FakeModelServer, registry: ProviderRegistry, db: Database
) -> None:
    models.default(CouncilScript().reply)
    did = await new_deliberation(db)
    first = await engine(registry, SqlLedger(db)).deliberate(request(did=did))
    made = len(models.calls)
    models.calls.clear()
    second = await engine(registry, SqlLedger(db)).deliberate(request(did=did))
    assert models.calls == []
    assert second.resolution == first.resolution
    assert second.usage.calls == made
    kinds = [e.kind for e in await SqlLedger(db).events(did)]
    assert kinds.count(EventKind.SEAT_RETURNED) == made
    assert kinds.count(EventKind.SYNTHESIZED) == 1


async def test_a_deliberation_cut_mid_phase_keeps_what_that_phase_paid_for(
    models: FakeModelServer, registry: ProviderRegistry, db: Database
) -> None:
    """Cancelled (a worker's graceful stop, a lost claim) while one assessment hangs, the
    assessments that came back are written; the resumed run asks only for the rest."""
    models.default(CouncilScript().reply)
    models.on(
        lambda r: r.output_name == "submit_assessment" and r.api == "openai",
        reply=Fault.hang(),
        times=1,
    )
    did = await new_deliberation(db)
    returned: list[str | None] = []  # seats whose answer the engine has taken in

    def progress(event: ProgressEvent) -> None:
        if event.phase == "assess" and event.status == "ok":
            returned.append(event.seat_id)

    running = Engine(registry, load_catalog(), SqlLedger(db), on_progress=progress)
    task = asyncio.create_task(running.deliberate(request(did=did)))
    for _ in range(400):
        if len(returned) >= 2:
            break
        await asyncio.sleep(0.025)
    assert len(returned) == 2  # the third assessment hangs: the phase is mid-way
    # Already written, before anything ends the phase: a worker killed now (SIGKILL, the
    # machine lost) leaves these answers in the ledger, and they are never paid twice.
    before = await SqlLedger(db).events(did)
    assert {e.step for e in before if e.kind == EventKind.SEAT_RETURNED} == {
        f"assess/{seat}/0" for seat in returned
    }
    task.cancel()
    with pytest.raises(asyncio.CancelledError):
        await task
    events = await SqlLedger(db).events(did)
    written = {e.step for e in events if e.kind == EventKind.SEAT_RETURNED}
    assert written == {f"assess/{seat}/0" for seat in returned}

    paid = {c.label for c in models.calls if c.status == 200}
    models.calls.clear()
    resumed = await engine(registry, SqlLedger(db)).deliberate(request(did=did))
    assert resumed.resolution == Resolution.APPROVED
    again = {c.label for c in models.calls if c.status == 200}
    assert paid & again == set()  # nothing answered before the cut was asked again


class SlowBudget(InMemoryBudget):
    """Reservations one at a time, each a round trip (as a budget in the database is)."""

    def __init__(self) -> None:
        super().__init__(None)
        self._one_at_a_time = asyncio.Lock()

    async def reserve(
        self, amount_usd: float, label: str, *, need_usd: float | None = None
    ) -> Reservation | CapReached:
        async with self._one_at_a_time:
            await asyncio.sleep(ROUND_TRIP_S)
            return await super().reserve(amount_usd, label, need_usd=need_usd)


ROUND_TRIP_S = 0.05
FIRST_TOKEN_S = 0.3


async def test_every_seat_of_a_phase_is_sent_as_its_leaders_response_begins(
    models: FakeModelServer, registry: ProviderRegistry
) -> None:
    """The seats waiting for their leader reserve before they wait, so a slow budget does
    not delay the last seat by every seat's round trip after the leader's first token."""
    models.default(CouncilScript(latency_s=0.5, first_token_s=FIRST_TOKEN_S).reply)
    await engine(registry).deliberate(request(models=[ANTHROPIC]), budget=SlowBudget())
    assess = sorted(
        c.started_at for c in models.calls if c.request.output_name == "submit_assessment"
    )
    assert len(assess) == 3
    leader, last = assess[0], assess[-1]
    # Reserving after the wait, the last seat would go 2 round trips later than this.
    assert last - leader < FIRST_TOKEN_S + 1.5 * ROUND_TRIP_S
