"""The database handle: engine, sessions, and migrations to head on connect.

SQLite (the default) and PostgreSQL (by URL). A worker and the web process may share one
SQLite file and several processes may start at once, so:
- migrations run inside one transaction that holds a lock (a PostgreSQL advisory lock;
  on SQLite the write lock that `BEGIN IMMEDIATE` takes), and a second runner finds the
  schema at head and does nothing;
- SQLite runs in WAL mode with a busy timeout, and write transactions begin IMMEDIATE so
  two writers queue on the lock instead of failing when one upgrades a read to a write;
- a write SQLite still refuses with "database is locked" (the busy timeout ran out under
  load, or SQLite answered busy at once, without its busy handler) is tried again, whole,
  for `lock_retry_s` more (`retries_when_locked` on the store's write functions).
"""

from __future__ import annotations

import asyncio
import functools
import random
import time
from collections.abc import AsyncIterator, Awaitable, Callable
from contextlib import asynccontextmanager
from pathlib import Path
from types import TracebackType
from typing import TYPE_CHECKING, Any, Concatenate, ParamSpec, Self, TypeVar

from sqlalchemy import Connection, Engine, event, inspect, text
from sqlalchemy.engine import URL
from sqlalchemy.exc import OperationalError
from sqlalchemy.ext.asyncio import AsyncSession, async_sessionmaker, create_async_engine

from bot.store.urls import async_url_object

if TYPE_CHECKING:
    from alembic.config import Config

__all__ = ["Database", "alembic_config", "is_locked", "retries_when_locked"]

P = ParamSpec("P")
T = TypeVar("T")

ALEMBIC_INI = Path(__file__).with_name("alembic.ini")
# The newest migration this code ships (tests/unit/store/test_store.py checks it is alembic's
# head). A SQLite store at it, or a new one, is brought to head without loading alembic
# (a quarter of a second of every fresh `council review`): see `_to_head`.
HEAD_REVISION = "0007_outcome_basis"
_VERSION_TABLE = "alembic_version"
# Any fixed 64-bit number, the same in every process of every version ("councilm").
MIGRATION_LOCK_KEY = 0x636F756E63696C6D
# Execution option that marks a read-only session: on SQLite it begins DEFERRED.
READONLY_OPTION = "council_readonly"
# How long a write SQLite refuses as locked is tried again, and the pauses between tries.
LOCK_RETRY_S = 30.0
_LOCK_PAUSE_S = (0.05, 1.0)


def alembic_config() -> Config:
    """The packaged alembic configuration (works from an installed wheel, not only a checkout)."""
    from alembic.config import Config

    return Config(str(ALEMBIC_INI))


def _upgrade_to_head(connection: Connection) -> None:
    from alembic import command

    config = alembic_config()
    config.attributes["connection"] = connection
    command.upgrade(config, "head")


def _current_revision(connection: Connection) -> str | None:
    """The revision alembic stamped (one row of its version table), None before any."""
    if _VERSION_TABLE not in inspect(connection).get_table_names():
        return None
    return connection.execute(text(f"SELECT version_num FROM {_VERSION_TABLE}")).scalar()


def _to_head(connection: Connection) -> None:
    """Bring the schema to head. A SQLite store already at `HEAD_REVISION` is left as it
    is, and an empty one gets the models' tables and the head's stamp, as `alembic upgrade
    head` would leave it (tests/unit/store/test_store.py compares the two); any other
    (older, or PostgreSQL) is migrated by alembic."""
    if connection.dialect.name == "sqlite":
        tables = set(inspect(connection).get_table_names())
        if _VERSION_TABLE in tables:
            stamped = connection.execute(text(f"SELECT version_num FROM {_VERSION_TABLE}"))
            if [row[0] for row in stamped] == [HEAD_REVISION]:
                return
        elif not tables:
            from bot.store.models import Base

            Base.metadata.create_all(connection)
            connection.execute(
                text(
                    f"CREATE TABLE {_VERSION_TABLE} (version_num VARCHAR(32) NOT NULL, "
                    f"CONSTRAINT {_VERSION_TABLE}_pkc PRIMARY KEY (version_num))"
                )
            )
            connection.execute(
                text(f"INSERT INTO {_VERSION_TABLE} (version_num) VALUES (:head)"),
                {"head": HEAD_REVISION},
            )
            return
    _upgrade_to_head(connection)


def _on_sqlite_connect(busy_timeout_ms: int) -> Any:
    def configure(dbapi_connection: Any, _record: Any) -> None:
        # SQLAlchemy, not the driver, decides when a transaction begins (see _on_sqlite_begin).
        dbapi_connection.isolation_level = None
        cursor = dbapi_connection.cursor()
        try:
            cursor.execute(f"PRAGMA busy_timeout = {busy_timeout_ms}")
            _wal(cursor, busy_timeout_ms / 1000)
            cursor.execute("PRAGMA synchronous = NORMAL")
            cursor.execute("PRAGMA foreign_keys = ON")
        finally:
            cursor.close()

    return configure


def _wal(cursor: Any, timeout_s: float) -> None:
    """Switch to WAL. Two processes opening a new database at once can both try; SQLite
    answers "database is locked" at once to the second, without the busy handler, so it
    tries again until the busy timeout."""
    deadline = time.monotonic() + timeout_s
    while True:
        try:
            cursor.execute("PRAGMA journal_mode = WAL")
            return
        except Exception as error:
            if not is_locked(error) or time.monotonic() > deadline:
                raise
            time.sleep(0.05)


def _on_sqlite_begin(connection: Connection) -> None:
    readonly = connection.get_execution_options().get(READONLY_OPTION, False)
    connection.exec_driver_sql("BEGIN" if readonly else "BEGIN IMMEDIATE")


def _install_sqlite_hooks(engine: Engine, busy_timeout_ms: int) -> None:
    event.listen(engine, "connect", _on_sqlite_connect(busy_timeout_ms))
    event.listen(engine, "begin", _on_sqlite_begin)


class Database:
    """One engine per process. `connect()` before use; `dispose()` at shutdown."""

    def __init__(
        self,
        url: str | URL,
        *,
        busy_timeout_s: float = 30.0,
        lock_retry_s: float = LOCK_RETRY_S,
        echo: bool = False,
    ) -> None:
        self.url: URL = async_url_object(url)
        self.lock_retry_s = lock_retry_s
        self.backend: str = self.url.get_backend_name()
        options: dict[str, Any] = {"echo": echo}
        if self.backend == "postgresql":
            # Survive a database restart between jobs.
            options["pool_pre_ping"] = True
        self.engine = create_async_engine(self.url, **options)
        if self.backend == "sqlite":
            _install_sqlite_hooks(self.engine.sync_engine, int(busy_timeout_s * 1000))
        self._writer = async_sessionmaker(self.engine, expire_on_commit=False)
        self._reader = async_sessionmaker(
            self.engine.execution_options(**{READONLY_OPTION: True}), expire_on_commit=False
        )

    def __repr__(self) -> str:
        # The URL's password never leaves this object.
        return f"Database({self.url.render_as_string(hide_password=True)!r})"

    async def connect(self) -> None:
        """Bring the schema to head. Safe to run again, and from several processes at once."""
        async with self.engine.connect() as connection:
            await connection.begin()
            if self.backend == "postgresql":
                # Released at commit; a second runner waits here, then finds head.
                await connection.execute(
                    text("SELECT pg_advisory_xact_lock(:key)"), {"key": MIGRATION_LOCK_KEY}
                )
            await connection.run_sync(_to_head)
            await connection.commit()

    async def schema_revision(self) -> str | None:
        """The revision the database is at (None before the first migration)."""
        async with self.engine.connect() as connection:
            return await connection.run_sync(_current_revision)

    @staticmethod
    def head_revision() -> str | None:
        """The newest revision this code ships."""
        from alembic.script import ScriptDirectory

        return ScriptDirectory.from_config(alembic_config()).get_current_head()

    @asynccontextmanager
    async def session(self, *, readonly: bool = False) -> AsyncIterator[AsyncSession]:
        """One transaction: committed when the block ends, rolled back if it raises."""
        maker = self._reader if readonly else self._writer
        async with maker() as session, session.begin():
            yield session

    async def retrying(self, write: Callable[[], Awaitable[T]]) -> T:
        """`write()` (one whole transaction), tried again while SQLite says the database is
        locked, for `lock_retry_s` from the first refusal (which may itself have waited out
        the busy timeout); any other error, or the last refusal, is raised. A refused
        transaction was rolled back, so trying it again from the start is safe."""
        deadline: float | None = None
        pause, longest = _LOCK_PAUSE_S
        while True:
            try:
                return await write()
            except OperationalError as error:
                if self.backend != "sqlite" or not is_locked(error):
                    raise
                now = time.monotonic()
                deadline = now + self.lock_retry_s if deadline is None else deadline
                if now + pause > deadline:
                    raise
            # Jittered: writers refused together do not all come back together.
            await asyncio.sleep(pause * random.uniform(0.5, 1.0))
            pause = min(pause * 2, longest)

    async def answers(self) -> bool:
        """Whether the database takes a query now (readiness checks)."""
        try:
            async with self.engine.connect() as connection:
                await connection.exec_driver_sql("SELECT 1")
        except Exception:  # any driver's way of saying no
            return False
        return True

    async def dispose(self) -> None:
        await self.engine.dispose()

    async def __aenter__(self) -> Self:
        try:
            await self.connect()
        except BaseException:
            await self.dispose()
            raise
        return self

    async def __aexit__(
        self,
        exc_type: type[BaseException] | None,
        exc: BaseException | None,
        traceback: TracebackType | None,
    ) -> None:
        await self.dispose()


def is_locked(error: BaseException) -> bool:
    """SQLite's "database is locked" (SQLITE_BUSY), as the driver or SQLAlchemy raise it."""
    return "database is locked" in str(error)


def retries_when_locked(
    write: Callable[Concatenate[Database, P], Awaitable[T]],
) -> Callable[Concatenate[Database, P], Awaitable[T]]:
    """A store function that writes in one transaction, tried again while SQLite says the
    database is locked (`Database.retrying`); its first argument is the `Database`."""

    @functools.wraps(write)
    async def retried(db: Database, /, *args: P.args, **kwargs: P.kwargs) -> T:
        return await db.retrying(lambda: write(db, *args, **kwargs))

    return retried
