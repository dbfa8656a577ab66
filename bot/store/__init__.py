"""Storage: SQLAlchemy models and queries, the SQL ledger, alembic migrations.

SQLite by default, PostgreSQL by URL (`DATABASE_URL`). Open a `Database`, `await
db.connect()` (migrates to head), then use `SqlLedger(db)` and the typed queries: the
deliberations (`bot.store.deliberations`), how reviewed pull requests ended and the
personas' track records (`bot.store.outcomes`), the installations and their daily costs
(`bot.store.installations`).

Every typed query takes the `Database` first and returns pydantic models (never rows or
dicts), so callers outside `bot.store` never see SQLAlchemy. Each write is one transaction,
tried again while SQLite says the database is locked (`bot.store.db.retries_when_locked`).

Importing the package loads neither SQLAlchemy nor alembic (a command that uses no
database should not pay for them): `Database` and `SqlLedger` are imported on first use.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    from bot.store.db import Database
    from bot.store.ledger import SqlLedger

__all__ = ["Database", "SqlLedger"]


def __getattr__(name: str) -> Any:
    if name == "Database":
        from bot.store.db import Database

        return Database
    if name == "SqlLedger":
        from bot.store.ledger import SqlLedger

        return SqlLedger
    raise AttributeError(f"module {__name__!r} has no attribute {name!r}")
