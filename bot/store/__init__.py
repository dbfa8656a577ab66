"""Storage: SQLAlchemy models and queries, the SQL ledger, alembic migrations.

SQLite by default, PostgreSQL by URL (`DATABASE_URL`). Open a `Database`, `await
db.connect()` (migrates to head), then use `SqlLedger(db)` and the functions in
`bot.store.records`.
"""

from bot.store.db import Database
from bot.store.ledger import SqlLedger

__all__ = ["Database", "SqlLedger"]
