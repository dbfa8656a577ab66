"""The App's budget in the store, on SQLite files and on PostgreSQL: reservations against
the deliberation's, the pull request's and the installation's daily cap, atomic across
workers (each worker here is its own `Database`, i.e. its own connections), and a
reservation nobody settled (its worker died mid-call) stays charged.
"""

from __future__ import annotations

import asyncio
import contextlib
import random
import uuid
from collections.abc import AsyncIterator
from datetime import date
from pathlib import Path
from typing import Any

import pytest
from sqlalchemy.engine import URL

from bot.council.advisory import Advisory, Resolution
from bot.council.board import BoardConfig
from bot.council.budget import CapReached, InMemoryBudget, Reservation
from bot.council.engine import DeliberationRequest, Engine
from bot.council.ledger import InMemoryLedger
from bot.council.personas import load_catalog
from bot.council.scoring import ReviewSignals
from bot.store import Database, SqlLedger
from bot.store.deliberations import DeliberationRecord, create_deliberation
from bot.store.installations import add_cost, daily_cost
from bot.store.spend import (
    ReservationState,
    SpendCaps,
    StoreBudget,
    deliberation_charged,
    pr_cost,
    reservations,
)
from tests.support.council_answers import CouncilScript
from tests.support.fake_provider import DEFAULT_MODELS, FakeProviders, ProviderFault
from tests.support.postgres import store_url, worker_database

BACKENDS = ["sqlite", "postgresql"]
CATALOG = load_catalog()
DAY = date(2026, 3, 2)
ASSESS = "submit_assessment"


@pytest.fixture(scope="session")
async def spend_pg() -> AsyncIterator[URL | str]:
    """This worker's PostgreSQL database for these tests, or why there is none."""
    async with worker_database("spend") as found:
        yield found


@pytest.fixture(params=BACKENDS)
async def db_url(request: pytest.FixtureRequest, tmp_path: Path, spend_pg: URL | str) -> str:
    return store_url(request.param, tmp_path, spend_pg)


@contextlib.asynccontextmanager
async def worker(url: str) -> AsyncIterator[Database]:
    """One worker's handle on the store: its own engine and connections."""
    db = Database(url)
    await db.connect()
    try:
        yield db
    finally:
        await db.dispose()


@pytest.fixture
async def db(db_url: str) -> AsyncIterator[Database]:
    async with worker(db_url) as database:
        yield database


def unique_installation() -> int:
    return random.randrange(10**9, 10**12)


def unique_repo() -> str:
    return f"octo/{uuid.uuid4().hex[:8]}"


async def new_deliberation(
    db: Database, *, repo: str, pr_number: int | None, installation_id: int | None
) -> DeliberationRecord:
    return await create_deliberation(
        db,
        key=f"job-{uuid.uuid4()}",
        repo=repo,
        pr_number=pr_number,
        head_sha="c" * 40,
        trigger="opened",
        protocol="board",
        topic="Review this pull request",
        installation_id=installation_id,
    )


def budget(db: Database, deliberation_id: str, **caps: float | None) -> StoreBudget:
    return StoreBudget(db, deliberation_id, SpendCaps(**caps), today=lambda: DAY)


def request(did: str, **kw: Any) -> DeliberationRequest:
    values: dict[str, Any] = {
        "deliberation_id": did,
        "topic": "Review this pull request",
        "protocol": "board",
        "context": "<untrusted-diff>\n+ retry(request)\n</untrusted-diff>",
        "signals": ReviewSignals(topic="Review this pull request", areas=["concurrency"]),
        "models": list(DEFAULT_MODELS),
        "board": BoardConfig(default_size=5, min_size=5, discussion_rounds=1),
        "assessment_timeout_s": 30.0,
    }
    values.update(kw)
    return DeliberationRequest(**values)


def engine(fake: FakeProviders, db: Database) -> Engine:
    from bot.tokens import TokenEstimator

    return Engine(fake, CATALOG, SqlLedger(db), estimator=TokenEstimator())


async def in_memory_run(fake: FakeProviders, **kw: Any) -> InMemoryBudget:
    """One whole deliberation with no cap, for its reservations and what it cost."""
    from bot.tokens import TokenEstimator

    measured = InMemoryBudget(cap_usd=None)
    run = Engine(fake, CATALOG, InMemoryLedger(), estimator=TokenEstimator())
    advisory = await run.deliberate(request("measure", **kw), budget=measured)
    assert advisory.resolution == Resolution.APPROVED
    fake.reset()
    return measured


# --- the budget's own rules -----------------------------------------------------------------


async def test_reserve_settle_release_move_every_total(db: Database) -> None:
    installation, repo = unique_installation(), unique_repo()
    record = await new_deliberation(db, repo=repo, pr_number=3, installation_id=installation)
    spend = budget(db, record.id, deliberation_usd=1.0, pr_usd=1.0, daily_usd=1.0)

    async def totals() -> tuple[float, float, float]:
        return (
            await deliberation_charged(db, record.id),
            await pr_cost(db, repo, 3),
            await daily_cost(db, installation, DAY),
        )

    first = await spend.reserve(0.4, "assess/seat-1/0")
    second = await spend.reserve(0.4, "assess/seat-2/0")
    assert isinstance(first, Reservation) and isinstance(second, Reservation)
    assert await totals() == pytest.approx((0.8, 0.8, 0.8))
    refused = await spend.reserve(0.4, "assess/seat-3/0")
    assert isinstance(refused, CapReached)
    assert (refused.cap, refused.limit_usd, refused.amount_usd) == (
        "the deliberation's cost cap",
        1.0,
        0.4,
    )
    assert refused.charged_usd == pytest.approx(0.8)
    await spend.settle(first, 0.05)
    await spend.release(second)
    await spend.settle(second, 0.3)  # already released: a second close changes nothing
    assert await totals() == pytest.approx((0.05, 0.05, 0.05))
    states = [(r.label, r.state, r.actual_usd) for r in await reservations(db, record.id)]
    assert sorted(states) == [
        ("assess/seat-1/0", ReservationState.SETTLED, 0.05),
        ("assess/seat-2/0", ReservationState.RELEASED, None),
    ]


async def test_a_refusal_holds_nothing_anywhere(db: Database) -> None:
    installation, repo = unique_installation(), unique_repo()
    record = await new_deliberation(db, repo=repo, pr_number=4, installation_id=installation)
    await add_cost(db, installation, DAY, 0.25)
    spend = budget(db, record.id, pr_usd=0.5, daily_usd=10.0)
    assert isinstance(await spend.reserve(0.3, "a"), Reservation)
    refused = await spend.reserve(0.3, "b")  # the daily cap has room, the PR's has not
    assert isinstance(refused, CapReached)
    assert refused.cap == "the pull request's cost cap" and refused.charged_usd == 0.3
    # The daily counter was raised inside the refused transaction, and rolled back with it.
    assert await daily_cost(db, installation, DAY) == pytest.approx(0.55)
    assert await pr_cost(db, repo, 4) == pytest.approx(0.3)
    assert len(await reservations(db, record.id)) == 1


async def test_without_a_pull_request_or_installation_only_the_deliberation_cap_applies(
    db: Database,
) -> None:
    record = await new_deliberation(db, repo="/home/me/repo", pr_number=None, installation_id=None)
    spend = budget(db, record.id, deliberation_usd=1.0, pr_usd=0.1, daily_usd=0.1)
    held = await spend.reserve(0.6, "assess/seat-1/0")
    assert isinstance(held, Reservation)
    assert isinstance(await spend.reserve(0.6, "assess/seat-2/0"), CapReached)
    await spend.settle(held, 0.2)
    assert await deliberation_charged(db, record.id) == pytest.approx(0.2)


# --- deliberations against the caps ---------------------------------------------------------


async def test_eight_concurrent_reviews_stay_within_the_daily_cap(db_url: str) -> None:
    fake = FakeProviders(CouncilScript(latency_s=0.05))
    measured = await in_memory_run(fake)
    most = max(r.amount_usd for r in measured.reservations)
    # Room for a dozen calls in flight, not for eight boards of five: each phase reserves
    # its own output budget, so a board costs far less than a dozen of its largest calls.
    cap = min(12.5 * most, 4 * measured.spent_usd)
    installation, repo = unique_installation(), unique_repo()
    async with contextlib.AsyncExitStack() as stack:
        workers = [await stack.enter_async_context(worker(db_url)) for _ in range(8)]
        made = [
            await new_deliberation(w, repo=repo, pr_number=n, installation_id=installation)
            for n, w in enumerate(workers, start=1)
        ]

        async def review(db: Database, record: DeliberationRecord) -> Advisory:
            spend = budget(db, record.id, daily_usd=cap)
            return await engine(fake, db).deliberate(request(record.id), budget=spend)

        advisories = await asyncio.gather(*map(review, workers, made))
        total = await daily_cost(workers[0], installation, DAY)
        held = [r for d in made for r in await reservations(workers[0], d.id)]
    assert total <= cap
    assert fake.cost_usd <= cap  # what the providers would bill
    # Every reservation was replaced by what its call cost: the record is the bill.
    assert total == pytest.approx(fake.cost_usd)
    assert all(r.state is not ReservationState.RESERVED for r in held)
    stopped = [a for a in advisories if a.resolution == Resolution.COST_LIMIT]
    assert stopped, "the cap never bound"
    assert all(a.reason and "The installation's daily cost cap" in a.reason for a in stopped)


async def test_the_pull_request_cap_holds_across_its_deliberations(db: Database) -> None:
    fake = FakeProviders(CouncilScript(latency_s=0.05))
    # A large change: most of a call's worst case is input, which it does pay for, so two
    # whole deliberations cost far more than five calls' reservations.
    large = {"context": "<untrusted-diff>\n" + "+ retry(request)\n" * 12_000 + "</untrusted-diff>"}
    measured = await in_memory_run(fake, **large)
    most = max(r.amount_usd for r in measured.reservations)
    assert measured.spent_usd > 6 * most
    # One whole deliberation fits (at most five calls are ever held at once); two do not.
    cap = measured.spent_usd + 5.5 * most
    installation, repo = unique_installation(), unique_repo()

    async def review(pr_number: int) -> Advisory:
        record = await new_deliberation(
            db, repo=repo, pr_number=pr_number, installation_id=installation
        )
        spend = budget(db, record.id, pr_usd=cap)
        return await engine(fake, db).deliberate(request(record.id, **large), budget=spend)

    first = await review(7)
    assert first.resolution == Resolution.APPROVED
    second = await review(7)  # a re-run of the same pull request
    assert second.resolution == Resolution.COST_LIMIT
    assert second.reason and second.reason.startswith("The pull request's cost cap of $")
    assert second.usage.calls < first.usage.calls
    assert await pr_cost(db, repo, 7) <= cap
    assert await pr_cost(db, repo, 7) == pytest.approx(first.usage.cost_usd + second.usage.cost_usd)
    # Another pull request of the same repository has its own total.
    assert (await review(8)).resolution == Resolution.APPROVED


async def test_a_call_whose_worker_died_stays_charged_at_its_reservation(db_url: str) -> None:
    fake = FakeProviders(CouncilScript(latency_s=0.2))  # once resumed, the calls overlap
    fake.on(tool=ASSESS, reply=ProviderFault.hang())  # the calls are under way...
    installation, repo = unique_installation(), unique_repo()
    async with worker(db_url) as first:
        record = await new_deliberation(first, repo=repo, pr_number=5, installation_id=installation)
        spend = budget(first, record.id, deliberation_usd=10.0)
        running = asyncio.create_task(
            engine(fake, first).deliberate(request(record.id), budget=spend)
        )
        for _ in range(200):
            if len(fake.calls) == 5:
                break
            await asyncio.sleep(0.02)
        assert len(fake.calls) == 5
        running.cancel()  # ... when the worker dies: nothing after this point runs
        with contextlib.suppress(asyncio.CancelledError):
            await running
    async with worker(db_url) as second:
        held = await reservations(second, record.id)
        assert [r.state for r in held] == [ReservationState.RESERVED] * 5
        dead = sum(r.reserved_usd for r in held)
        assert await deliberation_charged(second, record.id) == pytest.approx(dead)
        assert await pr_cost(second, repo, 5) == pytest.approx(dead)
        assert await daily_cost(second, installation, DAY) == pytest.approx(dead)
        # Resumed by another worker: the dead calls still count against the caps.
        fake.reset()
        each = max(r.reserved_usd for r in held)
        resumed = budget(second, record.id, deliberation_usd=dead + 2.5 * each)
        advisory = await engine(fake, second).deliberate(request(record.id), budget=resumed)
        assert [c.tool for c in fake.calls] == [ASSESS] * 2
        assert advisory.reason and "stopped the council after 2 of 5 assessments" in advisory.reason
        charged = await deliberation_charged(second, record.id)
        assert charged == pytest.approx(dead + fake.cost_usd)
        assert await daily_cost(second, installation, DAY) == pytest.approx(charged)
