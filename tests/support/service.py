"""The App as it runs: uvicorn serving the receiver, an arq worker, real Redis, a SQLite
store, and the two fakes (GitHub and the model APIs) on real ports."""

from __future__ import annotations

import asyncio
import copy
import hashlib
import hmac
import inspect
import json
import time
import uuid
from collections.abc import AsyncIterator, Callable
from contextlib import asynccontextmanager
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import httpx
import uvicorn
from arq.connections import ArqRedis, RedisSettings, create_pool

from bot.queue.worker import build_worker
from bot.settings import Settings
from bot.web.app import create_app
from tests.support.diffs import AUTH_DIFF
from tests.support.github_server import FakeGitHub
from tests.support.model_server import FakeModelServer
from tests.support.webhooks import FIXTURES

SECRET = "service-test-secret"
APP_ID = 4242
REPO = "Codertocat/Hello-World"
INSTALLATION = 1
PR = 2
HEAD = "ec26c3e57ca3a959ca5aad62de7213c562f8c821"
AUTHOR = "Codertocat"
DIFF = AUTH_DIFF
FILES = {
    "app/auth.py": 'def login(user, password):\n    if password == "admin":\n        return True\n'
    "    return check(user, password)\n",
    "README.md": "# Hello World\n",
}


def fixture(name: str) -> dict[str, Any]:
    data: dict[str, Any] = json.loads((FIXTURES / name).read_text())
    return data


def comment_event(
    body: str, *, comment_id: int, sender: str = AUTHOR, sender_type: str = "User"
) -> dict[str, Any]:
    payload = copy.deepcopy(fixture("issue_comment/created.with-installation.payload.json"))
    payload["issue"]["number"] = PR
    payload["issue"]["pull_request"] = {"url": f"https://api.github.com/repos/{REPO}/pulls/{PR}"}
    payload["comment"]["id"] = comment_id
    payload["comment"]["body"] = body
    payload["comment"]["user"]["login"] = sender
    payload["sender"]["login"] = sender
    payload["sender"]["type"] = sender_type
    payload["installation"] = {"id": INSTALLATION}
    return payload


def pull_request_event(
    action: str,
    *,
    label: str | None = None,
    sha: str = HEAD,
    draft: bool = False,
    merged: bool = False,
) -> dict[str, Any]:
    source = {
        "labeled": "labeled.payload.json",
        "closed": "closed.payload.json",
        "synchronize": "synchronize.payload.json",
    }.get(action, "opened.payload.json")
    payload = copy.deepcopy(fixture(f"pull_request/{source}"))
    payload["action"] = action
    payload["pull_request"]["head"]["sha"] = sha
    payload["pull_request"]["draft"] = draft
    payload["pull_request"]["merged"] = merged
    payload["installation"] = {"id": INSTALLATION}
    if label is not None:
        payload["label"] = {"name": label, "id": 1, "color": "ffffff"}
    return payload


def check_run_event(
    action: str, check_run_id: int, *, identifier: str | None = None, sha: str = HEAD
) -> dict[str, Any]:
    payload = copy.deepcopy(fixture("check_run/rerequested.payload.json"))
    payload["action"] = action
    payload["check_run"]["id"] = check_run_id
    payload["check_run"]["name"] = "Council"
    payload["check_run"]["head_sha"] = sha
    payload["check_run"]["pull_requests"] = []  # as for fork PRs: we find ours by id
    payload["repository"]["full_name"] = REPO
    payload["repository"]["name"] = REPO.split("/")[1]
    payload["repository"]["owner"]["login"] = REPO.split("/")[0]
    payload["installation"] = {"id": INSTALLATION}
    if identifier is not None:
        payload["requested_action"] = {"identifier": identifier}
    return payload


def unique_sha() -> str:
    """Job ids of label and push triggers include the head SHA; tests share one Redis."""
    return uuid.uuid4().hex + uuid.uuid4().hex[:8]


def seed_github(
    gh: FakeGitHub,
    public_pem: str,
    *,
    fork: bool = False,
    labels: tuple[str, ...] = (),
    draft: bool = False,
    head: str = HEAD,
) -> None:
    gh.reset()
    gh.set_app_key(APP_ID, public_pem)
    gh.add_installation(INSTALLATION, REPO.split("/")[0])
    gh.add_repo(REPO, installation_id=INSTALLATION, files=dict(FILES))
    if fork:
        gh.add_repo("forker/Hello-World", installation_id=None, files=dict(FILES), fork=True)
    gh.add_pull(
        REPO,
        PR,
        title="Fix login",
        body="Makes login faster.",
        head_sha=head,
        diff=DIFF,
        files_at_head=dict(FILES),
        labels=labels,
        draft=draft,
        user=AUTHOR,
        head_repo="forker/Hello-World" if fork else None,
        commits=("Fix login",),
    )
    gh.set_permission(REPO, AUTHOR, "admin")


def sign(body: bytes, secret: str = SECRET) -> str:
    return "sha256=" + hmac.new(secret.encode(), body, hashlib.sha256).hexdigest()


@dataclass
class App:
    settings: Settings
    redis: ArqRedis
    url: str
    http: httpx.AsyncClient

    async def deliver(
        self,
        event: str,
        payload: dict[str, Any] | bytes,
        *,
        delivery: str | None = None,
        secret: str = SECRET,
    ) -> httpx.Response:
        body = payload if isinstance(payload, bytes) else json.dumps(payload).encode()
        headers = {
            "X-GitHub-Event": event,
            "X-GitHub-Delivery": delivery or str(uuid.uuid4()),
            "X-Hub-Signature-256": sign(body, secret),
            "Content-Type": "application/json",
        }
        return await self.http.post(f"{self.url}/webhooks/github", content=body, headers=headers)


def app_settings(
    tmp: Path, models: FakeModelServer, gh: FakeGitHub, private_pem: str, /, **overrides: Any
) -> Settings:
    tag = uuid.uuid4().hex[:10]
    values: dict[str, Any] = {
        "anthropic_api_key": "test-key",
        "anthropic_base_url": models.anthropic_url,
        "openai_api_key": "test-key",
        "openai_base_url": models.openai_url,
        "models": ["anthropic:claude-sonnet-5-5", "openai:gpt-5.4"],
        "github_app_id": APP_ID,
        "github_private_key": private_pem,
        "github_webhook_secret": SECRET,
        "github_api_url": gh.url,
        "redis_url": "redis://127.0.0.1:6379/0",
        "database_url": f"sqlite+aiosqlite:///{tmp / 'council.db'}",
        "queue_name": f"test:queue:{tag}",
        "key_prefix": f"test:{tag}",
        "check_update_interval_s": 0.0,
        "content_pacing_s": 0.0,
        "max_retries": 0,
        "call_deadline_s": 10.0,
        "worker_metrics_port": 0,
        "job_result_ttl_s": 2,
        "permission_reply_interval_s": 3600,
    }
    values.update(overrides)
    return Settings(_env_file=None, **values)


@asynccontextmanager
async def running_app(
    settings: Settings, *, worker: bool = True, port: int = 0
) -> AsyncIterator[App]:
    redis = await create_pool(
        RedisSettings.from_dsn(settings.redis_url), default_queue_name=settings.queue_name
    )
    server = uvicorn.Server(
        uvicorn.Config(
            create_app(settings, redis=redis),
            host="127.0.0.1",
            port=port,
            log_level="warning",
            lifespan="on",
        )
    )
    serving = asyncio.create_task(server.serve())
    while not server.started:
        await asyncio.sleep(0.01)
    port = server.servers[0].sockets[0].getsockname()[1]
    arq_worker = build_worker(settings, redis=redis, poll_delay=0.05, handle_signals=False)
    working = asyncio.create_task(arq_worker.async_run()) if worker else None
    async with httpx.AsyncClient(timeout=30) as http:
        try:
            yield App(settings, redis, f"http://127.0.0.1:{port}", http)
        finally:
            if working is not None:
                # Let jobs finish their bookkeeping (a test may stop watching once the check
                # run completes); a job still running after that is cut off as at shutdown.
                for _ in range(300):
                    if not any(not t.done() for t in arq_worker.tasks.values()):
                        break
                    await asyncio.sleep(0.05)
                working.cancel()
                await asyncio.gather(working, return_exceptions=True)
                await asyncio.gather(arq_worker.close(), return_exceptions=True)
            server.should_exit = True
            await serving
            await redis.aclose()


async def eventually(
    check: Callable[[], Any], *, timeout: float = 30.0, what: str = "condition"
) -> Any:
    """Wait for the worker to get there; the receiver answers long before it does. `check`
    may be a coroutine function."""
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        value = check()
        if inspect.isawaitable(value):
            value = await value
        if value:
            return value
        await asyncio.sleep(0.05)
    raise AssertionError(f"timed out waiting for {what}")


async def drained(app: App) -> None:
    """Wait until the queue is empty and no job is in progress (the reconciler's timer, a
    job every few seconds, is not work a test waits for)."""

    async def idle() -> bool:
        # arq keeps a running job in its queue until it finishes, so the queue alone says
        # both; its in-progress keys are global to the Redis that tests beside this one share.
        return not [
            j
            for j in await app.redis.zrange(app.settings.queue_name, 0, -1)
            if b"reconcile" not in j
        ]

    await eventually(idle, timeout=30.0, what="the queue to drain")


def app_replies(gh: FakeGitHub, repo: str = REPO, pr: int = PR) -> list[Any]:
    """The App's comments on the pull request other than the advisory (refusals, help)."""
    return [
        c
        for c in gh.comments(repo, pr)
        if c.user == gh.app_login and "<!-- pr-council:advisory -->" not in c.body
    ]


def completed(gh: FakeGitHub, repo: str = REPO) -> list[Any]:
    """The check runs on the repository that have completed."""
    return [c for c in gh.check_runs(repo) if c.status == "completed"]
