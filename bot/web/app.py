"""The web process: the webhook receiver, health and readiness, Prometheus metrics, and the
drainer of deliveries kept while Redis was unavailable."""

from __future__ import annotations

import asyncio
import gc
from collections.abc import AsyncIterator
from contextlib import asynccontextmanager

from arq.connections import ArqRedis
from fastapi import FastAPI
from prometheus_client import CONTENT_TYPE_LATEST, REGISTRY, generate_latest
from redis.exceptions import RedisError
from starlette.responses import JSONResponse, Response

from bot.queue.redis import connect_redis
from bot.settings import MissingSettingError, Settings
from bot.store.db import Database
from bot.web.outbox import draining
from bot.web.webhook import WebhookReceiver

WEBHOOK_PATH = "/webhooks/github"
READY_TIMEOUT_S = 1.0


def create_app(settings: Settings, *, redis: ArqRedis | None = None) -> FastAPI:
    """The app; opens its own arq Redis pool at start-up unless `redis` is given (tests),
    and the database (`DATABASE_URL`), migrated to head, where deliveries are kept."""
    if settings.github_webhook_secret is None:
        raise MissingSettingError("missing required setting: GITHUB_WEBHOOK_SECRET")
    receiver = WebhookReceiver(settings, settings.github_webhook_secret.get_secret_value())

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

    app = FastAPI(
        title="PR Council", lifespan=lifespan, docs_url=None, redoc_url=None, openapi_url=None
    )
    # A plain Starlette route: the receiver reads the raw body itself (the signature covers
    # the exact bytes), so FastAPI's parameter machinery would only add cost.
    app.add_route(WEBHOOK_PATH, receiver.handle, methods=["POST"])

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
        return Response(generate_latest(REGISTRY), media_type=CONTENT_TYPE_LATEST)

    return app


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
