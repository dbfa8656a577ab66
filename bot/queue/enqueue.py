"""Deduplicate a webhook delivery and enqueue its job in one Redis round trip.

arq's own `enqueue_job` costs a WATCH/EXISTS/MULTI/EXEC exchange, and a separate dedup key
would cost another: the receiver spent most of its time waiting on Redis. One Lua script
does it all atomically, writing the job exactly as arq 0.28's `ArqRedis.enqueue_job` does
(the job bytes from `arq.jobs.serialize_job`, `PSETEX arq:job:<id>` with arq's expiry,
`ZADD <queue> <enqueue ms> <id>`), so an unmodified arq worker runs it.

A delivery is known by its `X-GitHub-Delivery` id and by the SHA-256 of its raw body, each
kept for `delivery_ttl_s`: the signature covers the body only, so a signed body replayed
under a new delivery id is the same delivery, and is refused in the same round trip. A
delivery kept while Redis was down is enqueued later by its body's digest (`BodyDigest`),
not its body.

The job function receives one positional argument: the `JobRequest` as a JSON-mode dict
(`request.model_dump(mode="json")`); the worker validates it back with
`JobRequest.model_validate`. A plain dict, not a pickled model, so a job enqueued by one
release still loads in the next.
"""

from __future__ import annotations

import hashlib
from dataclasses import dataclass
from enum import StrEnum
from typing import Any

from arq.connections import ArqRedis
from arq.constants import job_key_prefix, result_key_prefix
from arq.jobs import serialize_job
from arq.utils import timestamp_ms
from redis.exceptions import NoScriptError

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
_OUTCOMES = (
    EnqueueOutcome.DUPLICATE_DELIVERY,
    EnqueueOutcome.JOB_EXISTS,
    EnqueueOutcome.QUEUED,
    EnqueueOutcome.DUPLICATE_BODY,
)


@dataclass(frozen=True)
class BodyDigest:
    """A raw body's SHA-256 (hex): all the deduplication needs of the body."""

    sha256: str

    @classmethod
    def of(cls, body: bytes) -> BodyDigest:
        return cls(hashlib.sha256(body).hexdigest())


def delivery_key(settings: Settings, delivery_id: str) -> str:
    """Delivery ids live beside their queue, so each deployment (and test) has its own."""
    return f"{settings.queue_name}:delivery:{delivery_id}"


def body_key(settings: Settings, body: bytes | BodyDigest) -> str:
    """The raw body's SHA-256, beside the delivery ids and kept as long."""
    digest = body if isinstance(body, BodyDigest) else BodyDigest.of(body)
    return f"{settings.queue_name}:body:{digest.sha256}"


async def _run_script(redis: ArqRedis, keys: list[str], args: list[str | int | bytes]) -> int:
    """EVALSHA; the script text travels only when this Redis does not know it yet."""
    try:
        result = await _command(redis, "EVALSHA", _ENQUEUE_ONCE_SHA, len(keys), *keys, *args)
    except NoScriptError:
        await _command(redis, "SCRIPT LOAD", _ENQUEUE_ONCE_LUA)
        result = await _command(redis, "EVALSHA", _ENQUEUE_ONCE_SHA, len(keys), *keys, *args)
    return int(result)


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
