"""What the bot.github tests share: a simple seeded repository and a GitHubApp on real Redis
with its own key prefix (removed afterwards)."""

from __future__ import annotations

import uuid
from collections.abc import AsyncIterator
from contextlib import asynccontextmanager

from redis.asyncio import Redis

from bot.github.client import GitHubApp
from bot.github.retry import RetryPolicy
from bot.settings import Settings
from tests.support.github_server import (
    APP_ID,
    INSTALLATION_ID,
    REPO,
    FakeGitHub,
    app_keypair,
    install_app,
)

DIFF = "diff --git a/a.py b/a.py\n--- a/a.py\n+++ b/a.py\n@@ -1 +1 @@\n-x = 1\n+x = 2\n"


def seed_simple(server: FakeGitHub, head: str) -> FakeGitHub:
    """The App installed on REPO, with PR #1 changing a.py."""
    server.reset()
    install_app(server)
    server.add_repo(REPO, installation_id=INSTALLATION_ID, files={"a.py": "x = 1\n"})
    server.add_pull(
        REPO, 1, title="t", body="b", head_sha=head, diff=DIFF, files_at_head={"a.py": "x = 2\n"}
    )
    return server


@asynccontextmanager
async def github_app(
    fake: FakeGitHub, *, retry: RetryPolicy | None = None
) -> AsyncIterator[GitHubApp]:
    redis = Redis.from_url("redis://127.0.0.1:6379/0")
    prefix = f"test:github:{uuid.uuid4().hex}"
    settings = Settings(
        github_app_id=APP_ID,
        github_private_key=app_keypair()[0],
        github_api_url=fake.url,
        content_pacing_s=0,
    )
    try:
        yield GitHubApp(settings, redis, key_prefix=prefix, retry=retry)
    finally:
        keys = [k async for k in redis.scan_iter(match=f"{prefix}:*", count=10_000)]
        if keys:
            await redis.delete(*keys)
        await redis.aclose()
