"""Helpers for the receiver and enqueue tests: real payloads, signatures, Redis, uvicorn.

Isolation under pytest-xdist: each xdist worker uses its own Redis database, each test its
own queue name (delivery keys live under it), and payload ids that route into job ids are
made unique per test, because arq's job keys (`arq:job:<id>`) are not namespaced by queue.
"""

from __future__ import annotations

import asyncio
import contextlib
import copy
import hashlib
import hmac
import json
import os
import random
import tempfile
import uuid
from collections.abc import AsyncIterator
from pathlib import Path
from typing import Any

import uvicorn
from arq.connections import ArqRedis, RedisSettings, create_pool
from arq.constants import job_key_prefix, result_key_prefix
from arq.jobs import deserialize_job
from fastapi import FastAPI

from bot.queue.jobs import JobRequest
from bot.settings import Settings

# GitHub's own example payloads, kept in the repository (tests/fixtures/github-webhooks/README.md).
FIXTURES = Path(__file__).resolve().parents[1] / "fixtures" / "github-webhooks"
SECRET = "test-webhook-secret"
# The web process keeps deliveries Redis would not take in its database: one SQLite file
# per app, in a directory removed when the test process ends (never the user's own store).
_DATABASES = tempfile.TemporaryDirectory(prefix="council-web-tests-")


def redis_url() -> str:
    worker = os.environ.get("PYTEST_XDIST_WORKER", "gw0")
    index = int(worker.removeprefix("gw")) if worker.startswith("gw") else 0
    return f"redis://127.0.0.1:6379/{1 + index % 15}"


def make_settings(**changes: Any) -> Settings:
    values: dict[str, Any] = {
        "github_webhook_secret": SECRET,
        "redis_url": redis_url(),
        "queue_name": f"arq:test:{uuid.uuid4().hex}",
        "database_url": f"sqlite+aiosqlite:///{_DATABASES.name}/{uuid.uuid4().hex}.db",
    }
    values.update(changes)
    return Settings(**values)


def load(event: str, name: str) -> dict[str, Any]:
    data: dict[str, Any] = json.loads((FIXTURES / event / name).read_text())
    return copy.deepcopy(data)


def unique_id() -> int:
    return random.randrange(10**11, 10**12)


def sign(body: bytes, secret: str = SECRET) -> str:
    return "sha256=" + hmac.new(secret.encode(), body, hashlib.sha256).hexdigest()


def headers(event: str, body: bytes, delivery_id: str | None = None) -> dict[str, str]:
    return {
        "X-GitHub-Event": event,
        "X-GitHub-Delivery": delivery_id or str(uuid.uuid4()),
        "X-Hub-Signature-256": sign(body),
        "Content-Type": "application/json",
    }


def pr_comment(body: str = "/council", **changes: Any) -> dict[str, Any]:
    """GitHub's issue_comment.created example, on a PR, with a unique comment id."""
    payload = load("issue_comment", "created.with-installation.payload.json")
    payload["issue"]["pull_request"] = {"url": "https://api.github.com/repos/x/y/pulls/1"}
    payload["comment"]["body"] = body
    payload["comment"]["id"] = unique_id()
    payload.update(changes)
    return payload


async def open_redis(settings: Settings) -> ArqRedis:
    return await create_pool(
        RedisSettings.from_dsn(settings.redis_url), default_queue_name=settings.queue_name
    )


async def queued_jobs(redis: ArqRedis, settings: Settings) -> dict[str, tuple[str, JobRequest]]:
    """job id -> (function name, request) for every job in the test's queue."""
    jobs: dict[str, tuple[str, JobRequest]] = {}
    for raw_id in await redis.zrange(settings.queue_name, 0, -1):
        identifier = raw_id.decode()
        data = await redis.get(job_key_prefix + identifier)
        assert data is not None, f"queue names {identifier} but its job key is missing"
        job = deserialize_job(data)
        assert job.kwargs == {}
        (argument,) = job.args
        jobs[identifier] = (job.function, JobRequest.model_validate(argument))
    return jobs


async def cleanup(redis: ArqRedis, settings: Settings) -> None:
    """Delete what a test wrote: its queue, its jobs and results, its delivery keys."""
    keys = [settings.queue_name]
    for raw_id in await redis.zrange(settings.queue_name, 0, -1):
        keys += [job_key_prefix + raw_id.decode(), result_key_prefix + raw_id.decode()]
    keys += [key async for key in redis.scan_iter(match=f"{settings.queue_name}:*")]
    await redis.delete(*keys)


@contextlib.asynccontextmanager
async def serve(app: FastAPI) -> AsyncIterator[str]:
    """Run `app` on uvicorn on a free port in this event loop; yields its base URL.

    uvicorn binds the port itself (port 0), as `council serve` does: a socket made here
    with protocol 0 would not get asyncio's TCP_NODELAY, and every response with a body
    would wait ~40 ms for a delayed ACK.
    """
    config = uvicorn.Config(
        app, host="127.0.0.1", port=0, log_level="warning", access_log=False, lifespan="on"
    )
    server = uvicorn.Server(config)
    task = asyncio.create_task(server.serve())
    try:
        while not server.started:
            if task.done():
                task.result()  # start-up failed: raise its error
            await asyncio.sleep(0.005)
        port = server.servers[0].sockets[0].getsockname()[1]
        yield f"http://127.0.0.1:{port}"
    finally:
        server.should_exit = True
        await task
