"""The store's history for the command line (`council history`, `show`, `stats`).

The command line reaches the store through `bot.review` (docs/architecture.md): this module
opens the local store the way `council review` does (`Settings.database_url`, the
`DATABASE_URL` setting; by default SQLite under the XDG state directory) and hands on the
queries of `bot.store.history`.
"""

from __future__ import annotations

from collections.abc import AsyncIterator
from contextlib import asynccontextmanager

from bot.council.advisory import Advisory
from bot.council.ledger import LedgerEvent
from bot.settings import Settings
from bot.store.db import Database
from bot.store.deliberations import DeliberationRecord
from bot.store.history import (
    DayCost,
    PersonaStats,
    RepoCost,
    UsageStats,
    deliberation_history,
    load_transcript,
    parse_advisory,
    usage_stats,
)

__all__ = [
    "Advisory",
    "DayCost",
    "DeliberationRecord",
    "LedgerEvent",
    "PersonaStats",
    "RepoCost",
    "UsageStats",
    "deliberation_history",
    "load_transcript",
    "open_store",
    "parse_advisory",
    "usage_stats",
]


@asynccontextmanager
async def open_store(settings: Settings) -> AsyncIterator[Database]:
    """The store at `settings.database_url`, migrated to head, disposed of afterwards."""
    db = Database(settings.database_url)
    try:
        await db.connect()
        yield db
    finally:
        await db.dispose()
