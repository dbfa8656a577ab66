"""A running deliberation's claim: one runner at a time, and a dead runner noticed fast.

arq marks a job in progress once, for the whole job timeout (hours at the defaults), so a
worker that dies mid-review would block a required check that long. Instead the job that
runs a deliberation holds a short lease in Redis (`<prefix>:lease:<deliberation id>` = its
token), renews it every `lease_renew_s`, and every ledger write checks it is still the
holder (the fencing token): the write before each paid call is one, so a runner that lost
its lease stops before it pays. The reconciler (bot/queue/reconcile.py) hands a
deliberation whose lease lapsed to a live worker.

While Redis cannot be reached nobody can take a deliberation over (taking over needs Redis
too), so the holder goes on; when Redis is back its next renewal re-creates a lost key, or
finds that another runner has it and stops.
"""

from __future__ import annotations

import asyncio
import uuid
from contextlib import suppress

import structlog
from redis.asyncio import Redis
from redis.exceptions import RedisError

log = structlog.get_logger(__name__)

# Renew when the key holds our token or is gone (Redis restarted without its data).
_RENEW = """
local held = redis.call('GET', KEYS[1])
if held == false or held == ARGV[1] then
  redis.call('SET', KEYS[1], ARGV[1], 'EX', ARGV[2])
  return 1
end
return 0
"""
_RELEASE = """
if redis.call('GET', KEYS[1]) == ARGV[1] then
  return redis.call('DEL', KEYS[1])
end
return 0
"""


class LeaseLost(Exception):
    """Another runner holds this deliberation now: stop without paying for anything more."""


def lease_key(prefix: str, deliberation_id: str) -> str:
    return f"{prefix}:lease:{deliberation_id}"


class Lease:
    def __init__(
        self,
        redis: Redis,
        prefix: str,
        deliberation_id: str,
        *,
        ttl_s: int,
        renew_s: float,
    ) -> None:
        self._redis = redis
        self.key = lease_key(prefix, deliberation_id)
        self.token = uuid.uuid4().hex
        self._ttl_s = ttl_s
        self._renew_s = renew_s
        self._lost = False

    async def acquire(self) -> bool:
        """True when this runner now holds the deliberation (no live runner had it)."""
        return bool(await self._redis.set(self.key, self.token, nx=True, ex=self._ttl_s))

    async def check(self) -> None:
        """Raise `LeaseLost` if another runner holds the lease. Unreachable Redis is not a
        loss: nobody can take over without it."""
        if self._lost:
            raise LeaseLost(self.key)
        try:
            held = await self._redis.get(self.key)
        except (TimeoutError, RedisError, OSError) as error:
            log.warning("lease_unverified", key=self.key, error=type(error).__name__)
            return
        if held is not None and _text(held) != self.token:
            self._lost = True
            raise LeaseLost(self.key)

    async def renew(self) -> bool:
        """Extend the lease; False when another runner has it."""
        try:
            renewed = await self._redis.eval(  # type: ignore[misc]
                _RENEW, 1, self.key, self.token, str(self._ttl_s)
            )
        except (TimeoutError, RedisError, OSError) as error:
            log.warning("lease_renew_failed", key=self.key, error=type(error).__name__)
            return True  # unknown, not lost: see the module docstring
        if not renewed:
            self._lost = True
        return bool(renewed)

    async def keep(self, task: asyncio.Task[object]) -> None:
        """Renew until cancelled; cancel `task` (the job) when the lease is lost."""
        while True:
            await asyncio.sleep(self._renew_s)
            if not await self.renew():
                log.warning("lease_lost", key=self.key)
                task.cancel()
                return

    async def release(self) -> None:
        """Hand the deliberation back at once (a graceful stop, or done)."""
        with suppress(RedisError, OSError, asyncio.TimeoutError):
            await self._redis.eval(_RELEASE, 1, self.key, self.token)  # type: ignore[misc]

    @property
    def lost(self) -> bool:
        return self._lost


def _text(value: object) -> str:
    return value.decode() if isinstance(value, bytes) else str(value)
