"""Answer sizes in the store, on SQLite files and on PostgreSQL: the 95th percentile of a
model's last 50 answers, shared by every worker (each its own `Database`), cached in the
process for a short time; and a deliberation through the real adapters, the store's budget
and its answer sizes, whose last call is sent only the `max_tokens` its cap has room for.
"""

from __future__ import annotations

import uuid
from collections.abc import AsyncIterator
from pathlib import Path

import pytest
from sqlalchemy import func, select
from sqlalchemy.engine import URL

from bot.council import prompts
from bot.council.advisory import Advisory
from bot.council.board import BoardConfig
from bot.council.budget import Budget, CapReached, InMemoryBudget, Reservation
from bot.council.engine import Engine
from bot.council.ledger import InMemoryLedger, Ledger
from bot.council.personas import load_catalog
from bot.council.reserving import AnswerSizes, InMemoryAnswerSizes
from bot.providers import ProviderRegistry
from bot.store import Database, SqlLedger
from bot.store.answer_sizes import (
    StoreAnswerSizes,
    answer_sizes,
    recent_answer_sizes,
    record_answer_size,
)
from bot.store.deliberations import create_deliberation
from bot.store.models import AnswerSizeRow
from bot.store.spend import SpendCaps, StoreBudget, pr_cost
from bot.tokens import TokenEstimator
from tests.support.council_answers import CouncilScript
from tests.support.model_server import FakeModelServer, FakeRequest, Reply
from tests.support.postgres import store_url, worker_database
from tests.unit.council.test_engine import ANTHROPIC, OPENAI, request
from tests.unit.providers.test_providers import make_settings

BACKENDS = ["sqlite", "postgresql"]
CATALOG = load_catalog()


@pytest.fixture(scope="session")
async def sizes_pg() -> AsyncIterator[URL | str]:
    """This worker's PostgreSQL database for these tests, or why there is none."""
    async with worker_database("sizes") as found:
        yield found


@pytest.fixture(params=BACKENDS)
async def db_url(request: pytest.FixtureRequest, tmp_path: Path, sizes_pg: URL | str) -> str:
    return store_url(request.param, tmp_path, sizes_pg)


@pytest.fixture
async def db(db_url: str) -> AsyncIterator[Database]:
    async with Database(db_url) as database:
        yield database


def unique_model() -> str:
    """Tests share the PostgreSQL database: each its own model names."""
    return f"fake:m-{uuid.uuid4().hex[:8]}"


async def rows_of(db: Database, model: str) -> int:
    query = select(func.count()).select_from(AnswerSizeRow).where(AnswerSizeRow.model == model)
    async with db.session(readonly=True) as session:
        return int(await session.scalar(query) or 0)


async def test_the_p95_is_over_the_model_s_last_50_answers(db: Database) -> None:
    model, other = unique_model(), unique_model()
    for _ in range(30):
        await record_answer_size(db, model, 8000)  # long answers, long ago
    for n in range(1, 51):
        await record_answer_size(db, model, n * 10)
    await record_answer_size(db, other, 123)

    assert await recent_answer_sizes(db, model) == [n * 10 for n in range(1, 51)]
    assert await StoreAnswerSizes(db).p95(model) == 480
    assert await StoreAnswerSizes(db).p95(other) == 123
    assert await StoreAnswerSizes(db).p95(unique_model()) is None  # never seen
    # Each insert pruned what is older than the last 50; the other model kept its own.
    assert await rows_of(db, model) == 50 and await rows_of(db, other) == 1


async def test_workers_share_the_sizes_and_each_caches_them_for_a_while(db_url: str) -> None:
    model = unique_model()
    now = [0.0]
    async with Database(db_url) as one, Database(db_url) as two:
        first = StoreAnswerSizes(one, ttl_s=60.0, clock=lambda: now[0])
        second = StoreAnswerSizes(two, ttl_s=60.0, clock=lambda: now[0])
        assert await first.p95(model) is None
        await first.record(model, 900)  # its own answer: in its cache at once
        assert await first.p95(model) == 900 and first.reads == 1
        assert await second.p95(model) == 900 and second.reads == 1
        await second.record(model, 100)
        await second.record(model, 100)
        # The first worker's cache is fresh: no read, its own view.
        now[0] = 59.0
        assert await first.p95(model) == 900 and first.reads == 1
        # Past the TTL it reads again and sees the other worker's answers.
        now[0] = 60.0
        assert await first.sizes(model) == [900, 100, 100] and first.reads == 2
        # One instance per handle on the store, so the cache lasts as long as the process's.
        assert answer_sizes(one) is answer_sizes(one) and answer_sizes(one) is not first


# --- a deliberation through the store, on the real adapters ----------------------------------

TWO_SEATS = BoardConfig(default_size=2, min_size=2, discussion_rounds=1)
SYNTHESIS = "submit_synthesis"
ROOM_TOKENS = 4000


def answers_in_full(req: FakeRequest) -> Reply:
    """The synthesis runs to the output limit it was sent (cut off there)."""
    return Reply(stop_reason="max_tokens", output_tokens=req.max_tokens)


class Probe(InMemoryBudget):
    """No cap; notes what was charged when the synthesis (which runs alone) reserved."""

    charged_before_synthesis: float | None = None

    async def reserve(
        self, amount_usd: float, label: str, *, need_usd: float | None = None
    ) -> Reservation | CapReached:
        if label.startswith("synthesize/") and self.charged_before_synthesis is None:
            self.charged_before_synthesis = self.charged_usd
        return await super().reserve(amount_usd, label, need_usd=need_usd)


def script(models: FakeModelServer) -> None:
    models.reset()  # no prompt cached: both runs pay the same for the same calls
    models.default(CouncilScript().reply)
    models.on(lambda r: r.output_name == SYNTHESIS, reply=answers_in_full)


async def deliberate(
    registry: ProviderRegistry, ledger: Ledger, did: str, budget: Budget, sizes: AnswerSizes
) -> Advisory:
    engine = Engine(registry, CATALOG, ledger, estimator=TokenEstimator(), answer_sizes=sizes)
    return await engine.deliberate(request(did=did, board=TWO_SEATS), budget=budget)


async def test_the_last_call_is_sent_only_what_the_pull_request_cap_has_room_for(
    db: Database, models: FakeModelServer
) -> None:
    """Both models seen (20 answers of 300 tokens each). Measured without a cap first; then
    the pull request's cap leaves the synthesis room for its input, its p95 and 4,000 more
    tokens: the fake server is asked for that many, not 8,192, and answering them all the
    pull request's spend stays within the cap."""
    registry = ProviderRegistry(make_settings(models, max_retries=0))
    try:
        script(models)
        probe = Probe(None)
        seen = InMemoryAnswerSizes()
        seen.sizes = {ANTHROPIC: [300] * 20, OPENAI: [300] * 20}
        await deliberate(registry, InMemoryLedger(), "probe", probe, seen)
        held = next(r for r in probe.reservations if r.label.startswith("synthesize/"))
        asked = next(c for c in models.calls if c.request.output_name == SYNTHESIS)
        # No cap: the synthesis's own output budget (under the request's 8,192).
        assert asked.request.max_tokens == prompts.SYNTH_TOOL.output_tokens(8192)
        assert probe.charged_before_synthesis is not None
        chair = registry.capabilities_of(f"{asked.api}:{asked.model}")
        room = ROOM_TOKENS * chair.output_price / 1e6
        cap = probe.charged_before_synthesis + held.amount_usd + room

        script(models)
        repo = f"octo/{uuid.uuid4().hex[:8]}"
        record = await create_deliberation(
            db,
            key=f"job-{uuid.uuid4()}",
            repo=repo,
            pr_number=7,
            head_sha="e" * 40,
            trigger="opened",
            protocol="board",
            topic="Review this pull request",
        )
        sizes = StoreAnswerSizes(db, ttl_s=0.0)  # every call reads the store
        for model in (ANTHROPIC, OPENAI):
            for _ in range(20 - len(await recent_answer_sizes(db, model))):
                await record_answer_size(db, model, 300)
        assert await recent_answer_sizes(db, ANTHROPIC) == [300] * 20
        budget = StoreBudget(db, record.id, SpendCaps(pr_usd=cap))
        await deliberate(registry, SqlLedger(db), record.id, budget, sizes)
    finally:
        await registry.aclose()

    sent = next(c for c in models.calls if c.request.output_name == SYNTHESIS)
    assert sent.request.max_tokens is not None
    assert 300 + ROOM_TOKENS - 2 <= sent.request.max_tokens <= 300 + ROOM_TOKENS
    assert sent.usage is not None
    billed = sent.usage.get("output_tokens", sent.usage.get("completion_tokens"))
    assert billed == sent.request.max_tokens  # it answered all it was allowed
    assert await pr_cost(db, repo, 7) <= cap
