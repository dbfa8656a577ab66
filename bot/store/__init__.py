"""Storage: SQLAlchemy models and queries, the SQL ledger, alembic migrations.

SQLite by default, PostgreSQL by URL (`DATABASE_URL`). Open a `Database`, `await
db.connect()` (migrates to head), then use `SqlLedger(db)` and the functions in
`bot.store.records`.

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
