"""Deliveries the receiver kept in the database while Redis was unavailable, and the
drainer that enqueues them once Redis answers.

GitHub does not redeliver a failed delivery by itself, so a delivery that cannot be
enqueued is kept (`bot.store.pending`) and answered 202. The drainer runs in the web
process, every `outbox_interval_s`: oldest first, a bounded batch per tick, each delivery
enqueued with `enqueue_once` and deleted only after Redis took it. `enqueue_once`
deduplicates by delivery id, so a delivery whose enqueue did reach Redis after all (a
frozen Redis runs the command once it thaws), or that two web processes drain at once,
still makes one job.
"""

from __future__ import annotations

import asyncio
from collections.abc import AsyncIterator, Coroutine
from contextlib import asynccontextmanager
from datetime import UTC, datetime
from typing import Any, TypeVar

import structlog
from arq.connections import ArqRedis
from pydantic import ValidationError
from redis.exceptions import RedisError

from bot.queue.enqueue import BodyDigest, EnqueueOutcome, enqueue_once
from bot.queue.jobs import JobRequest, function_for, job_id
from bot.settings import Settings
from bot.store.db import Database
from bot.store.pending import PendingDelivery, delete_pending, keep_delivery, oldest_pending

log = structlog.get_logger("bot.web")

# The longest the receiver waits for the database after Redis (`redis_timeout_s`, 3 s by
# default) failed it: together well inside GitHub's 10 seconds.
KEEP_TIMEOUT_S = 3.0
# Kept deliveries enqueued per tick at most; the rest wait for the next tick.
DRAIN_BATCH = 100
# Bounded work, referenced until it finishes (also when given up on at its deadline).
_RUNNING: set[asyncio.Task[Any]] = set()
T = TypeVar("T")


async def enqueue_bounded(
    redis: ArqRedis,
    settings: Settings,
    *,
    delivery_id: str,
    body: bytes | BodyDigest,
    request: JobRequest,
) -> EnqueueOutcome:
    """`enqueue_once` within `redis_timeout_s` in all (TimeoutError past it): a frozen Redis
    accepts connections and never answers, and a socket timeout bounds each read only."""
    async with asyncio.timeout(settings.redis_timeout_s):
        return await enqueue_once(
            redis, delivery_id=delivery_id, body=body, request=request, settings=settings
        )


async def keep(
    db: Database,
    *,
    delivery_id: str,
    body: bytes | BodyDigest,
    request: JobRequest,
    received_at: datetime,
) -> bool:
    """Keep a delivery for the drainer, within `KEEP_TIMEOUT_S` (TimeoutError past it);
    False if this delivery id was kept already."""
    delivery = PendingDelivery(
        delivery_id=delivery_id,
        job_id=job_id(request),
        function=function_for(request).value,
        payload=request.model_dump_json(),
        body_digest=(body if isinstance(body, BodyDigest) else BodyDigest.of(body)).hex,
        received_at=received_at,
    )
    return await _within(KEEP_TIMEOUT_S, keep_delivery(db, delivery))


async def _within(seconds: float, work: Coroutine[Any, Any, T]) -> T:
    """`work`, or TimeoutError after `seconds` at the latest. Cancelling is not enough on
    its own: a cancelled SQLite statement still runs to its end (and waits out the busy
    timeout) in aiosqlite's thread, and the rollback waits behind it. So `work` runs in
    its own task, and at the deadline it is cancelled and left to finish by itself."""
    task = asyncio.ensure_future(work)
    _RUNNING.add(task)
    task.add_done_callback(_forget)
    try:
        return await asyncio.wait_for(asyncio.shield(task), seconds)
    except TimeoutError:
        task.cancel()
        raise


def _forget(task: asyncio.Task[Any]) -> None:
    _RUNNING.discard(task)
    if not task.cancelled():
        task.exception()  # retrieved: a late failure of work given up on is not news


async def drain(redis: ArqRedis, db: Database, settings: Settings) -> int:
    """Enqueue up to `DRAIN_BATCH` kept deliveries, oldest first, deleting each once Redis
    took it; stops at the first Redis failure. Returns how many left the database."""
    done = 0
    for kept in await oldest_pending(db, DRAIN_BATCH):
        try:
            request = JobRequest.model_validate_json(kept.payload)
        except ValidationError as error:
            # Kept by a release whose jobs this one cannot read: GitHub's delivery log
            # still has it, for an operator to redeliver.
            log.error("kept delivery unreadable", delivery_id=kept.delivery_id, error=str(error))
            await delete_pending(db, kept.delivery_id)
            continue
        try:
            outcome = await enqueue_bounded(
                redis,
                settings,
                delivery_id=kept.delivery_id,
                body=BodyDigest(kept.body_digest),
                request=request,
            )
        except (RedisError, OSError, TimeoutError):
            break  # still unavailable: the rest wait for the next tick
        await delete_pending(db, kept.delivery_id)
        done += 1
        log.info(
            "delivery_enqueued_late",
            delivery_id=kept.delivery_id,
            job_id=kept.job_id,
            repo=request.repo,
            pr=request.pr_number,
            outcome=outcome.value,
            waited_s=round((datetime.now(UTC) - kept.received_at).total_seconds(), 3),
        )
    return done


@asynccontextmanager
async def draining(redis: ArqRedis, db: Database, settings: Settings) -> AsyncIterator[None]:
    """The drainer, running in the background while the block runs."""
    drainer = asyncio.create_task(drain_forever(redis, db, settings))
    try:
        yield
    finally:
        drainer.cancel()
        await asyncio.gather(drainer, return_exceptions=True)


async def drain_forever(redis: ArqRedis, db: Database, settings: Settings) -> None:
    """`drain` now and every `outbox_interval_s`, until cancelled."""
    while True:
        try:
            await drain(redis, db, settings)
        except Exception as error:
            # The database failed this tick; the next one tries again.
            log.error("kept deliveries not drained", error=type(error).__name__)
        await asyncio.sleep(settings.outbox_interval_s)
