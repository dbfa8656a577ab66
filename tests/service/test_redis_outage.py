"""Redis restarts in the middle of a review, with and without its data, at the settings a
user gets. The worker must keep running and the review must finish once Redis is back:
one comment, one completed check run, and no finished model call paid twice.

Each test starts its own `redis-server` on a free port; the Redis the other tests share is
never touched.
"""

from __future__ import annotations

import asyncio
import signal
import subprocess
import time
from collections import Counter
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path

import pytest

from tests.service.test_fault import free_port, start_worker
from tests.support.council_answers import CouncilScript
from tests.support.github_server import FakeGitHub, app_keypair
from tests.support.model_server import FakeModelServer
from tests.support.service import (
    AUTHOR,
    PR,
    REPO,
    app_settings,
    comment_event,
    eventually,
    running_app,
    seed_github,
)

KEYS = app_keypair()


class OwnRedis:
    """A redis-server of this test's own; `restart()` stops it and starts it again."""

    def __init__(self, directory: Path, *, keep_data: bool) -> None:
        self.port = free_port()
        self.directory = directory
        self.keep_data = keep_data
        self.process: subprocess.Popen[bytes] | None = None

    @property
    def url(self) -> str:
        return f"redis://127.0.0.1:{self.port}/0"

    def start(self) -> None:
        persistence = ["--appendonly", "yes", "--appendfsync", "always"] if self.keep_data else []
        self.process = subprocess.Popen(
            ["redis-server", "--port", str(self.port), "--bind", "127.0.0.1", "--save", ""]
            + (persistence or ["--appendonly", "no"])
            + ["--dir", str(self.directory)],
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

    def freeze(self) -> None:
        assert self.process is not None
        self.process.send_signal(signal.SIGSTOP)

    def thaw(self) -> None:
        assert self.process is not None
        self.process.send_signal(signal.SIGCONT)

    def stop(self) -> None:
        if self.process is not None:
            self.process.send_signal(signal.SIGKILL)
            self.process.wait(timeout=10)
            self.process = None


@contextmanager
def own_redis(directory: Path, *, keep_data: bool) -> Iterator[OwnRedis]:
    redis = OwnRedis(directory, keep_data=keep_data)
    redis.start()
    try:
        yield redis
    finally:
        redis.stop()


@pytest.mark.slow
@pytest.mark.parametrize("outage", ["restart, data lost", "restart, data kept", "15 s freeze"])
async def test_a_redis_outage_mid_review_does_not_lose_it(
    tmp_path: Path, models: FakeModelServer, fake_github: FakeGitHub, outage: str
) -> None:
    keep_data = outage == "restart, data kept"
    github = fake_github
    seed_github(github, KEYS[1])
    models.default(CouncilScript(latency_s=1.0, first_token_s=0.2).reply)
    data = tmp_path / "redis"
    data.mkdir()
    with own_redis(data, keep_data=keep_data) as redis:
        settings = app_settings(tmp_path, models, github, KEYS[0], redis_url=redis.url)
        log = tmp_path / "worker.log"
        async with running_app(settings, worker=False) as app:
            worker = start_worker(settings, log)
            try:
                comment_id = github.add_comment(REPO, PR, "/council", user=AUTHOR)
                await app.deliver("issue_comment", comment_event("/council", comment_id=comment_id))
                await eventually(
                    lambda: any(c.request.output_name == "submit_assessment" for c in models.calls),
                    timeout=60,
                    what="the assessments to start",
                )
                if outage == "15 s freeze":  # commands hang, then time out, until it thaws
                    redis.freeze()
                    await asyncio.sleep(15.0)
                    redis.thaw()
                else:
                    redis.stop()
                    await asyncio.sleep(2.0)  # calls in flight meet a Redis that is not there
                    redis.start()
                restarted_at = time.monotonic()
                await eventually(
                    lambda: [r for r in github.check_runs(REPO) if r.status == "completed"],
                    timeout=150,
                    what="the check run to complete after the restart",
                )
                finished_in = time.monotonic() - restarted_at
                assert worker.poll() is None, "the worker exited: " + log.read_text()[-2000:]
            finally:
                worker.terminate()
                worker.wait(timeout=20)
    (run,) = github.check_runs(REPO)
    assert run.conclusion == "success", (run.title, log.read_text()[-3000:])
    advisories = [c for c in github.comments(REPO, PR) if c.user == github.app_login]
    assert len(advisories) == 1
    answered = Counter(c.label for c in models.calls if c.status == 200 and c.done)
    assert answered["chair/submit_synthesis"] == 1
    print(f"redis {outage}: done {finished_in:.0f} s after Redis was back")
