"""Alembic environment.

`bot.store.db.Database.connect()` passes its own connection in `config.attributes`,
already inside a transaction that holds the migration lock, so the upgrade commits or
rolls back as one. Run by hand (`alembic -c bot/store/alembic.ini ...`), it connects to
`DATABASE_URL` (or `sqlalchemy.url` in the ini) itself.
"""

from __future__ import annotations

import asyncio
import os

from alembic import context
from sqlalchemy import Connection
from sqlalchemy.ext.asyncio import create_async_engine

from bot.store.models import Base
from bot.store.urls import async_url

config = context.config
target_metadata = Base.metadata


def run_with(connection: Connection) -> None:
    context.configure(
        connection=connection,
        target_metadata=target_metadata,
        # SQLite cannot ALTER most things in place; batch mode rebuilds the table.
        render_as_batch=connection.dialect.name == "sqlite",
        compare_type=True,
    )
    with context.begin_transaction():
        context.run_migrations()


def configured_url() -> str:
    url = os.environ.get("DATABASE_URL") or config.get_main_option("sqlalchemy.url")
    if not url:
        raise RuntimeError("set DATABASE_URL (or sqlalchemy.url) to run alembic by hand")
    return async_url(url)


def run_offline() -> None:
    context.configure(url=configured_url(), target_metadata=target_metadata, literal_binds=True)
    with context.begin_transaction():
        context.run_migrations()


async def run_standalone() -> None:
    engine = create_async_engine(configured_url())
    try:
        async with engine.connect() as connection:
            await connection.run_sync(run_with)
            await connection.commit()
    finally:
        await engine.dispose()


def main() -> None:
    given = config.attributes.get("connection")
    if context.is_offline_mode():
        run_offline()
    elif isinstance(given, Connection):
        run_with(given)
    else:
        asyncio.run(run_standalone())


main()
