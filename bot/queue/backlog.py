"""How far behind the workers are: the queue's depth and the age of its oldest waiting job,
the two numbers an operator scales workers by.

arq keeps a job in its queue (a sorted set scored by the time it is due, in ms) from
enqueue until it ends, with an `arq:in-progress:<id>` key while a worker runs it. One Lua
script reads it all in one round trip: due and deferred counts, and the due jobs oldest
first until the first that no worker has (workers take due jobs oldest first, so those
running are nearly always the head of the queue, and the walk is about as long as the
number of running jobs; it stops at `WALK_LIMIT` regardless).
"""

from __future__ import annotations

import hashlib
from dataclasses import dataclass
from typing import Any

from arq.connections import ArqRedis
from arq.constants import in_progress_key_prefix
from arq.utils import timestamp_ms
from redis.exceptions import NoScriptError

from bot.metrics import QUEUE_JOBS, QUEUE_OLDEST_WAITING_SECONDS

# Due jobs looked at, oldest first, for the first one not running.
WALK_LIMIT = 1000

# KEYS: the queue. ARGV: now (ms), the in-progress key prefix, the walk limit.
# Returns {due, deferred, running seen before the first waiting job, its score or -1}.
_BACKLOG_LUA = """
local now = tonumber(ARGV[1])
local due = redis.call('ZCOUNT', KEYS[1], '-inf', now)
local deferred = redis.call('ZCARD', KEYS[1]) - due
local running = 0
local oldest = -1
local limit = math.min(due, tonumber(ARGV[3]))
local offset = 0
while offset < limit do
  local page = redis.call('ZRANGEBYSCORE', KEYS[1], '-inf', now, 'WITHSCORES', 'LIMIT', offset, 100)
  if #page == 0 then
    break
  end
  for i = 1, #page, 2 do
    if redis.call('EXISTS', ARGV[2] .. page[i]) == 1 then
      running = running + 1
    else
      oldest = page[i + 1]
      break
    end
  end
  if oldest ~= -1 then
    break
  end
  offset = offset + 100
end
return {due, deferred, running, tostring(oldest)}
"""
_BACKLOG_SHA = hashlib.sha1(_BACKLOG_LUA.encode()).hexdigest()


@dataclass(frozen=True)
class Backlog:
    waiting: int  # due, and no worker has it
    running: int  # due, and a worker runs it
    deferred: int  # due later (a retry's or a publication's backoff)
    oldest_waiting_s: float  # 0.0 when nothing waits


async def measure(redis: ArqRedis, queue_name: str) -> Backlog:
    now_ms = timestamp_ms()
    args: tuple[Any, ...] = (1, queue_name, now_ms, in_progress_key_prefix, WALK_LIMIT)
    try:
        raw = await redis.execute_command("EVALSHA", _BACKLOG_SHA, *args)  # type: ignore[no-untyped-call]
    except NoScriptError:
        raw = await redis.execute_command("EVAL", _BACKLOG_LUA, *args)  # type: ignore[no-untyped-call]
    due, deferred, running, oldest = int(raw[0]), int(raw[1]), int(raw[2]), float(raw[3])
    return Backlog(
        waiting=due - running,
        running=running,
        deferred=deferred,
        oldest_waiting_s=max(0.0, (now_ms - oldest) / 1000) if oldest >= 0 else 0.0,
    )


async def refresh_metrics(redis: ArqRedis, queue_name: str) -> Backlog:
    """Measure the queue and set `QUEUE_JOBS` and `QUEUE_OLDEST_WAITING_SECONDS`."""
    backlog = await measure(redis, queue_name)
    QUEUE_JOBS.labels(queue_name, "waiting").set(backlog.waiting)
    QUEUE_JOBS.labels(queue_name, "running").set(backlog.running)
    QUEUE_JOBS.labels(queue_name, "deferred").set(backlog.deferred)
    QUEUE_OLDEST_WAITING_SECONDS.labels(queue_name).set(backlog.oldest_waiting_s)
    return backlog
