"""The receiver while Redis is frozen or gone: GitHub gets its answer in time, the delivery
is kept in the database, and once Redis is back it is enqueued, exactly once.

Each test starts its own `redis-server` on a free port; the Redis the other tests share is
never touched. No worker runs: the queue is read in Redis directly.
"""

from __future__ import annotations

import asyncio
import signal
import sqlite3
import subprocess
import time
import uuid
from collections.abc import Awaitable, Callable, Iterator, Mapping, Sequence
from contextlib import closing, contextmanager
from pathlib import Path
from typing import Any

import httpx
from structlog.testing import capture_logs

from bot.store import Database
from bot.store.pending import PendingDelivery, oldest_pending
from tests.service.test_fault import free_port
from tests.support.github_server import FakeGitHub, app_keypair
from tests.support.model_server import FakeModelServer
from tests.support.service import App, app_settings, comment_event, running_app
from tests.support.webhooks import queued_jobs

KEYS = app_keypair()
GITHUB_TIMEOUT_S = 10.0
INTERVAL_S = 0.2  # the drainer's tick here (5 s by default)


class OwnRedis:
    """A redis-server of this test's own, without persistence: a restart loses its data."""

    def __init__(self) -> None:
        self.port = free_port()
        self.process: subprocess.Popen[bytes] | None = None

    @property
    def url(self) -> str:
        return f"redis://127.0.0.1:{self.port}/0"

    def start(self) -> None:
        self.process = subprocess.Popen(
            [
                *("redis-server", "--port", str(self.port), "--bind", "127.0.0.1"),
                *("--save", "", "--appendonly", "no", "--daemonize", "no"),
            ],
            stdout=subprocess.DEVNULL,
            stderr=subprocess.DEVNULL,
        )
        deadline = time.monotonic() + 10
        while time.monotonic() < deadline:
            done = subprocess.run(
                ["redis-cli", "-p", str(self.port), "ping"], capture_output=True, text=True
            )
            if done.stdout.strip() == "PONG":
                return
            time.sleep(0.05)
        raise AssertionError("redis-server did not start")

    def signal(self, number: signal.Signals) -> None:
        assert self.process is not None
        self.process.send_signal(number)

    def kill(self) -> None:
        if self.process is not None:
            self.process.send_signal(signal.SIGCONT)  # a stopped process dies only once resumed
            self.process.kill()
            self.process.wait(timeout=10)
            self.process = None


@contextmanager
def own_redis() -> Iterator[OwnRedis]:
    redis = OwnRedis()
    redis.start()
    try:
        yield redis
    finally:
        redis.kill()


async def until(check: Callable[[], Awaitable[Any]], *, timeout: float, what: str) -> Any:
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        value = await check()
        if value:
            return value
        await asyncio.sleep(0.05)
    raise AssertionError(f"timed out waiting for {what}")


async def kept(app: App) -> list[PendingDelivery]:
    async with Database(app.settings.database_url) as db:
        return await oldest_pending(db, 100)


def new_comment() -> dict[str, Any]:
    return comment_event("/council", comment_id=int(uuid.uuid4().int % 10**12))


async def deliver_comment(
    app: App, delivery: str, event: dict[str, Any] | None = None
) -> tuple[httpx.Response, float]:
    """A signed `/council` comment; its answer and how long it took."""
    event = event or new_comment()
    started = time.monotonic()
    response = await app.deliver("issue_comment", event, delivery=delivery)
    return response, time.monotonic() - started


async def queued_once(app: App, expected: dict[str, str]) -> None:
    """Waits for the queue to hold the `expected` jobs (job id -> delivery id), each once,
    and nothing else, for a few more drainer ticks too."""

    async def deliveries() -> dict[str, str]:
        queued = await queued_jobs(app.redis, app.settings)
        assert {function for function, _ in queued.values()} <= {"deliberate"}
        return {job: request.delivery_id for job, (_, request) in queued.items()}

    async def arrived() -> bool:
        return len(await deliveries()) == len(expected)

    await until(arrived, timeout=10 * INTERVAL_S + 5, what="the kept delivery to be enqueued")
    await asyncio.sleep(5 * INTERVAL_S)
    assert await deliveries() == expected
    assert await app.redis.zcard(app.settings.queue_name) == len(expected)


def late_enqueues(logs: Sequence[Mapping[str, Any]], delivery: str) -> list[Mapping[str, Any]]:
    return [
        entry
        for entry in logs
        if entry["event"] == "delivery_enqueued_late" and entry["delivery_id"] == delivery
    ]


async def test_a_delivery_while_redis_is_frozen_is_answered_in_time_and_enqueued_once_it_thaws(
    tmp_path: Path, models: FakeModelServer, fake_github: FakeGitHub
) -> None:
    delivery = str(uuid.uuid4())
    with own_redis() as redis, capture_logs() as logs:
        settings = app_settings(
            tmp_path, models, fake_github, KEYS[0], redis_url=redis.url, outbox_interval_s=0.2
        )
        async with running_app(settings, worker=False) as app:
            # One delivery while Redis answers, which also loads the enqueue script: the
            # enqueue that times out below then reaches Redis, and runs when it thaws.
            earlier = str(uuid.uuid4())
            before, _ = await deliver_comment(app, earlier)
            assert before.json()["status"] == "queued"
            redis.signal(signal.SIGSTOP)
            try:
                response, answered_in = await deliver_comment(app, delivery)
                while_frozen = await kept(app)
            finally:
                redis.signal(signal.SIGCONT)
            print(f"answered in {answered_in:.2f} s while Redis was frozen")

            assert answered_in < GITHUB_TIMEOUT_S
            assert response.status_code == 202, response.text
            assert response.json()["status"] == "kept"
            job = response.json()["job_id"]
            assert [(k.delivery_id, k.job_id) for k in while_frozen] == [(delivery, job)]

            await queued_once(app, {before.json()["job_id"]: earlier, job: delivery})
            assert await kept(app) == []
    (late,) = late_enqueues(logs, delivery)
    assert late["job_id"] == job
    assert late["waited_s"] >= answered_in - 1  # from its arrival, not from being kept
    # The enqueue that timed out reached Redis, which ran it on thawing: the drainer's then
    # finds the delivery known. One job either way.
    print(f"enqueued late after {late['waited_s']} s: {late['outcome']}")


async def test_a_delivery_while_redis_is_gone_is_kept_and_enqueued_by_the_new_one(
    tmp_path: Path, models: FakeModelServer, fake_github: FakeGitHub
) -> None:
    delivery = str(uuid.uuid4())
    with own_redis() as redis, capture_logs() as logs:
        settings = app_settings(
            tmp_path, models, fake_github, KEYS[0], redis_url=redis.url, outbox_interval_s=0.2
        )
        async with running_app(settings, worker=False) as app:
            redis.kill()
            event = new_comment()
            response, answered_in = await deliver_comment(app, delivery, event)
            # An operator redelivers it from GitHub while Redis is still down.
            again, _ = await deliver_comment(app, delivery, event)
            while_down = await kept(app)
            await asyncio.sleep(3 * INTERVAL_S)  # the drainer meets no Redis, and keeps it
            assert await kept(app) == while_down
            redis.start()  # the same port, none of the old data

            assert answered_in < GITHUB_TIMEOUT_S
            assert (response.status_code, response.json()["status"]) == (202, "kept")
            assert (again.status_code, again.json()["status"]) == (202, "kept")
            job = response.json()["job_id"]
            assert [(k.delivery_id, k.job_id) for k in while_down] == [(delivery, job)]

            await queued_once(app, {job: delivery})
            assert await kept(app) == []
    (late,) = late_enqueues(logs, delivery)
    assert late["outcome"] == "queued"


async def test_with_redis_gone_and_the_database_locked_the_answer_is_503_in_time(
    tmp_path: Path, models: FakeModelServer, fake_github: FakeGitHub
) -> None:
    """Nowhere to keep it: 503, so GitHub records a failed delivery an operator can
    redeliver; still in time, though SQLite would wait 30 s for its lock."""
    with own_redis() as redis:
        settings = app_settings(
            tmp_path, models, fake_github, KEYS[0], redis_url=redis.url, outbox_interval_s=0.2
        )
        async with running_app(settings, worker=False) as app:
            redis.kill()
            with closing(sqlite3.connect(tmp_path / "council.db", isolation_level=None)) as lock:
                lock.execute("BEGIN IMMEDIATE")  # another writer holds the database
                try:
                    response, answered_in = await deliver_comment(app, str(uuid.uuid4()))
                finally:
                    lock.execute("ROLLBACK")
            redis.start()
            assert await kept(app) == []

    print(f"answered 503 in {answered_in:.2f} s with the database locked")
    assert answered_in < GITHUB_TIMEOUT_S
    assert response.status_code == 503, response.text
    assert response.json()["status"] == "unavailable"
