"""The GitHub client factory against the fake GitHub API and the real Redis.

App JWT and installation tokens (one token shared by every client on the same Redis), the
API-version header, retries on secondary rate limits and 5xx, pacing of content-creating
calls across processes, metrics, typed errors, and no secret in any message.
"""

from __future__ import annotations

import asyncio
import itertools
import time
import uuid
from collections.abc import AsyncIterator
from datetime import timedelta

import pytest
from prometheus_client import REGISTRY
from redis.asyncio import Redis

from bot.forge.errors import (
    ForgeAuthError,
    ForgeRateLimited,
    ForgeUnavailable,
    ForgeValidationError,
)
from bot.github.client import GitHubApp, RepoClient
from bot.github.fetch import fetch_pull
from bot.github.publish import CheckRunPublisher, reply
from bot.github.retry import Backoff, RetryPolicy
from bot.settings import MissingSettingError, Settings
from tests.support.github_app import seed_simple
from tests.support.github_server import (
    APP_ID,
    INSTALLATION_ID,
    REPO,
    FakeGitHub,
    app_keypair,
)

HEAD = "1234abcd" * 5
COMMENTS = rf"/repos/{REPO}/issues/1/comments"
TOKENS = rf"/app/installations/{INSTALLATION_ID}/access_tokens"


@pytest.fixture
def fake(fake_github: FakeGitHub) -> FakeGitHub:
    return seed_simple(fake_github, HEAD)


@pytest.fixture
async def redis() -> AsyncIterator[Redis]:
    client = Redis.from_url("redis://127.0.0.1:6379/0")
    yield client
    await client.aclose()


@pytest.fixture
async def prefix(redis: Redis) -> AsyncIterator[str]:
    """Redis keys of this test only (tokens, JWT, pacing slots), removed afterwards."""
    name = f"test:github:{uuid.uuid4().hex}"
    yield name
    keys = [key async for key in redis.scan_iter(match=f"{name}:*", count=10_000)]
    if keys:
        await redis.delete(*keys)


def settings_for(fake: FakeGitHub, **overrides: object) -> Settings:
    values: dict[str, object] = {
        "github_app_id": APP_ID,
        "github_private_key": app_keypair()[0],
        "github_api_url": fake.url,
        "content_pacing_s": 0.0,
        **overrides,
    }
    return Settings(**values)  # type: ignore[arg-type]


def counter(name: str, **labels: str) -> float:
    return REGISTRY.get_sample_value(name, labels) or 0.0


async def test_app_login_comes_from_get_app_once(
    fake: FakeGitHub, redis: Redis, prefix: str
) -> None:
    app = GitHubApp(settings_for(fake), redis, key_prefix=prefix)
    assert await app.app_login() == "council-test[bot]"
    assert await app.app_login() == "council-test[bot]"
    assert [(c.method, c.path, c.auth) for c in fake.calls] == [("GET", "/app", "app")]
    assert await app.installation_for("acme", "widgets") == INSTALLATION_ID


async def test_two_apps_on_one_redis_share_one_installation_token(
    fake: FakeGitHub, redis: Redis, prefix: str
) -> None:
    # Two workers: separate GitHubApp objects, the same Redis and key prefix.
    first = GitHubApp(settings_for(fake), redis, key_prefix=prefix)
    second = GitHubApp(settings_for(fake), redis, key_prefix=prefix)
    assert (await fetch_pull(first.for_installation(INSTALLATION_ID, REPO), 1)).head_sha == HEAD
    assert (await fetch_pull(second.for_installation(INSTALLATION_ID, REPO), 1)).head_sha == HEAD
    assert len(fake.calls_to("POST", TOKENS)) == 1
    assert [c.auth for c in fake.calls_to("GET")] == [f"installation:{INSTALLATION_ID}"] * 2
    assert [
        key async for key in redis.scan_iter(match=f"{prefix}:*installation:{INSTALLATION_ID}*")
    ]
    # Another prefix is another cache: it asks for a token of its own.
    other = GitHubApp(settings_for(fake), redis, key_prefix=prefix + ":other")
    await fetch_pull(other.for_installation(INSTALLATION_ID, REPO), 1)
    assert len(fake.calls_to("POST", TOKENS)) == 2
    await redis.delete(*[k async for k in redis.scan_iter(match=f"{prefix}:other:*", count=10_000)])


@pytest.mark.parametrize("version", ["2022-11-28", "2026-03-10"])
async def test_every_call_sends_the_configured_api_version(
    fake: FakeGitHub, redis: Redis, prefix: str, version: str
) -> None:
    app = GitHubApp(settings_for(fake, github_api_version=version), redis, key_prefix=prefix)
    await app.app_login()
    client = app.for_installation(INSTALLATION_ID, REPO)
    async with client:
        await fetch_pull(client, 1)
        await reply(client, 1, "hello")
    assert len(fake.calls) == 4  # /app, the token, the pull, the comment
    assert {c.api_version for c in fake.calls} == {version}


async def test_secondary_rate_limit_is_waited_out_and_counted(
    fake: FakeGitHub, redis: Redis, prefix: str, capsys: pytest.CaptureFixture[str]
) -> None:
    fake.rate_limit("POST", COMMENTS, retry_after=1)
    waits = counter("council_github_rate_limit_waits_total")
    seconds = counter("council_github_rate_limit_wait_seconds_total")
    limited = counter("council_github_api_calls_total", method="POST", status="403")
    client = GitHubApp(settings_for(fake), redis, key_prefix=prefix).for_installation(
        INSTALLATION_ID, REPO
    )
    started = time.monotonic()
    posted = await reply(client, 1, "the advisory")
    assert time.monotonic() - started >= 1.0  # retry-after honoured
    assert [c.status for c in fake.calls_to("POST", COMMENTS)] == [403, 201]
    assert [c.body for c in fake.comments(REPO, 1)] == ["the advisory"]
    assert posted.id == fake.comments(REPO, 1)[0].id
    assert counter("council_github_rate_limit_waits_total") == waits + 1
    assert counter("council_github_rate_limit_wait_seconds_total") == seconds + 1
    assert counter("council_github_api_calls_total", method="POST", status="403") == limited + 1
    logged = capsys.readouterr()
    assert "github_rate_limited" in logged.out + logged.err
    for token in fake._tokens:
        assert token not in logged.out + logged.err


async def test_a_rate_limit_too_long_to_wait_fails_typed_at_once(
    fake: FakeGitHub, redis: Redis, prefix: str
) -> None:
    fake.rate_limit("POST", COMMENTS, retry_after=3600)
    client = GitHubApp(settings_for(fake), redis, key_prefix=prefix).for_installation(
        INSTALLATION_ID, REPO
    )
    started = time.monotonic()
    with pytest.raises(ForgeRateLimited) as limited:
        await reply(client, 1, "x")
    assert time.monotonic() - started < 1.0
    assert limited.value.retry_after == timedelta(hours=1) and limited.value.status == 403
    assert "secondary rate limit" in str(limited.value)
    assert str(limited.value).startswith(f"POST /repos/{REPO}/issues/1/comments -> 403")


async def test_a_server_error_is_retried(fake: FakeGitHub, redis: Redis, prefix: str) -> None:
    fake.server_error("GET", rf"/repos/{REPO}/pulls/1", status=502)
    client = GitHubApp(settings_for(fake), redis, key_prefix=prefix).for_installation(
        INSTALLATION_ID, REPO
    )
    assert (await fetch_pull(client, 1)).number == 1
    assert [c.status for c in fake.calls_to("GET", rf"/repos/{REPO}/pulls/1")] == [502, 200]


def quick(budget_s: float = 5.0) -> RetryPolicy:
    """The real loop and clock with short waits (the schedule itself: test_github_retry)."""
    return RetryPolicy(Backoff(budget_s=budget_s, first_s=0.02, max_delay_s=0.1))


async def test_a_5xx_storm_past_the_budget_is_a_typed_error(
    fake: FakeGitHub, redis: Redis, prefix: str
) -> None:
    fake.server_error("POST", rf"/repos/{REPO}/check-runs", status=503, times=1000)
    app = GitHubApp(settings_for(fake), redis, key_prefix=prefix, retry=quick(budget_s=0.5))
    client = app.for_installation(INSTALLATION_ID, REPO)
    started = time.monotonic()
    with pytest.raises(ForgeUnavailable) as storm:
        await CheckRunPublisher(client, update_interval_s=0).create(
            HEAD, external_id="d-1", title="Council convening", summary="..."
        )
    assert time.monotonic() - started < 2.0
    assert storm.value.status == 503 and storm.value.action == "create the check run"
    assert len(fake.calls_to("POST", rf"/repos/{REPO}/check-runs")) > 3


async def test_a_5xx_while_minting_the_token_is_retried_inside_the_call(
    fake: FakeGitHub, redis: Redis, prefix: str
) -> None:
    fake.server_error("POST", TOKENS, status=502, times=2)
    client = GitHubApp(
        settings_for(fake), redis, key_prefix=prefix, retry=quick()
    ).for_installation(INSTALLATION_ID, REPO)
    assert (await fetch_pull(client, 1)).head_sha == HEAD
    assert [c.status for c in fake.calls_to("POST", TOKENS)] == [502, 502, 201]


async def test_a_revoked_token_is_replaced_once_for_every_worker(
    fake: FakeGitHub, redis: Redis, prefix: str
) -> None:
    first = GitHubApp(settings_for(fake), redis, key_prefix=prefix)
    second = GitHubApp(settings_for(fake), redis, key_prefix=prefix)  # another worker
    await fetch_pull(first.for_installation(INSTALLATION_ID, REPO), 1)
    fake.expire_tokens()  # revoked: GitHub answers 401 Bad credentials from now on
    fake.calls.clear()
    assert (await fetch_pull(first.for_installation(INSTALLATION_ID, REPO), 1)).head_sha == HEAD
    assert [(c.method, c.status) for c in fake.calls] == [("GET", 401), ("POST", 201), ("GET", 200)]
    # The new token is the shared one: the other worker uses it at once, no 401, no mint.
    fake.calls.clear()
    await fetch_pull(second.for_installation(INSTALLATION_ID, REPO), 1)
    assert [(c.method, c.status) for c in fake.calls] == [("GET", 200)]


async def test_a_second_401_is_an_error(fake: FakeGitHub, redis: Redis, prefix: str) -> None:
    bad = {"message": "Bad credentials", "documentation_url": "https://docs.github.com/rest"}
    fake.fail("GET", rf"/repos/{REPO}/pulls/1", status=401, body=bad, times=2)
    client = GitHubApp(settings_for(fake), redis, key_prefix=prefix).for_installation(
        INSTALLATION_ID, REPO
    )
    with pytest.raises(ForgeAuthError) as refused:
        await fetch_pull(client, 1)
    assert refused.value.status == 401 and "Bad credentials" in str(refused.value)
    pulls = fake.calls_to("GET", rf"/repos/{REPO}/pulls/1")
    assert [c.status for c in pulls] == [401, 401]
    assert len(fake.calls_to("POST", TOKENS)) == 2  # the first token, then one new one


async def test_an_over_long_comment_is_a_clear_typed_error(
    fake: FakeGitHub, redis: Redis, prefix: str
) -> None:
    client = GitHubApp(settings_for(fake), redis, key_prefix=prefix).for_installation(
        INSTALLATION_ID, REPO
    )
    with pytest.raises(ForgeValidationError) as refused:
        await reply(client, 1, "x" * 70_000)
    message = str(refused.value)
    assert refused.value.status == 422
    assert message == (
        f"POST /repos/{REPO}/issues/1/comments -> 422: Validation Failed: "
        "Body is too long (maximum is 65536 characters)"
    )
    assert fake.comments(REPO, 1) == []


def _gaps(fake: FakeGitHub, since: float) -> list[float]:
    times = sorted(c.time for c in fake.calls_to("POST", COMMENTS) if c.time >= since)
    return [later - earlier for earlier, later in itertools.pairwise(times)]


async def test_content_calls_are_paced(fake: FakeGitHub, redis: Redis, prefix: str) -> None:
    pacing = 0.2
    settings = settings_for(fake, content_pacing_s=pacing)
    workers = [GitHubApp(settings, redis, key_prefix=prefix) for _ in range(2)]
    one, two = (w.for_installation(INSTALLATION_ID, REPO) for w in workers)
    for client in (one, two):  # tokens first: a token request is not a content call
        await fetch_pull(client, 1)
    reads = [c.time for c in fake.calls_to("GET")]
    assert reads[1] - reads[0] < pacing  # reads are not paced

    # One process: its calls go one at a time, each `pacing` after the last one ended.
    started = time.monotonic()
    await asyncio.gather(*(reply(one, 1, f"together {n}") for n in range(3)))
    assert min(_gaps(fake, started)) >= pacing - 0.005, _gaps(fake, started)

    # Two processes taking turns: the slot in Redis spaces them too.
    started = time.monotonic()
    for n in range(4):
        await reply((one, two)[n % 2], 1, f"in turn {n}")
    assert min(_gaps(fake, started)) >= pacing - 0.005, _gaps(fake, started)

    # Two processes at once: slots keep their starts apart (less the time a request takes).
    started = time.monotonic()
    await asyncio.gather(*(reply((one, two)[n % 2], 1, f"at once {n}") for n in range(4)))
    assert sum(_gaps(fake, started)) >= 3 * pacing - 0.1, _gaps(fake, started)
    assert len(fake.comments(REPO, 1)) == 11


async def test_a_token_client_for_the_command_line(fake: FakeGitHub) -> None:
    fake.add_token("ghp_cli")
    client = RepoClient.from_token("ghp_cli", REPO, settings_for(fake))
    assert (await fetch_pull(client, 1)).title == "t"
    assert fake.calls[-1].auth == "token"
    wrong = RepoClient.from_token("ghp_wrong", REPO, settings_for(fake))
    with pytest.raises(ForgeAuthError) as refused:
        await fetch_pull(wrong, 1)
    assert refused.value.status == 401 and "Bad credentials" in str(refused.value)
    assert "ghp_wrong" not in str(refused.value) and "ghp_wrong" not in repr(wrong)


async def test_no_secret_in_reprs(fake: FakeGitHub, redis: Redis, prefix: str) -> None:
    private = app_keypair()[0]
    secret_line = private.splitlines()[1]
    app = GitHubApp(settings_for(fake), redis, key_prefix=prefix)
    installation = app.installation_client(INSTALLATION_ID)
    shown = [
        repr(app),
        repr(app.app_client().auth),
        repr(installation.auth),
        repr(installation.auth.get_auth_flow(installation)),
        repr(app.for_installation(INSTALLATION_ID, REPO)),
    ]
    assert all(secret_line not in text for text in shown), shown


def test_the_app_needs_its_id(fake: FakeGitHub) -> None:
    with pytest.raises(MissingSettingError, match="GITHUB_APP_ID"):
        GitHubApp(
            settings_for(fake, github_app_id=None), Redis.from_url("redis://127.0.0.1:6379/0")
        )
