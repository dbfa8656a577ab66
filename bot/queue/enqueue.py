"""Deduplicate a webhook delivery and enqueue its job in one Redis round trip.

arq's own `enqueue_job` costs a WATCH/EXISTS/MULTI/EXEC exchange, and a separate dedup key
would cost another: the receiver spent most of its time waiting on Redis. One Lua script
does it all atomically, writing the job exactly as arq 0.28's `ArqRedis.enqueue_job` does
(the job bytes from `arq.jobs.serialize_job`, `PSETEX arq:job:<id>` with arq's expiry,
`ZADD <queue> <enqueue ms> <id>`), so an unmodified arq worker runs it.

A delivery is known by its `X-GitHub-Delivery` id and by a digest of its raw body (its
SHA-256; from the receiver, its HMAC-SHA256: `BodyDigest`), each kept for `delivery_ttl_s`:
the signature covers the body only, so a signed body replayed under a new delivery id is
the same delivery, and is refused in the same round trip. A delivery kept while Redis was
down is enqueued later by its body's digest, not its body.

Concurrent deliveries share one write to Redis (`_Batch`): each still costs one round trip.

The job function receives one positional argument: the `JobRequest` as a JSON-mode dict
(`request.model_dump(mode="json")`); the worker validates it back with
`JobRequest.model_validate`. A plain dict, not a pickled model, so a job enqueued by one
release still loads in the next.
"""

from __future__ import annotations

import asyncio
import hashlib
import weakref
from collections.abc import Sequence
from dataclasses import dataclass
from enum import StrEnum
from typing import Any, ClassVar

from arq.connections import ArqRedis
from arq.constants import job_key_prefix, result_key_prefix
from arq.jobs import serialize_job
from arq.utils import timestamp_ms
from redis.exceptions import NoScriptError, ResponseError

from bot.queue.jobs import JobRequest, function_for, job_id
from bot.settings import Settings


class EnqueueOutcome(StrEnum):
    QUEUED = "queued"
    DUPLICATE_DELIVERY = "duplicate_delivery"  # this delivery id was seen before
    DUPLICATE_BODY = "duplicate_body"  # a new delivery id, but this exact body was seen
    JOB_EXISTS = "job_exists"  # a new delivery, but arq still keeps this job or its result


# KEYS: delivery key, body digest key, arq job key, arq result key, queue zset.
# ARGV: delivery ttl ms, job id, job bytes, job expiry ms, queue score (enqueue time ms).
# Both dedup keys are written whatever the outcome, so each is kept for the full ttl.
_ENQUEUE_ONCE_LUA = """
local new_delivery = redis.call('SET', KEYS[1], ARGV[2], 'NX', 'PX', ARGV[1])
local new_body = redis.call('SET', KEYS[2], ARGV[2], 'NX', 'PX', ARGV[1])
if not new_delivery then
  return 0
end
if not new_body then
  return 3
end
if redis.call('EXISTS', KEYS[3], KEYS[4]) > 0 then
  return 1
end
redis.call('PSETEX', KEYS[3], ARGV[4], ARGV[3])
redis.call('ZADD', KEYS[5], ARGV[5], ARGV[2])
return 2
"""

_ENQUEUE_ONCE_SHA = hashlib.sha1(_ENQUEUE_ONCE_LUA.encode()).hexdigest()
_SHA_BYTES = _ENQUEUE_ONCE_SHA.encode()
_OUTCOMES = (
    EnqueueOutcome.DUPLICATE_DELIVERY,
    EnqueueOutcome.JOB_EXISTS,
    EnqueueOutcome.QUEUED,
    EnqueueOutcome.DUPLICATE_BODY,
)


@dataclass(frozen=True)
class BodyDigest:
    """A raw body's SHA-256 (hex): all the deduplication needs of the body. The receiver
    passes the body's HMAC-SHA256 under the webhook secret instead, which checking the
    signature has computed already (and which it keeps for the drainer): as collision-free,
    and one value per body while the secret stays."""

    hex: str

    @classmethod
    def of(cls, body: bytes) -> BodyDigest:
        return cls(hashlib.sha256(body).hexdigest())


def delivery_key(settings: Settings, delivery_id: str) -> str:
    """Delivery ids live beside their queue, so each deployment (and test) has its own."""
    return f"{settings.queue_name}:delivery:{delivery_id}"


def body_key(settings: Settings, body: bytes | BodyDigest) -> str:
    """The raw body's digest (`BodyDigest`), beside the delivery ids and kept as long."""
    digest = body if isinstance(body, BodyDigest) else BodyDigest.of(body)
    return f"{settings.queue_name}:body:{digest.hex}"


async def _run_script(redis: ArqRedis, keys: list[str], args: list[str | int | bytes]) -> int:
    """The script for one delivery, sent in the same write as those of every other delivery
    that reached this point in the same event-loop turn (`_Batch`)."""
    return await _Batch.joining(redis).run(keys, args)


class _Batch:
    """Scripts of concurrent deliveries, written to Redis together as one pipeline.

    Each delivery still costs one round trip, but fifty senders no longer cost fifty
    writes, fifty reads and fifty pooled connections: the first delivery of an event-loop
    turn schedules the flush after every other ready task has run, and the deliveries that
    joined by then share one `EVALSHA` pipeline. Outcomes are per delivery: a failed
    command fails its own delivery; a failed write or read fails the deliveries it carried.
    A waiter that gives up (its deadline) leaves its command to run, as a single command
    would; the dedup keys make a late run harmless.
    """

    _open: ClassVar[weakref.WeakKeyDictionary[ArqRedis, _Batch]] = weakref.WeakKeyDictionary()
    _flushing: ClassVar[set[asyncio.Task[None]]] = set()

    def __init__(self, redis: ArqRedis) -> None:
        self.redis = redis
        self.loop = asyncio.get_running_loop()
        self.calls: list[tuple[list[str], list[str | int | bytes], asyncio.Future[int]]] = []

    @classmethod
    def joining(cls, redis: ArqRedis) -> _Batch:
        """The batch this turn's deliveries join, opened (and its flush scheduled) by the
        first of them."""
        batch = cls._open.get(redis)
        if batch is None or batch.loop is not asyncio.get_running_loop():
            batch = cls._open[redis] = cls(redis)
            batch.loop.call_soon(batch._close)
        return batch

    def run(self, keys: list[str], args: list[str | int | bytes]) -> asyncio.Future[int]:
        future: asyncio.Future[int] = self.loop.create_future()
        self.calls.append((keys, args, future))
        return future

    def _close(self) -> None:
        if self._open.get(self.redis) is self:
            del self._open[self.redis]
        task = self.loop.create_task(self._flush())
        self._flushing.add(task)
        task.add_done_callback(self._flushing.discard)

    async def _flush(self) -> None:
        try:
            results = await self._evalsha(range(len(self.calls)))
            missing = [i for i, result in enumerate(results) if isinstance(result, NoScriptError)]
            if missing:  # this Redis does not know the script yet (or lost it)
                await _command(self.redis, "SCRIPT LOAD", _ENQUEUE_ONCE_LUA)
                for i, result in zip(missing, await self._evalsha(missing), strict=True):
                    results[i] = result
        except BaseException as error:  # the write or the read failed: every call did
            for _, _, future in self.calls:
                if not future.done():
                    future.set_exception(error)
            if not isinstance(error, Exception):
                raise
            return
        for (_, _, future), result in zip(self.calls, results, strict=True):
            if future.done():
                continue  # its waiter gave up
            if isinstance(result, BaseException):
                future.set_exception(result)
            else:
                future.set_result(int(result))

    async def _evalsha(self, indexes: Sequence[int]) -> list[Any]:
        """One write of every call's `EVALSHA`, then their replies in order: a reply that
        is an error (`NOSCRIPT`, a script error) is that call's outcome. redis-py's own
        pipeline packs each argument in Python, which cost more than the rest of the
        delivery; these are packed here, as RESP, in one join."""
        packed = b"".join(_pack_evalsha(*self.calls[i][:2]) for i in indexes)
        pool = self.redis.connection_pool
        connection = await pool.get_connection()
        try:
            await connection.send_packed_command(packed)
            results: list[Any] = []
            for _ in indexes:
                try:
                    results.append(await connection.read_response())
                except ResponseError as error:  # read whole: the next reply is intact
                    results.append(error)
            return results
        except BaseException:
            # A timeout, a cancellation or a reset mid-way leaves replies unread on the
            # socket: the connection must not go back to the pool with them, where the
            # next command would read this batch's answers as its own.
            await connection.disconnect()
            raise
        finally:
            await pool.release(connection)


def _pack_evalsha(keys: list[str], args: list[str | int | bytes]) -> bytes:
    """`EVALSHA <sha> <numkeys> <keys...> <args...>` in RESP, as redis-py would send it
    (str as UTF-8, int as its decimal digits)."""
    words = [b"EVALSHA", _SHA_BYTES, b"%d" % len(keys)]
    words += [key.encode() for key in keys]
    words += [
        arg if isinstance(arg, bytes) else b"%d" % arg if isinstance(arg, int) else arg.encode()
        for arg in args
    ]
    parts = [b"*%d\r\n" % len(words)]
    for word in words:
        parts += (b"$%d\r\n" % len(word), word, b"\r\n")
    return b"".join(parts)


async def _command(redis: ArqRedis, *args: str | int | bytes) -> Any:
    # redis-py types evalsha() as sync-or-async and leaves execute_command untyped.
    return await redis.execute_command(*args)  # type: ignore[no-untyped-call]


def job_bytes(redis: ArqRedis, request: JobRequest, enqueue_time_ms: int) -> bytes:
    """The job as arq serializes it, with the pool's serializer (pickle unless configured)."""
    args: tuple[Any, ...] = (request.model_dump(mode="json"),)
    data: bytes = serialize_job(
        function_for(request).value,
        args,
        {},
        None,
        enqueue_time_ms,
        serializer=redis.job_serializer,
    )
    return data


async def enqueue_once(
    redis: ArqRedis,
    *,
    delivery_id: str,
    body: bytes | BodyDigest,
    request: JobRequest,
    settings: Settings,
) -> EnqueueOutcome:
    """Remember the delivery (its id and its raw `body`) and enqueue its job, unless the
    id, the body or the job was already there."""
    identifier = job_id(request)
    now_ms = timestamp_ms()
    result = await _run_script(
        redis,
        [
            delivery_key(settings, delivery_id),
            body_key(settings, body),
            job_key_prefix + identifier,
            result_key_prefix + identifier,
            settings.queue_name,
        ],
        [
            settings.delivery_ttl_s * 1000,
            identifier,
            job_bytes(redis, request, now_ms),
            redis.expires_extra_ms,
            now_ms,
        ],
    )
    return _OUTCOMES[result]
