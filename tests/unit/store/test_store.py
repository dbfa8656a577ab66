"""The store on SQLite files and on PostgreSQL: migrations, records, resume, costs.

The ledger's shared behaviour (ordering, step idempotency) is in test_ledger.py; here are
the things only a database has: schema migrations, several processes and handles on one
database, and reopening it.
"""

from __future__ import annotations

import asyncio
import random
import subprocess
import sys
import uuid
from collections.abc import AsyncIterator
from dataclasses import dataclass
from datetime import UTC, date, datetime
from pathlib import Path
from typing import Any

import pytest
from alembic import command
from alembic.autogenerate import compare_metadata
from alembic.runtime.migration import MigrationContext
from sqlalchemy import Connection, inspect, text
from sqlalchemy.engine import URL
from sqlalchemy.ext.asyncio import create_async_engine

from bot.council.ledger import EventKind, UnknownDeliberationError
from bot.store import Database, SqlLedger
from bot.store.answer_sizes import recent_answer_sizes, record_answer_size
from bot.store.db import HEAD_REVISION, alembic_config
from bot.store.deliberations import (
    DeliberationNotFoundError,
    DeliberationRecord,
    DeliberationStatus,
    create_deliberation,
    find_by_check_run,
    find_deliberation,
    get_deliberation,
    latest_for_pr,
    record_publication,
    running_for_pr,
    set_status,
)
from bot.store.installations import (
    add_cost,
    daily_cost,
    delete_installation,
    get_installation,
    upsert_installation,
)
from bot.store.models import Base
from bot.store.outcomes import (
    PersonaOutcome,
    get_outcome,
    persona_track_records,
    record_outcome,
    record_persona_outcomes,
)
from bot.store.pending import oldest_pending
from bot.store.urls import async_url
from tests.support.postgres import PostgresServer, find_postgres

BACKENDS = ["sqlite", "postgresql"]


@dataclass
class Postgres:
    server: PostgresServer
    # This worker's shared database; tests keep apart by using fresh keys and ids.
    url: URL


@pytest.fixture(scope="session")
async def store_pg() -> AsyncIterator[Postgres | str]:
    """PostgreSQL for this worker, or the reason it is missing (the PG cases then skip)."""
    server, reason = await find_postgres()
    if server is None:
        yield reason
        return
    await server.drop_stale()
    async with server.database("store") as url:
        yield Postgres(server, url)


def _postgres(store_pg: Postgres | str) -> Postgres:
    if isinstance(store_pg, str):
        pytest.skip(store_pg)
    return store_pg


@pytest.fixture(params=BACKENDS)
async def fresh_url(
    request: pytest.FixtureRequest, tmp_path: Path, store_pg: Postgres | str
) -> AsyncIterator[str]:
    """An empty database that has never been migrated."""
    if request.param == "sqlite":
        yield f"sqlite:///{tmp_path / 'fresh.db'}"
        return
    async with _postgres(store_pg).server.database("fresh") as url:
        yield url.render_as_string(hide_password=False)


@pytest.fixture(params=BACKENDS)
async def db_url(request: pytest.FixtureRequest, tmp_path: Path, store_pg: Postgres | str) -> str:
    if request.param == "sqlite":
        return f"sqlite:///{tmp_path / 'council.db'}"
    return _postgres(store_pg).url.render_as_string(hide_password=False)


@pytest.fixture
async def db(db_url: str) -> AsyncIterator[Database]:
    database = Database(db_url)
    await database.connect()
    try:
        yield database
    finally:
        await database.dispose()


async def new_deliberation(
    db: Database, *, repo: str | None = None, pr_number: int = 1, key: str | None = None
) -> DeliberationRecord:
    return await create_deliberation(
        db,
        key=key or f"job-{uuid.uuid4()}",
        repo=repo or f"octo/{uuid.uuid4().hex[:8]}",
        pr_number=pr_number,
        head_sha="b" * 40,
        trigger="opened",
        protocol="board",
        topic="Review this pull request",
        installation_id=42,
    )


def unique_installation() -> int:
    return random.randrange(10**9, 10**12)


# --- URLs and migrations ---------------------------------------------------------------


@pytest.mark.parametrize(
    ("given", "expected"),
    [
        ("sqlite:///council.db", "sqlite+aiosqlite:///council.db"),
        ("sqlite+aiosqlite:///council.db", "sqlite+aiosqlite:///council.db"),
        ("postgresql://u:p@db:5432/council", "postgresql+asyncpg://u:p@db:5432/council"),
        ("postgres://u@db/council", "postgresql+asyncpg://u@db/council"),
        ("postgresql+psycopg://u@db/council", "postgresql+asyncpg://u@db/council"),
    ],
)
def test_plain_urls_get_the_async_driver(given: str, expected: str) -> None:
    assert async_url(given) == expected


def test_unsupported_backend_is_refused_by_name() -> None:
    with pytest.raises(ValueError, match="mysql"):
        Database("mysql://u@db/council")


def test_repr_hides_the_password() -> None:
    assert "s3cret" not in repr(Database("postgresql://council:s3cret@db/council"))


def _schema_diff(connection: Connection) -> list[Any]:
    context = MigrationContext.configure(connection, opts={"compare_type": True})
    return list(compare_metadata(context, Base.metadata))


async def test_migrates_an_empty_database_to_head_and_again(fresh_url: str) -> None:
    db = Database(fresh_url)
    try:
        assert await db.schema_revision() is None
        await db.connect()
        await db.connect()
        assert await db.schema_revision() == Database.head_revision() == "0007_outcome_basis"
        # The revision creates exactly what the models declare.
        async with db.engine.connect() as connection:
            assert await connection.run_sync(_schema_diff) == []
    finally:
        await db.dispose()
    async with Database(fresh_url) as reopened:
        assert await reopened.schema_revision() == "0007_outcome_basis"


def _layout(connection: Connection) -> dict[str, Any]:
    """Every table of the database as reflection reads it: columns (type, nullable,
    default), primary key, indexes, unique constraints and foreign keys."""
    found = inspect(connection)
    return {
        table: {
            # By name: a column a migration added comes last there, in its place here.
            "columns": sorted(
                (c["name"], str(c["type"]), c["nullable"], c.get("default"))
                for c in found.get_columns(table)
            ),
            "primary": found.get_pk_constraint(table)["constrained_columns"],
            "indexes": sorted(
                (i["name"] or "", tuple(i["column_names"]), bool(i["unique"]))
                for i in found.get_indexes(table)
            ),
            "unique": sorted(tuple(u["column_names"]) for u in found.get_unique_constraints(table)),
            "foreign": sorted(
                (tuple(f["constrained_columns"]), f["referred_table"], tuple(f["referred_columns"]))
                for f in found.get_foreign_keys(table)
            ),
        }
        for table in sorted(found.get_table_names())
    }


async def test_a_new_sqlite_store_is_what_the_migrations_make(tmp_path: Path) -> None:
    """A new SQLite store is made from the models and stamped at head without alembic
    (bot/store/db.py `_to_head`); the migrations, run on another new file, make the very
    same tables, and the stamp is alembic's head."""
    assert Database.head_revision() == HEAD_REVISION
    async with Database(f"sqlite:///{tmp_path / 'made.db'}") as made:
        assert await made.schema_revision() == HEAD_REVISION
        async with made.engine.connect() as connection:
            made_layout = await connection.run_sync(_layout)
    migrated = create_async_engine(async_url(f"sqlite:///{tmp_path / 'migrated.db'}"))

    def upgrade(connection: Connection) -> None:
        config = alembic_config()
        config.attributes["connection"] = connection
        command.upgrade(config, "head")

    try:
        async with migrated.begin() as connection:
            await connection.run_sync(upgrade)
        async with migrated.connect() as connection:
            assert await connection.run_sync(_schema_diff) == []
            migrated_layout = await connection.run_sync(_layout)
    finally:
        await migrated.dispose()
    assert made_layout == migrated_layout
    assert "pr_findings" in made_layout and "alembic_version" in made_layout


def test_a_fresh_sqlite_store_and_one_at_head_open_without_alembic(tmp_path: Path) -> None:
    url = f"sqlite:///{tmp_path / 's.db'}"
    script = (
        "import asyncio, sys\n"
        "from bot.store import Database\n"
        "async def main():\n"
        f"    async with Database({url!r}) as db:\n"
        "        print(await db.schema_revision() is not None)\n"
        "asyncio.run(main())\n"
        "print('alembic' in sys.modules)\n"
    )
    for _ in ("new", "at head"):
        done = subprocess.run(
            [sys.executable, "-c", script], capture_output=True, text=True, check=True
        )
        assert done.stdout.split() == ["True", "False"], done.stdout + done.stderr


async def test_a_database_at_the_previous_revision_keeps_its_pending_deliveries(
    fresh_url: str,
) -> None:
    """0004 renames `body_sha256` to `body_digest`: a delivery kept (while Redis was down)
    by the previous version is still there, digest and all, after the upgrade."""
    engine = create_async_engine(async_url(fresh_url))

    def to_0003(connection: Connection) -> None:
        config = alembic_config()
        config.attributes["connection"] = connection
        command.upgrade(config, "0003_pending")

    async with engine.begin() as connection:
        await connection.run_sync(to_0003)
        await connection.execute(
            text(
                "INSERT INTO pending_deliveries (delivery_id, job_id, function, payload, "
                "body_sha256, received_at) VALUES ('d-1', 'j-1', 'deliberate', '{}', :digest, "
                ":at)"
            ),
            {"digest": "ab" * 32, "at": datetime(2026, 11, 30, tzinfo=UTC)},
        )
    await engine.dispose()

    async with Database(fresh_url) as db:
        assert await db.schema_revision() == "0007_outcome_basis"
        (kept,) = await oldest_pending(db, 10)
    assert (kept.delivery_id, kept.job_id, kept.body_digest) == ("d-1", "j-1", "ab" * 32)


async def test_a_database_at_0005_keeps_its_findings_and_learns_answer_sizes(
    fresh_url: str,
) -> None:
    """0006 adds `answer_sizes`: a database the previous version left (a finding recorded)
    upgrades on connect, keeps what it held, and records and reads answer sizes."""
    engine = create_async_engine(async_url(fresh_url))

    def to_0005(connection: Connection) -> None:
        config = alembic_config()
        config.attributes["connection"] = connection
        command.upgrade(config, "0005_pr_findings")

    async with engine.begin() as connection:
        await connection.run_sync(to_0005)
        await connection.execute(
            text(
                "INSERT INTO pr_findings (repo, pr_number, fingerprint, path, line, title, "
                "severity, status, first_deliberation_id, last_deliberation_id, updated_at) "
                "VALUES ('o/r', 3, 'f1', 'app.py', 4, 'Unbounded retry', 'major', 'open', "
                "'d-1', 'd-1', :at)"
            ),
            {"at": datetime(2026, 12, 1, tzinfo=UTC)},
        )
    await engine.dispose()

    async with Database(fresh_url) as db:
        assert await db.schema_revision() == "0007_outcome_basis"
        async with db.session(readonly=True) as session:
            kept = (await session.execute(text("SELECT title, status FROM pr_findings"))).all()
        assert [tuple(row) for row in kept] == [("Unbounded retry", "open")]
        for tokens in (400, 900, 100):
            await record_answer_size(db, "anthropic:claude-sonnet-5-5", tokens)
        assert await recent_answer_sizes(db, "anthropic:claude-sonnet-5-5") == [400, 900, 100]


MIGRATE_SCRIPT = """
import asyncio, sys
from bot.store import Database

async def main() -> None:
    db = Database(sys.argv[1])
    await db.connect()
    await db.dispose()

asyncio.run(main())
"""


async def test_two_processes_migrate_one_database_at_once(fresh_url: str, tmp_path: Path) -> None:
    async def migrate() -> tuple[int | None, bytes]:
        process = await asyncio.create_subprocess_exec(
            sys.executable,
            "-c",
            MIGRATE_SCRIPT,
            fresh_url,
            cwd=tmp_path,
            stdout=asyncio.subprocess.PIPE,
            stderr=asyncio.subprocess.STDOUT,
        )
        output, _ = await process.communicate()
        return process.returncode, output

    results = await asyncio.gather(migrate(), migrate())

    assert [code for code, _ in results] == [0, 0], [out.decode()[-2000:] for _, out in results]
    async with Database(fresh_url) as db:
        assert await db.schema_revision() == "0007_outcome_basis"
        assert (await new_deliberation(db)).status is DeliberationStatus.RUNNING


async def test_sqlite_runs_in_wal_mode(tmp_path: Path) -> None:
    database = Database(f"sqlite:///{tmp_path / 'shared.db'}")
    async with database as db, db.session(readonly=True) as session:
        mode = (await session.execute(text("PRAGMA journal_mode"))).scalar_one()
    assert mode == "wal"


# --- deliberations ---------------------------------------------------------------------


async def test_create_deliberation_is_get_or_create_by_key(db: Database) -> None:
    first = await new_deliberation(db, key="job-abc-" + uuid.uuid4().hex)
    again = await new_deliberation(db, key=first.key, repo="other/repo")

    assert again.id == first.id
    assert again.repo == first.repo
    assert first.status is DeliberationStatus.RUNNING
    assert first.cost_usd == 0.0
    assert first.created_at.tzinfo is not None
    assert await get_deliberation(db, first.id) == await find_deliberation(db, first.key)


async def test_racing_workers_create_one_deliberation(db: Database) -> None:
    other = Database(db.url)
    key = f"job-{uuid.uuid4()}"
    try:
        created = await asyncio.gather(
            *(new_deliberation(handle, key=key) for handle in [db, other] * 5)
        )
    finally:
        await other.dispose()

    assert len({record.id for record in created}) == 1


async def test_lookups_of_missing_things_return_none(db: Database) -> None:
    assert await get_deliberation(db, str(uuid.uuid4())) is None
    assert await find_deliberation(db, "no-such-job") is None
    assert await find_by_check_run(db, unique_installation()) is None
    assert await latest_for_pr(db, "nobody/nothing", 1) is None
    assert await running_for_pr(db, "nobody/nothing", 1) == []


async def test_publication_is_found_by_check_run(db: Database) -> None:
    deliberation = await new_deliberation(db)
    check_run_id = unique_installation()

    await record_publication(db, deliberation.id, comment_id=9_000_000_001)
    updated = await record_publication(db, deliberation.id, check_run_id=check_run_id)

    assert updated.comment_id == 9_000_000_001  # kept, not cleared
    assert updated.check_run_id == check_run_id
    found = await find_by_check_run(db, check_run_id)
    assert found is not None and found.id == deliberation.id


async def test_set_status_finishes_and_keeps_what_is_not_given(db: Database) -> None:
    deliberation = await new_deliberation(db)

    done = await set_status(
        db,
        deliberation.id,
        DeliberationStatus.COMPLETED,
        resolution="approve",
        conclusion="success",
        advisory_json='{"verdict": "APPROVE"}',
        cost_usd=0.42,
    )
    superseded = await set_status(db, deliberation.id, DeliberationStatus.SUPERSEDED)

    assert done.finished_at is not None and done.finished_at >= done.created_at
    assert (done.resolution, done.conclusion, done.cost_usd) == ("approve", "success", 0.42)
    assert superseded.status is DeliberationStatus.SUPERSEDED
    assert superseded.resolution == "approve"
    assert superseded.advisory_json == '{"verdict": "APPROVE"}'
    assert await get_deliberation(db, deliberation.id) == superseded
    with pytest.raises(DeliberationNotFoundError):
        await set_status(db, str(uuid.uuid4()), DeliberationStatus.FAILED)


async def test_latest_and_running_for_a_pr(db: Database) -> None:
    repo = f"octo/{uuid.uuid4().hex[:8]}"
    oldest = await new_deliberation(db, repo=repo, pr_number=5)
    middle = await new_deliberation(db, repo=repo, pr_number=5)
    newest = await new_deliberation(db, repo=repo, pr_number=5)
    await new_deliberation(db, repo=repo, pr_number=6)
    await set_status(db, middle.id, DeliberationStatus.CANCELLED)

    latest = await latest_for_pr(db, repo, 5)
    running = await running_for_pr(db, repo, 5)

    assert latest is not None and latest.id == newest.id
    assert [record.id for record in running] == [newest.id, oldest.id]


# --- the SQL ledger on a real database -------------------------------------------------


async def test_ledger_survives_reopening_the_database(db_url: str) -> None:
    async with Database(db_url) as first:
        deliberation = await new_deliberation(first)
        ledger = SqlLedger(first)
        for n in range(5):
            await ledger.append(
                deliberation.id, EventKind.SEAT_RETURNED, {"seat": n}, step=f"assess/seat-{n}/1"
            )

    # A new process (a new Database object) resumes from what the first one wrote.
    async with Database(db_url) as second:
        ledger = SqlLedger(second)
        events = await ledger.events(deliberation.id)
        replayed = await ledger.append(
            deliberation.id, EventKind.SEAT_RETURNED, {"seat": "again"}, step="assess/seat-3/1"
        )
        resumed = await ledger.append(
            deliberation.id, EventKind.SEAT_RETURNED, {"seat": 5}, step="assess/seat-5/1"
        )

    assert [(e.seq, e.payload) for e in events] == [(n, {"seat": n}) for n in range(5)]
    assert replayed == events[3]
    assert resumed.seq == 5


async def test_two_workers_race_on_one_step(db: Database) -> None:
    other = Database(db.url)
    deliberation = await new_deliberation(db)
    try:
        appended = await asyncio.gather(
            *(
                SqlLedger(handle).append(
                    deliberation.id, EventKind.PUBLISHED, {"comment_id": 1}, step="publish"
                )
                for handle in [db, other] * 5
            )
        )
    finally:
        await other.dispose()

    stored = await SqlLedger(db).events(deliberation.id)
    assert len(stored) == 1
    assert all(event == stored[0] for event in appended)


async def test_sql_ledger_refuses_an_unknown_deliberation(db: Database) -> None:
    with pytest.raises(UnknownDeliberationError):
        await SqlLedger(db).append(str(uuid.uuid4()), EventKind.CONVENED, {})


# --- outcomes and track records --------------------------------------------------------


async def test_outcome_is_recorded_and_replaced(db: Database) -> None:
    deliberation = await new_deliberation(db)

    await record_outcome(db, deliberation.id, False, [], ["f1", "f2"])
    replaced = await record_outcome(db, deliberation.id, True, ["f1"], ["f2"])

    assert await get_outcome(db, deliberation.id) == replaced
    assert replaced.merged is True
    assert (replaced.addressed_findings, replaced.unaddressed_findings) == (["f1"], ["f2"])
    assert replaced.closed_at.tzinfo is not None


async def test_persona_track_records(db: Database) -> None:
    suffix = uuid.uuid4().hex[:8]
    security, perf, other = f"security-{suffix}", f"performance-{suffix}", f"docs-{suffix}"
    history = {
        # persona: [(task type, success), ...]
        "steady": [(security, True)] * 4 + [(security, False), (perf, False)],
        "lucky": [(security, True)],
        "slow": [(perf, False), (perf, False)],
        "unasked": [(other, True)],
    }
    for persona, outcomes in history.items():
        for task_type, success in outcomes:
            deliberation = await new_deliberation(db)
            outcome = PersonaOutcome(
                persona_id=persona, task_type=task_type, success=success, basis="vote"
            )
            await record_persona_outcomes(db, deliberation.id, [outcome])
            # A redelivered close replaces, not adds.
            await record_persona_outcomes(db, deliberation.id, [outcome])

    tracks = await persona_track_records(db, [security, perf])

    table = {
        (t.persona_id, t.task_type): (t.outcomes, t.success_rate, t.top_for_task_type)
        for t in tracks
    }
    assert table == {
        # 4/5 over five outcomes beats 1/1 over one: few outcomes are weighted down.
        ("steady", security): (5, 0.8, True),
        ("lucky", security): (1, 1.0, False),
        # Nobody succeeded at performance, so nobody tops it.
        ("steady", perf): (1, 0.0, False),
        ("slow", perf): (2, 0.0, False),
    }
    assert await persona_track_records(db, []) == []


# --- installations and costs -----------------------------------------------------------


async def test_daily_cost_accumulates_per_installation_and_day(db: Database) -> None:
    installation, day = unique_installation(), date(2026, 3, 1)

    assert await add_cost(db, installation, day, 1.25) == 1.25
    assert await add_cost(db, installation, day, 2.5) == 3.75
    await asyncio.gather(*(add_cost(db, installation, day, 0.5) for _ in range(10)))

    assert await daily_cost(db, installation, day) == 8.75
    assert await daily_cost(db, installation, date(2026, 3, 2)) == 0.0
    assert await daily_cost(db, installation + 1, day) == 0.0


async def test_installations_are_upserted_and_deleted(db: Database) -> None:
    installation = unique_installation()

    await upsert_installation(db, installation, "octo", ["octo/a"])
    updated = await upsert_installation(db, installation, "octo-org", ["octo/b", "octo/a"])

    assert await get_installation(db, installation) == updated
    assert (updated.account, updated.repositories) == ("octo-org", ["octo/a", "octo/b"])
    assert await delete_installation(db, installation) is True
    assert await get_installation(db, installation) is None
    assert await delete_installation(db, installation) is False
