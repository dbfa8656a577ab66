"""A concurrency limit shared by every worker: a semaphore in Redis.

Per-process limits multiply by workers x jobs, so each provider's limit is held here. A slot
is a member of a sorted set scored by its lease's expiry (a crashed worker's slots expire);
a waiter blocks on a notification list that every release pushes to, so nobody polls with
sleeps.
"""

from __future__ import annotations

import asyncio
import time
import uuid
from collections.abc import AsyncIterator, Callable
from contextlib import AbstractAsyncContextManager, asynccontextmanager, suppress
from typing import Any

from redis.asyncio import Redis
from redis.exceptions import RedisError

_ACQUIRE = """
local now = tonumber(ARGV[1])
redis.call('ZREMRANGEBYSCORE', KEYS[1], '-inf', now)
if redis.call('ZCARD', KEYS[1]) < tonumber(ARGV[2]) then
  redis.call('ZADD', KEYS[1], now + tonumber(ARGV[3]), ARGV[4])
  redis.call('PEXPIRE', KEYS[1], tonumber(ARGV[3]))
  return 1
end
return 0
"""

_RELEASE = """
redis.call('ZREM', KEYS[1], ARGV[1])
redis.call('LPUSH', KEYS[2], '1')
redis.call('LTRIM', KEYS[2], 0, tonumber(ARGV[2]) - 1)
redis.call('PEXPIRE', KEYS[2], 60000)
return 1
"""

# A waiter re-checks at least this often, in case a lease expired without a release.
_WAKE_S = 1


class RedisSemaphore:
    def __init__(self, redis: Redis, name: str, limit: int, *, lease_s: float) -> None:
        self._redis = redis
        self._slots = f"council:slots:{name}"
        self._released = f"council:slots:{name}:released"
        self._limit = limit
        self._lease_ms = int(lease_s * 1000)
        self._acquire = redis.register_script(_ACQUIRE)
        self._release = redis.register_script(_RELEASE)

    @asynccontextmanager
    async def slot(self) -> AsyncIterator[None]:
        """Wait for a slot. While Redis cannot be reached the wait goes on (the call's own
        deadline bounds it); a slot whose release is lost expires with its lease."""
        token = uuid.uuid4().hex
        while not await self._try_acquire(token):
            try:
                await self._redis.blpop([self._released], timeout=_WAKE_S)  # type: ignore[misc]
            except (TimeoutError, RedisError, OSError):
                await asyncio.sleep(_WAKE_S)
        try:
            yield
        finally:
            with suppress(RedisError, OSError, asyncio.TimeoutError):
                await self._release(keys=[self._slots, self._released], args=[token, self._limit])

    async def _try_acquire(self, token: str) -> bool:
        try:
            return bool(
                await self._acquire(
                    keys=[self._slots], args=[_now_ms(), self._limit, self._lease_ms, token]
                )
            )
        except (TimeoutError, RedisError, OSError):
            return False

    async def held(self) -> int:
        await self._redis.zremrangebyscore(self._slots, "-inf", _now_ms())
        return int(await self._redis.zcard(self._slots))


def _now_ms() -> int:
    return int(time.time() * 1000)


def redis_limiter(
    redis: Redis, *, lease_s: float, prefix: str = ""
) -> Callable[[str, int], Callable[[], AbstractAsyncContextManager[Any]]]:
    """For ProviderRegistry(limiter=...): one Redis semaphore per provider."""

    def build(provider: str, limit: int) -> Callable[[], AbstractAsyncContextManager[Any]]:
        return RedisSemaphore(redis, f"{prefix}{provider}", limit, lease_s=lease_s).slot

    return build
