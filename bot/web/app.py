"""The web process: the webhook receiver, health and readiness, Prometheus metrics, and the
drainer of deliveries kept while Redis was unavailable."""

from __future__ import annotations

import asyncio
import gc
from collections.abc import AsyncIterator, Callable
from contextlib import AbstractAsyncContextManager, asynccontextmanager
from typing import Any

from arq.connections import ArqRedis
from fastapi import FastAPI
from prometheus_client import CONTENT_TYPE_LATEST, REGISTRY, generate_latest
from redis.exceptions import RedisError
from starlette.responses import JSONResponse, Response
from starlette.routing import Route
from starlette.types import Receive, Scope, Send

from bot.metrics import QUEUE_JOBS, QUEUE_OLDEST_WAITING_SECONDS
from bot.queue.backlog import refresh_metrics
from bot.queue.redis import connect_redis
from bot.settings import MissingSettingError, Settings
from bot.store.db import Database
from bot.web.outbox import draining
from bot.web.transcripts import add_transcript_pages
from bot.web.webhook import WebhookReceiver

WEBHOOK_PATH = "/webhooks/github"
READY_TIMEOUT_S = 1.0


def create_app(settings: Settings, *, redis: ArqRedis | None = None) -> FastAPI:
    """The app; opens its own arq Redis pool at start-up unless `redis` is given (tests),
    and the database (`DATABASE_URL`), migrated to head, where deliveries are kept."""
    if settings.github_webhook_secret is None:
        raise MissingSettingError("missing required setting: GITHUB_WEBHOOK_SECRET")
    receiver = WebhookReceiver(settings, settings.github_webhook_secret.get_secret_value())
    app = _App(
        receiver,
        title="PR Council",
        lifespan=_lifespan(settings, receiver, redis),
        docs_url=None,
        redoc_url=None,
        openapi_url=None,
    )
    # A bare ASGI route: the receiver reads the raw body itself (the signature covers the
    # exact bytes). `_App` hands it its POSTs directly; the route answers the other methods
    # (405) and lists the path.
    app.router.routes.append(Route(WEBHOOK_PATH, receiver, methods=["POST"]))

    # The transcript and stats pages, behind GitHub login (bot/web/transcripts.py).
    add_transcript_pages(app, settings, receiver)
    _add_probes(app, settings, receiver)
    return app


def _lifespan(
    settings: Settings, receiver: WebhookReceiver, redis: ArqRedis | None
) -> Callable[[FastAPI], AbstractAsyncContextManager[None]]:
    """The app's start and stop: the Redis pool (`redis`, else its own) and the database,
    handed to the receiver while the app runs."""

    @asynccontextmanager
    async def lifespan(_: FastAPI) -> AsyncIterator[None]:
        # Not pinged: the receiver starts, and keeps deliveries, while Redis is away.
        pool = redis or await connect_redis(settings, ping=False)
        try:
            # As the worker does: the schema at head before the first delivery is kept.
            async with (
                Database(settings.database_url) as database,
                draining(pool, database, settings),
            ):
                receiver.redis, receiver.db = pool, database
                # Everything alive now (modules, models, schemas: ~80,000 objects) lives as
                # long as the process; freezing it keeps full garbage collections (~40 ms
                # each, paid by whichever delivery triggers one) from walking it again and
                # again.
                gc.collect()
                gc.freeze()
                try:
                    yield
                finally:
                    receiver.redis, receiver.db = None, None
        finally:
            if redis is None:
                await pool.aclose()

    return lifespan


def _add_probes(app: FastAPI, settings: Settings, receiver: WebhookReceiver) -> None:
    """/healthz, /readyz and /metrics."""

    @app.get("/healthz")
    async def healthz() -> JSONResponse:
        return JSONResponse({"status": "ok"})

    @app.get("/readyz")
    async def readyz() -> JSONResponse:
        if receiver.redis is not None and await _answers(receiver.redis):
            return JSONResponse({"status": "ready"})
        # Without Redis the receiver still takes deliveries: it keeps them in the database
        # and enqueues them when Redis is back. Unready only when it could do neither.
        if receiver.db is not None and await _db_answers(receiver.db):
            return JSONResponse(
                {"status": "degraded", "detail": "redis unavailable; deliveries are kept"}
            )
        return JSONResponse(
            {"status": "unavailable", "detail": "redis and the database"}, status_code=503
        )

    @app.get("/metrics")
    async def metrics() -> Response:
        await _measure_backlog(receiver.redis, settings.queue_name)
        return Response(generate_latest(REGISTRY), media_type=CONTENT_TYPE_LATEST)


class _App(FastAPI):
    """FastAPI, except that a webhook delivery skips the middleware stack and the router:
    the receiver is a bare ASGI app that handles its own errors, and every layer costs a
    delivery time (GitHub's deliveries are most of this app's traffic)."""

    def __init__(self, receiver: WebhookReceiver, **options: Any) -> None:
        super().__init__(**options)
        self._receiver = receiver

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        if (
            scope["type"] == "http"
            and scope["path"] == WEBHOOK_PATH
            and scope["method"] == "POST"
            and not scope.get("root_path")
        ):
            await self._receiver(scope, receive, send)
            return
        await super().__call__(scope, receive, send)


async def _measure_backlog(redis: ArqRedis | None, queue_name: str) -> None:
    """The queue's gauges as Redis has them now; absent (not stale) when Redis does not
    answer within `READY_TIMEOUT_S`."""
    try:
        if redis is None:
            raise ConnectionError("no Redis pool")
        async with asyncio.timeout(READY_TIMEOUT_S):
            await refresh_metrics(redis, queue_name)
    except (RedisError, OSError, TimeoutError):
        QUEUE_JOBS.clear()
        QUEUE_OLDEST_WAITING_SECONDS.clear()


async def _db_answers(database: Database) -> bool:
    try:
        async with asyncio.timeout(READY_TIMEOUT_S):
            return await database.answers()
    except TimeoutError:
        return False


async def _answers(redis: ArqRedis) -> bool:
    try:
        async with asyncio.timeout(READY_TIMEOUT_S):
            return bool(await redis.ping())
    except (RedisError, OSError, TimeoutError):
        return False
