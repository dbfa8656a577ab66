"""`council worker`: arq on Redis, running the jobs in bot/queue/jobs.py.

The job timeout covers the sum of the phase budgets (the longest protocol's sequential
calls, each with its re-asks, at the call deadline) plus GitHub work; aborts are allowed so
`/council cancel` and a newer push can stop a running deliberation.
"""

from __future__ import annotations

import asyncio
import time
from collections.abc import Awaitable, Callable
from contextlib import suppress
from typing import Any

import structlog
from arq.connections import ArqRedis, RedisSettings
from arq.cron import cron
from arq.worker import Retry, Worker, func
from prometheus_client import start_http_server
from redis.exceptions import RedisError

from bot.metrics import JOBS, JOBS_RUNNING, REDIS_DOWN
from bot.queue.control import cancel, reply_help
from bot.queue.deliberate import DeliberationJob
from bot.queue.deps import WorkerDeps
from bot.queue.jobs import JobFunction, JobRequest, job_timeout_s
from bot.queue.outcomes import record_closed, record_installation
from bot.queue.publishing import PUBLISH_JOB, publish_pending
from bot.queue.reconcile import reconcile
from bot.queue.redis import connect_redis
from bot.settings import Settings

log = structlog.get_logger(__name__)

MAX_POLL_BACKOFF_S = 5.0

JobHandler = Callable[[WorkerDeps, JobRequest], Awaitable[str]]


def _job(name: JobFunction, handler: JobHandler) -> Any:
    async def run(ctx: dict[str, Any], payload: dict[str, Any]) -> str:
        request = JobRequest.model_validate(payload)
        JOBS_RUNNING.inc()
        structlog.contextvars.bind_contextvars(
            delivery_id=request.delivery_id, repo=request.repo, pr=request.pr_number
        )
        try:
            result = await handler(ctx["deps"], request)
        except asyncio.CancelledError:
            JOBS.labels(name.value, "cancelled").inc()
            raise
        except Exception:
            JOBS.labels(name.value, "failed").inc()
            raise
        finally:
            JOBS_RUNNING.dec()
            structlog.contextvars.clear_contextvars()
        JOBS.labels(name.value, "done").inc()
        return result

    run.__name__ = name.value
    return func(run, name=name.value)


async def _deliberate(ctx: dict[str, Any], payload: dict[str, Any]) -> str:
    request = JobRequest.model_validate(payload)
    JOBS_RUNNING.inc()
    structlog.contextvars.bind_contextvars(
        delivery_id=request.delivery_id,
        repo=request.repo,
        pr=request.pr_number,
        job_id=ctx["job_id"],
    )
    state = "done"
    try:
        return await DeliberationJob(ctx["deps"], request, ctx["job_id"]).run()
    except asyncio.CancelledError:
        state = "cancelled"
        raise
    except Retry:  # back in the queue (GitHub's rate limit is low): it runs again
        state = "waiting"
        raise
    except Exception:
        state = "failed"
        raise
    finally:
        JOBS.labels(JobFunction.DELIBERATE.value, state).inc()
        JOBS_RUNNING.dec()
        structlog.contextvars.clear_contextvars()


def functions() -> list[Any]:
    return [
        func(_deliberate, name=JobFunction.DELIBERATE.value),
        _job(JobFunction.HELP, reply_help),
        _job(JobFunction.CANCEL, cancel),
        _job(JobFunction.OUTCOME, record_closed),
        _job(JobFunction.INSTALLATION, record_installation),
        func(publish_pending, name=PUBLISH_JOB),  # an advisory GitHub did not take, again
    ]


def build_worker(
    settings: Settings,
    *,
    redis: ArqRedis | None = None,
    burst: bool = False,
    poll_delay: float = 0.5,
    handle_signals: bool = True,
) -> Worker:
    async def startup(ctx: dict[str, Any]) -> None:
        ctx["deps"] = await WorkerDeps.start(settings, ctx["redis"])
        log.info("worker_started", queue=settings.queue_name, job_timeout_s=job_timeout_s(settings))

    async def shutdown(ctx: dict[str, Any]) -> None:
        deps: WorkerDeps | None = ctx.get("deps")
        if deps is not None:
            await deps.close()

    return ResilientWorker(
        functions(),
        queue_name=settings.queue_name,
        redis_settings=RedisSettings.from_dsn(settings.redis_url),
        redis_pool=redis,
        burst=burst,
        on_startup=startup,
        on_shutdown=shutdown,
        max_jobs=settings.max_jobs,
        job_timeout=job_timeout_s(settings),
        keep_result=settings.job_result_ttl_s,
        allow_abort_jobs=True,
        poll_delay=poll_delay,
        handle_signals=handle_signals and not burst,
        max_tries=3,
        # Every worker runs the reconciler's timer; arq lets one of them take each tick.
        cron_jobs=[
            cron(
                reconcile,
                # arq's job ids are global to a Redis: one name per deployment
                name=f"reconcile:{settings.key_prefix}",
                second=set(range(0, 60, settings.reconcile_interval_s)),
                unique=True,
                run_at_startup=True,
            )
        ],
    )


class ResilientWorker(Worker):
    """arq's worker, with a poll loop that outlives a Redis outage.

    arq 0.28 (pinned) lets any Redis error in its poll loop end the worker: a Redis restart
    took every running review down with it. Here a failed poll is logged and retried with a
    growing pause (at most `MAX_POLL_BACKOFF_S`); running jobs go on, and once Redis answers
    again the loop picks up where it was (jobs that lost their claim are resumed by the
    reconciler)."""

    _down_since: float | None = None

    async def _poll_iteration(self) -> None:
        try:
            await super()._poll_iteration()
        except (TimeoutError, RedisError, OSError) as error:
            now = time.monotonic()
            if self._down_since is None:
                self._down_since = now
                log.warning("redis_unavailable", error=type(error).__name__)
            REDIS_DOWN.set(1)
            await asyncio.sleep(min(MAX_POLL_BACKOFF_S, 0.5 + (now - self._down_since) / 4))
            return
        if self._down_since is not None:
            log.warning("redis_back", after_s=round(time.monotonic() - self._down_since, 1))
            self._down_since = None
            REDIS_DOWN.set(0)


def run_worker(settings: Settings) -> None:
    if settings.worker_metrics_port:
        start_http_server(settings.worker_metrics_port)
    asyncio.run(_serve(settings))


async def _serve(settings: Settings) -> None:
    worker = build_worker(settings, redis=await connect_redis(settings))
    try:
        # SIGTERM/SIGINT: arq's handler cancels its main task; that is a normal stop.
        with suppress(asyncio.CancelledError):
            await worker.async_run()
    finally:
        await worker.close()
