"""The one way a process connects to Redis: every command has a deadline.

arq's own pool sets a connect timeout only, so a frozen Redis (a paused VM, a full disk, a
failover) hangs a command, and with it a webhook request or the worker's loop, for as long
as it lasts. Here each command fails after `COUNCIL_REDIS_TIMEOUT_S` instead, and callers
decide what an outage means for them.
"""

from __future__ import annotations

from arq.connections import ArqRedis

from bot.settings import Settings


async def connect_redis(settings: Settings, *, ping: bool = True) -> ArqRedis:
    """A pool whose every command has a deadline; `ping` first checks Redis answers."""
    pool: ArqRedis = ArqRedis.from_url(
        settings.redis_url,
        socket_timeout=settings.redis_timeout_s,
        socket_connect_timeout=settings.redis_timeout_s,
        health_check_interval=30,
    )
    pool.default_queue_name = settings.queue_name
    if ping:
        await pool.ping()
    return pool
