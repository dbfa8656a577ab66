"""The output tokens of each model's recent answers, which a call's cost reservation
follows (`bot.council.reserving`: the 95th percentile of the model's last 50 answers).

One row of `answer_sizes` per answer whose usage was known; the insert prunes the model's
rows older than its last `RECENT_ANSWERS` in the same transaction, so the table holds about
50 rows per model. The store is shared: every worker, the Action and the command line read
and add to the same kind of table (the command line's and the Action's on SQLite).

`StoreAnswerSizes` is the council's `AnswerSizes` over the store. A read of the last 50 is
one indexed query; it is cached per model in the process for `CACHE_TTL_S`, and the
process's own answers are added to the cached ones as they are recorded, so a deliberation
asks the store once per model rather than once per call. `answer_sizes(db)` gives the one
instance of a `Database`, so the cache lasts as long as the process's handle on the store.
"""

from __future__ import annotations

import asyncio
import time
import weakref
from collections import deque
from collections.abc import Callable, Sequence
from dataclasses import dataclass

from sqlalchemy import delete, insert, select

from bot.council.reserving import RECENT_ANSWERS, percentile_95
from bot.store.db import Database, retries_when_locked
from bot.store.models import AnswerSizeRow, utc_now

__all__ = [
    "CACHE_TTL_S",
    "StoreAnswerSizes",
    "answer_sizes",
    "recent_answer_sizes",
    "record_answer_size",
]

# How long a model's sizes read from the store serve its reservations in this process.
CACHE_TTL_S = 60.0


@retries_when_locked
async def record_answer_size(db: Database, model: str, output_tokens: int) -> None:
    """One answer of `model` of `output_tokens` output tokens; the model's rows beyond its
    last `RECENT_ANSWERS` go in the same transaction."""
    row = AnswerSizeRow
    cutoff = (
        select(row.id)
        .where(row.model == model)
        .order_by(row.id.desc())
        .offset(RECENT_ANSWERS - 1)
        .limit(1)
        .scalar_subquery()
    )
    async with db.session() as session:
        await session.execute(
            insert(row).values(model=model, output_tokens=output_tokens, created_at=utc_now())
        )
        # Fewer than RECENT_ANSWERS rows: the cutoff is NULL and nothing is deleted.
        await session.execute(
            delete(row)
            .where(row.model == model, row.id < cutoff)
            .execution_options(synchronize_session=False)
        )


async def recent_answer_sizes(db: Database, model: str) -> list[int]:
    """The output tokens of `model`'s last `RECENT_ANSWERS` answers, oldest first."""
    query = (
        select(AnswerSizeRow.output_tokens)
        .where(AnswerSizeRow.model == model)
        .order_by(AnswerSizeRow.id.desc())
        .limit(RECENT_ANSWERS)
    )
    async with db.session(readonly=True) as session:
        newest_first = list(await session.scalars(query))
    return newest_first[::-1]


@dataclass
class _Cached:
    read_at: float
    sizes: deque[int]


class StoreAnswerSizes:
    """`AnswerSizes` (bot.council.reserving) kept in the store, cached in this process."""

    def __init__(
        self,
        db: Database,
        *,
        ttl_s: float = CACHE_TTL_S,
        clock: Callable[[], float] = time.monotonic,
    ) -> None:
        self._db = db
        self._ttl_s = ttl_s
        self._clock = clock
        self._cached: dict[str, _Cached] = {}
        self.reads = 0  # store reads so far (what the cache saves is measured on it)

    async def sizes(self, model: str) -> list[int]:
        """The model's last answers' output tokens, oldest first (at most RECENT_ANSWERS)."""
        now = self._clock()
        cached = self._cached.get(model)
        if cached is None or now - cached.read_at >= self._ttl_s:
            self.reads += 1
            found = await recent_answer_sizes(self._db, model)
            cached = _Cached(now, deque(found, maxlen=RECENT_ANSWERS))
            self._cached[model] = cached
        return list(cached.sizes)

    async def p95(self, model: str) -> int | None:
        return percentile_95(await self.sizes(model))

    async def record(self, model: str, output_tokens: int) -> None:
        # Shielded: a review cancelled mid-write must not leave SQLite's write lock held
        # by a transaction nobody finishes (the cancel's own status write waits on it).
        await asyncio.shield(record_answer_size(self._db, model, output_tokens))
        cached = self._cached.get(model)
        if cached is not None:
            cached.sizes.append(output_tokens)

    async def p95_of(self, models: Sequence[str]) -> dict[str, tuple[int | None, int]]:
        """Per model: (its p95, or None when never seen; how many answers it is over)."""
        found: dict[str, tuple[int | None, int]] = {}
        for model in models:
            sizes = await self.sizes(model)
            found[model] = (percentile_95(sizes), len(sizes))
        return found


_BY_DATABASE: weakref.WeakKeyDictionary[Database, StoreAnswerSizes] = weakref.WeakKeyDictionary()


def answer_sizes(db: Database) -> StoreAnswerSizes:
    """The one `StoreAnswerSizes` of `db` in this process: its cache is shared by every
    deliberation the process runs on that handle."""
    found = _BY_DATABASE.get(db)
    if found is None:
        found = _BY_DATABASE[db] = StoreAnswerSizes(db)
    return found
