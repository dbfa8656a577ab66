"""The structured-output modes endpoints were found to take, shared by every worker.

One worker's negotiation (bot.providers.negotiation) is every worker's: a llama.cpp server
that refuses `json_schema` is asked with `json_object` from then on, by all of them. A mode
is kept a week; an endpoint upgraded meanwhile is renegotiated when its mode is forgotten.
"""

from __future__ import annotations

from redis.asyncio import Redis

MODE_TTL_S = 7 * 86_400


class RedisModes:
    def __init__(self, redis: Redis, prefix: str) -> None:
        self._redis = redis
        self._prefix = f"{prefix}:structured:"

    async def get(self, key: str) -> str | None:
        value = await self._redis.get(self._prefix + key)
        if isinstance(value, bytes):
            return value.decode()
        return value if isinstance(value, str) else None

    async def set(self, key: str, mode: str) -> None:
        await self._redis.set(self._prefix + key, mode, ex=MODE_TTL_S)
