"""Small Redis keys the jobs share: why a job was stopped, and reply throttles."""

from __future__ import annotations

from arq.connections import ArqRedis
from arq.constants import abort_jobs_ss
from arq.utils import timestamp_ms

STOP_REASON_TTL_S = 3600


class JobState:
    """Keys under the deployment's prefix (COUNCIL_KEY_PREFIX)."""

    def __init__(self, redis: ArqRedis, prefix: str) -> None:
        self._redis = redis
        self._prefix = prefix

    async def request_stop(self, job_id: str, reason: str) -> None:
        """Ask the worker running `job_id` to stop (arq abort), saying why."""
        await self._redis.set(self._stop_key(job_id), reason, ex=STOP_REASON_TTL_S)
        await self._redis.zadd(abort_jobs_ss, {job_id: timestamp_ms()})

    async def stop_reason(self, job_id: str) -> str | None:
        value = await self._redis.get(self._stop_key(job_id))
        return value.decode() if isinstance(value, bytes) else value

    async def first_in_window(self, key: str, window_s: int) -> bool:
        """True once per window for `key` (one 'not allowed' reply per PR per hour)."""
        if window_s <= 0:
            return True
        once = f"{self._prefix}:once:{key}"
        return bool(await self._redis.set(once, "1", nx=True, ex=window_s))

    def _stop_key(self, job_id: str) -> str:
        return f"{self._prefix}:stop:{job_id}"
