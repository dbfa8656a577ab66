"""Pacing of content-creating calls, and the githubkit throttler that applies it.

GitHub's secondary-rate-limit guidance: make mutating requests (POST, PATCH, PUT, DELETE)
serially and at least a second apart. githubkit's throttler only bounds concurrency (the
pause between mutating requests is not implemented there), so ours adds the pause.

The pause is per installation and holds across every worker process: the next free slot
lives in Redis and one Lua script reserves it atomically, on Redis's own clock. A slot is
taken when a call starts and pushed again when it ends. Within one process the calls of an
installation are also made one at a time (GitHub: "make requests serially"), so they reach
GitHub at least `interval` apart; between processes the slots keep their starts that far
apart, give or take the time a request takes to leave.
"""

from __future__ import annotations

import asyncio
import time
from abc import ABC, abstractmethod
from collections.abc import AsyncGenerator, AsyncIterator, Generator
from contextlib import AbstractAsyncContextManager, asynccontextmanager, contextmanager
from typing import Any, Protocol, cast

import anyio
import httpx
from githubkit.throttling import BaseThrottler
from redis.asyncio import Redis

__all__ = ["MUTATING_METHODS", "LocalPacer", "Pacer", "PacingThrottler", "RedisPacer"]

MUTATING_METHODS = frozenset({"POST", "PATCH", "PUT", "DELETE"})
# GitHub: "No more than 100 concurrent requests are allowed" (githubkit's default too).
MAX_CONCURRENCY = 100

# KEYS[1]: the slot key. ARGV[1]: interval in ms. Returns how long to wait, in ms.
_RESERVE = """
local t = redis.call('TIME')
local now = tonumber(t[1]) * 1000 + math.floor(tonumber(t[2]) / 1000)
local free = tonumber(redis.call('GET', KEYS[1]) or '0')
local at = math.max(now, free)
local interval = tonumber(ARGV[1])
redis.call('SET', KEYS[1], at + interval, 'PX', interval + 60000)
return at - now
"""
# After a call: the next one starts no sooner than `interval` from now.
_RELEASE = """
local t = redis.call('TIME')
local now = tonumber(t[1]) * 1000 + math.floor(tonumber(t[2]) / 1000)
local free = tonumber(redis.call('GET', KEYS[1]) or '0')
local interval = tonumber(ARGV[1])
if now + interval > free then
  redis.call('SET', KEYS[1], now + interval, 'PX', interval + 60000)
end
return 0
"""


class Pacer(Protocol):
    def turn(self, key: str, interval_s: float) -> AbstractAsyncContextManager[float]:
        """Wait for this key's turn (yielding the seconds waited) and hold it for one call."""
        ...


class _Serial(ABC):
    """One call at a time per key within this process, each in its reserved slot."""

    def __init__(self) -> None:
        self._locks: dict[str, asyncio.Lock] = {}

    def lock(self, key: str) -> asyncio.Lock:
        return self._locks.setdefault(key, asyncio.Lock())

    @abstractmethod
    async def reserve(self, key: str, interval_s: float) -> float:
        """Wait for the key's next slot; return the seconds waited."""

    @abstractmethod
    async def release(self, key: str, interval_s: float) -> None:
        """The call is done: the next slot is `interval_s` from now at the earliest."""

    @asynccontextmanager
    async def turn(self, key: str, interval_s: float) -> AsyncIterator[float]:
        async with self.lock(key):
            waited = await self.reserve(key, interval_s)
            try:
                yield waited
            finally:
                await self.release(key, interval_s)


class RedisPacer(_Serial):
    """Slots shared by every process using the same Redis and prefix."""

    def __init__(self, redis: Redis, prefix: str) -> None:
        super().__init__()
        self._redis = redis
        self._prefix = prefix

    def _key(self, key: str) -> str:
        return f"{self._prefix}:pace:{key}"

    async def _run(self, script: str, key: str, interval_s: float) -> int:
        result = await cast(
            Any, self._redis.eval(script, 1, self._key(key), str(max(1, round(interval_s * 1000))))
        )
        return int(result)

    async def reserve(self, key: str, interval_s: float) -> float:
        wait = await self._run(_RESERVE, key, interval_s) / 1000
        if wait > 0:
            await asyncio.sleep(wait)
        return wait

    async def release(self, key: str, interval_s: float) -> None:
        await self._run(_RELEASE, key, interval_s)


class LocalPacer(_Serial):
    """Slots within one process (the command line, which posts nothing anyway)."""

    def __init__(self) -> None:
        super().__init__()
        self._free: dict[str, float] = {}

    async def reserve(self, key: str, interval_s: float) -> float:
        now = time.monotonic()
        at = max(now, self._free.get(key, 0.0))
        self._free[key] = at + interval_s
        if at > now:
            await asyncio.sleep(at - now)
        return at - now

    async def release(self, key: str, interval_s: float) -> None:
        self._free[key] = max(self._free.get(key, 0.0), time.monotonic() + interval_s)


class PacingThrottler(BaseThrottler):
    """githubkit's throttler hook: bounded concurrency, plus paced mutating calls."""

    def __init__(self, pacer: Pacer, key: str, interval_s: float) -> None:
        self._pacer = pacer
        self._key = key
        self._interval_s = interval_s
        self._semaphore: anyio.Semaphore | None = None

    @contextmanager
    def acquire(self, request: httpx.Request) -> Generator[None, Any, Any]:
        # githubkit's sync clients would come here; every client we build is async.
        raise RuntimeError("bot.github builds async clients only; use the async_* methods")
        yield  # pragma: no cover

    @asynccontextmanager
    async def async_acquire(self, request: httpx.Request) -> AsyncGenerator[None, Any]:
        if self._semaphore is None:  # created lazily: it belongs to the running loop
            self._semaphore = anyio.Semaphore(MAX_CONCURRENCY)
        async with self._semaphore:
            if request.method in MUTATING_METHODS and self._interval_s > 0:
                async with self._pacer.turn(self._key, self._interval_s):
                    yield
            else:
                yield
