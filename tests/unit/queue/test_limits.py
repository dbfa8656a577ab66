"""The provider concurrency limit held across processes, on real Redis."""

from __future__ import annotations

import asyncio
import time
import uuid

from redis.asyncio import Redis

from bot.queue.limits import RedisSemaphore


async def test_limit_holds_across_two_clients_under_load() -> None:
    name = f"test-{uuid.uuid4().hex}"
    clients = [Redis.from_url("redis://127.0.0.1:6379/0") for _ in range(2)]
    semaphores = [RedisSemaphore(c, name, 3, lease_s=30) for c in clients]
    running = peak = 0

    async def work(sem: RedisSemaphore) -> None:
        nonlocal running, peak
        async with sem.slot():
            running += 1
            peak = max(peak, running)
            await asyncio.sleep(0.02)
            running -= 1

    await asyncio.gather(*(work(semaphores[i % 2]) for i in range(40)))
    assert peak == 3
    assert await semaphores[0].held() == 0
    for c in clients:
        await c.aclose()


async def test_a_crashed_holders_slot_expires() -> None:
    name = f"test-{uuid.uuid4().hex}"
    redis = Redis.from_url("redis://127.0.0.1:6379/0")
    sem = RedisSemaphore(redis, name, 1, lease_s=0.3)
    # A holder that died without releasing: its lease runs out in 0.3 s.
    await redis.zadd(f"council:slots:{name}", {"ghost": time.time() * 1000 + 300})
    started = asyncio.get_running_loop().time()
    async with sem.slot():
        waited = asyncio.get_running_loop().time() - started
    assert 0.2 <= waited < 2.5
    await redis.aclose()
