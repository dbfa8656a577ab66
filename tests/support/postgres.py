"""Throwaway PostgreSQL databases for test suites (ours and the service tests').

The machine's PostgreSQL is reached as the `postgres` superuser over TCP or the Unix
socket (trust or peer auth), or at `COUNCIL_TEST_POSTGRES_URL` if set. If neither answers
and we are root, a superuser role for the current OS user is created through
`su postgres -c psql`, as a fresh CI machine may need. Each database is named after the
pytest-xdist worker and the process id, so parallel workers and concurrent test runs never
share one; databases left by killed runs are dropped the next time.
"""

from __future__ import annotations

import getpass
import os
import re
import shutil
import subprocess
from collections.abc import AsyncIterator
from contextlib import asynccontextmanager
from dataclasses import dataclass
from pathlib import Path

import pytest
from sqlalchemy import text
from sqlalchemy.engine import URL, make_url
from sqlalchemy.ext.asyncio import create_async_engine

from bot.store.urls import async_url_object

__all__ = [
    "PostgresServer",
    "find_postgres",
    "store_url",
    "worker_database",
    "worker_database_name",
]

ADMIN_URL_ENV = "COUNCIL_TEST_POSTGRES_URL"
SOCKET_DIR = "/var/run/postgresql"
DEFAULT_ADMIN_URLS = (
    "postgresql://postgres@127.0.0.1:5432/postgres",
    f"postgresql://postgres@/postgres?host={SOCKET_DIR}",
)
NAME_PREFIX = "council_test_"
CONNECT_TIMEOUT_S = 3


def worker_database_name(hint: str) -> str:
    """`council_test_<worker>_<pid>_<hint>`, a valid PostgreSQL identifier (63 bytes max)."""
    worker = os.environ.get("PYTEST_XDIST_WORKER", "main")
    raw = f"{NAME_PREFIX}{worker}_{os.getpid()}_{hint}".lower()
    return re.sub(r"[^a-z0-9_]", "_", raw)[:63]


async def _answers(url: URL) -> bool:
    engine = create_async_engine(url, connect_args={"timeout": CONNECT_TIMEOUT_S})
    try:
        async with engine.connect() as connection:
            await connection.execute(text("SELECT 1"))
        return True
    except Exception:
        # Any failure (refused, auth, timeout) just means: try the next way in.
        return False
    finally:
        await engine.dispose()


def _create_role_for_current_user() -> bool:
    """As root, give the current OS user a superuser role via the postgres OS account."""
    if os.geteuid() != 0 or not shutil.which("su") or not shutil.which("psql"):
        return False
    user = getpass.getuser()
    sql = (
        f'DO $$ BEGIN CREATE ROLE "{user}" SUPERUSER LOGIN; '
        "EXCEPTION WHEN duplicate_object THEN NULL; END $$;"
    )
    result = subprocess.run(
        ["su", "postgres", "-c", f"psql -q -v ON_ERROR_STOP=1 -c '{sql}'"],
        capture_output=True,
        timeout=30,
        check=False,
    )
    return result.returncode == 0


@dataclass(frozen=True)
class PostgresServer:
    """A reachable server and an admin URL for it (the maintenance database)."""

    admin_url: URL

    def url_for(self, database: str) -> URL:
        return self.admin_url.set(database=database)

    async def _admin(self, *statements: str) -> None:
        # CREATE/DROP DATABASE cannot run inside a transaction.
        engine = create_async_engine(self.admin_url, isolation_level="AUTOCOMMIT")
        try:
            async with engine.connect() as connection:
                for statement in statements:
                    await connection.execute(text(statement))
        finally:
            await engine.dispose()

    async def drop_stale(self) -> None:
        """Drop test databases whose creating process is gone (a killed earlier run)."""
        engine = create_async_engine(self.admin_url)
        try:
            async with engine.connect() as connection:
                names = (
                    await connection.execute(
                        text("SELECT datname FROM pg_database WHERE datname LIKE :prefix"),
                        {"prefix": f"{NAME_PREFIX}%"},
                    )
                ).scalars()
                stale = [name for name in names if not _creator_alive(name)]
        finally:
            await engine.dispose()
        if stale:
            await self._admin(*(f'DROP DATABASE IF EXISTS "{name}" WITH (FORCE)' for name in stale))

    @asynccontextmanager
    async def database(self, hint: str) -> AsyncIterator[URL]:
        """A new empty database for this worker and process, dropped afterwards."""
        name = worker_database_name(hint)
        await self._admin(
            f'DROP DATABASE IF EXISTS "{name}" WITH (FORCE)', f'CREATE DATABASE "{name}"'
        )
        try:
            yield self.url_for(name)
        finally:
            await self._admin(f'DROP DATABASE IF EXISTS "{name}" WITH (FORCE)')


def _creator_alive(name: str) -> bool:
    match = re.match(rf"{NAME_PREFIX}[a-z0-9]+_(\d+)_", name)
    if match is None:
        return True  # Not ours to judge.
    try:
        os.kill(int(match.group(1)), 0)
    except ProcessLookupError:
        return False
    except PermissionError:
        return True
    return True


async def find_postgres() -> tuple[PostgresServer | None, str]:
    """A reachable server, or None and the reason (for a pytest skip message)."""
    given = os.environ.get(ADMIN_URL_ENV)
    candidates = [given] if given else list(DEFAULT_ADMIN_URLS)
    for candidate in candidates:
        url = async_url_object(make_url(candidate))
        if await _answers(url):
            return PostgresServer(url), ""
    if not given and _create_role_for_current_user():
        url = async_url_object(f"postgresql://{getpass.getuser()}@/postgres?host={SOCKET_DIR}")
        if await _answers(url):
            return PostgresServer(url), ""
    where = f"${ADMIN_URL_ENV}" if given else "127.0.0.1:5432 or " + SOCKET_DIR
    return None, f"PostgreSQL did not answer at {where}"


@asynccontextmanager
async def worker_database(hint: str, *, drop_stale: bool = False) -> AsyncIterator[URL | str]:
    """This worker's PostgreSQL database for a test module (`hint` names it), or the reason
    there is none; with `drop_stale`, databases left by killed runs are dropped first."""
    server, reason = await find_postgres()
    if server is None:
        yield reason
        return
    if drop_stale:
        await server.drop_stale()
    async with server.database(hint) as url:
        yield url


def store_url(backend: str, tmp_path: Path, postgres: URL | str) -> str:
    """The store's URL for one backend: a SQLite file in `tmp_path`, or the PostgreSQL
    database of `worker_database` (the test skips with the reason when there is none)."""
    if backend == "sqlite":
        return f"sqlite:///{tmp_path / 'council.db'}"
    if isinstance(postgres, str):
        pytest.skip(postgres)
    return postgres.render_as_string(hide_password=False)
