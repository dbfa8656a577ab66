"""Small Redis keys the jobs share: why a job was stopped, reply throttles, and how often
a job has waited for GitHub's rate limit."""

from __future__ import annotations

from arq.connections import ArqRedis
from arq.constants import abort_jobs_ss, expires_extra_ms, job_key_prefix, retry_key_prefix
from arq.utils import timestamp_ms

STOP_REASON_TTL_S = 3600
WAITS_TTL_S = 7 * 86_400


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

    async def waits(self, job_id: str) -> int:
        """How many times `job_id` has waited for GitHub's rate limit."""
        return int(await self._redis.get(self._waits_key(job_id)) or 0)

    async def waited(self, job_id: str, wait_s: float) -> int:
        """Record that `job_id` goes back to the queue for `wait_s` to wait for GitHub's
        rate limit; returns how many times it has waited, this one included.

        A wait is not a try: arq counts every start of a job against `max_tries` (3), so
        a limit that stays low for more than two reset windows would fail the review.
        The start this wait ends is given back (arq's retry counter), and the job's data
        is kept for the wait plus arq's usual day (it expires a day after it was due)."""
        waits = self._waits_key(job_id)
        async with self._redis.pipeline(transaction=True) as pipe:
            pipe.incr(waits)
            pipe.expire(waits, WAITS_TTL_S)
            pipe.decr(retry_key_prefix + job_id)
            pipe.pexpire(job_key_prefix + job_id, int(wait_s * 1000) + expires_extra_ms)
            count, *_ = await pipe.execute()
        return int(count)

    def _waits_key(self, job_id: str) -> str:
        return f"{self._prefix}:github-waits:{job_id}"

    def _stop_key(self, job_id: str) -> str:
        return f"{self._prefix}:stop:{job_id}"
