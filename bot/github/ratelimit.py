"""What is left of each installation's GitHub rate limit, as GitHub last said it.

GitHub allows an installation 5,000 REST requests an hour (the `core` resource) and says
how many are left in every answer (`x-ratelimit-remaining`, `x-ratelimit-reset`). Every
installation client's answers are recorded here, in Redis so that every worker sees the
same figure, and in the `council_github_requests_left` gauge. A review about to start
asks `wait_s`: while fewer than the reserve are left, it waits in the queue until the reset
instead of running out half-way.
"""

from __future__ import annotations

import time
from collections.abc import Awaitable, Callable
from typing import Any, cast

import httpx
import structlog
from redis.asyncio import Redis
from redis.exceptions import RedisError

from bot.metrics import GITHUB_REQUESTS_LEFT

__all__ = ["RateWatch"]

log = structlog.get_logger(__name__)

CORE = "core"


class RateWatch:
    def __init__(self, redis: Redis, prefix: str, *, clock: Callable[[], float] = time.time):
        self.redis = redis
        self.prefix = f"{prefix}:ratelimit"
        self._clock = clock

    def _key(self, installation_id: int) -> str:
        return f"{self.prefix}:{installation_id}"

    def hook(self, installation_id: int) -> Callable[[httpx.Response], Awaitable[None]]:
        """An httpx response hook recording the installation's `core` limit."""

        async def record(response: httpx.Response) -> None:
            headers = response.headers
            if headers.get("x-ratelimit-resource", CORE) != CORE:
                return  # search, graphql... have limits of their own
            try:
                remaining = int(headers["x-ratelimit-remaining"])
                reset = int(headers["x-ratelimit-reset"])
            except (KeyError, ValueError):
                return  # codeload, or an answer without the headers
            await self.record(installation_id, remaining, reset)

        return record

    async def record(self, installation_id: int, remaining: int, reset: int) -> None:
        GITHUB_REQUESTS_LEFT.labels(str(installation_id)).set(remaining)
        ttl = max(1, int(reset - self._clock()) + 60)
        try:
            async with self.redis.pipeline(transaction=True) as pipe:
                pipe.hset(self._key(installation_id), mapping={"left": remaining, "reset": reset})
                pipe.expire(self._key(installation_id), ttl)
                await pipe.execute()
        except (RedisError, OSError) as error:  # the figure is advice; the call went through
            log.warning("rate_limit_unrecorded", error=type(error).__name__)

    async def left(self, installation_id: int) -> tuple[int, float] | None:
        """(requests left, reset epoch seconds), or None: unknown, or the window is over."""
        try:
            found: dict[Any, Any] = await cast(
                Awaitable[dict[Any, Any]], self.redis.hgetall(self._key(installation_id))
            )
        except (RedisError, OSError):
            return None
        values = {_text(k): _text(v) for k, v in found.items()}
        try:
            remaining, reset = int(values["left"]), float(values["reset"])
        except (KeyError, ValueError):
            return None
        if reset <= self._clock():
            return None
        return remaining, reset

    async def wait_s(self, installation_id: int, reserve: int) -> tuple[float, float] | None:
        """(seconds to wait, reset epoch) while fewer than `reserve` requests are left."""
        known = await self.left(installation_id)
        if known is None or known[0] >= reserve:
            return None
        _, reset = known
        return max(1.0, reset - self._clock() + 1.0), reset


def _text(value: Any) -> str:
    return value.decode() if isinstance(value, bytes) else str(value)
