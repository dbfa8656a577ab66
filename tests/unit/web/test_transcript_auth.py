"""The transcript pages' login and access rules, on the routes themselves (httpx through
ASGI, a SQLite store, GitHub's side stubbed): state mismatch, open redirects, forged and
expired sessions, the same 404 for unknown, not-installed and unreadable, the headers."""

from __future__ import annotations

import time
from collections.abc import AsyncIterator
from pathlib import Path
from types import SimpleNamespace
from typing import Any, cast
from urllib.parse import parse_qs, urlsplit

import httpx
import pytest
from fastapi import FastAPI
from redis.asyncio import Redis

from bot.settings import Settings
from bot.store.db import Database
from bot.store.deliberations import create_deliberation
from bot.web import auth, transcripts
from bot.web.auth import (
    SESSION_COOKIE,
    STATE_COOKIE,
    Signer,
    oauth_config,
    safe_next,
    session_cookie,
    session_in,
)
from bot.web.forge import AccessUnknown
from bot.web.sessions import SessionStore
from bot.web.transcripts import add_transcript_pages
from tests.support.webhooks import redis_url

KEY = "unit-test-session-key-0123456789abcdef"
BASE = "http://council.test"
REPO = "acme/widgets"
PREFIX = "test:web-auth"  # the sessions' Redis keys: PREFIX:session:*


class Readers:
    """GitHub's answers, scripted: repos the App is installed on, who reads which."""

    def __init__(self) -> None:
        self.installed: set[str] = {REPO, "acme/other"}
        self.readers: dict[str, set[str]] = {REPO: {"reader"}, "acme/other": {"reader"}}
        self.down = False
        self.asked: list[tuple[str, str]] = []

    async def can_read(self, repo: str, login: str) -> bool:
        self.asked.append((repo, login))
        if self.down:
            raise AccessUnknown("GitHub is down")
        return repo in self.installed and login in self.readers.get(repo, set())

    async def readable(self, repos: Any, login: str) -> list[str]:
        return [r for r in sorted(set(repos)) if await self.can_read(r, login)]


def settings(**overrides: Any) -> Settings:
    values: dict[str, Any] = {
        "github_app_id": 1,
        "github_private_key": "unused",
        "github_webhook_secret": "x",
        "github_api_url": "https://api.github.com",
        "public_url": BASE,
        "oauth_client_id": "Iv1.unit",
        "oauth_client_secret": "unit-secret",
        "session_key": KEY,
        "key_prefix": PREFIX,
    }
    values.update(overrides)
    return Settings(_env_file=None, **values)


@pytest.fixture
async def db(tmp_path: Path) -> AsyncIterator[Database]:
    async with Database(f"sqlite:///{tmp_path / 'council.db'}") as database:
        yield database


@pytest.fixture
def readers() -> Readers:
    return Readers()


@pytest.fixture
async def redis() -> AsyncIterator[Redis]:
    """Real Redis, where the pages keep their sessions; this test's are deleted after it."""
    client = Redis.from_url(redis_url())
    opened: set[bytes] = set(await client.keys(f"{PREFIX}:session:*"))
    try:
        yield client
    finally:
        made = set(await client.keys(f"{PREFIX}:session:*")) - opened
        if made:
            await client.delete(*made)
        await client.aclose()


def client_for(
    db: Database | None,
    readers: Readers | None,
    config: Settings | None = None,
    *,
    redis: Redis | None = None,
) -> httpx.AsyncClient:
    app = FastAPI()
    receiver = SimpleNamespace(db=db, redis=redis)
    pages = add_transcript_pages(app, config or settings(), cast(Any, receiver))
    pages._readers = cast(Any, readers)
    return httpx.AsyncClient(transport=httpx.ASGITransport(app=app), base_url=BASE)


async def deliberation(db: Database, repo: str = REPO) -> str:
    record = await create_deliberation(
        db,
        key=f"k-{repo}-{time.time_ns()}",
        repo=repo,
        pr_number=3,
        head_sha="ab" * 20,
        trigger="command",
        protocol="quick",
        topic="Review",
    )
    return record.id


async def session_for(redis: Redis, login: str) -> str:
    """A session cookie of `login`, its session open on the server as a login opens it."""
    config = oauth_config(settings())
    assert config is not None
    session_id = await SessionStore(redis, PREFIX).open(login, config.session_ttl_s)
    return session_cookie(config, login, session_id)


def signed(login: str, *, ttl: float = 3600, key: str = KEY, purpose: str = "session") -> str:
    """A cookie signed as `purpose` for a session the server never opened."""
    return Signer(key.encode()).dumps(purpose, {"login": login, "sid": "never-opened"}, ttl)


# -- signing ---------------------------------------------------------------------------------


def test_a_signed_value_comes_back_only_unchanged_unexpired_and_for_its_purpose() -> None:
    signer = Signer(KEY.encode())
    value = signer.dumps("session", {"login": "octocat"}, 60, now=1000)
    assert signer.loads("session", value, now=1059) == {"login": "octocat"}
    assert signer.loads("session", value, now=1060) is None  # expired
    assert signer.loads("state", value, now=1000) is None  # another purpose
    assert Signer(b"another-key-0123456789").loads("session", value, now=1000) is None
    payload, signature = value.split(".")
    forged = auth._b64(b'{"d":{"login":"admin"},"exp":99999999999,"p":"session"}')
    assert signer.loads("session", f"{forged}.{signature}", now=1000) is None
    assert signer.loads("session", f"{payload}.{signature[:-2]}AA", now=1000) is None
    for garbage in ("", "x", "a.b.c", "!!!.???", None):
        assert signer.loads("session", garbage) is None


def test_a_short_session_key_is_refused() -> None:
    with pytest.raises(ValueError, match="at least 16 bytes"):
        Signer(b"short")


@pytest.mark.parametrize(
    ("given", "kept"),
    [
        ("/deliberations/abc", "/deliberations/abc"),
        ("/stats?x=1", "/stats?x=1"),
        ("//evil.example/x", "/"),
        ("/\\evil.example", "/"),
        ("https://evil.example/", "/"),
        ("javascript:alert(1)", "/"),
        ("evil.example", "/"),
        ("/ok\r\nSet-Cookie: x=y", "/"),
        ("/a\\b", "/"),
        ("", "/"),
        (None, "/"),
    ],
)
def test_only_a_path_on_this_site_is_a_place_to_go_back_to(given: str | None, kept: str) -> None:
    assert safe_next(given) == kept


def test_github_s_site_is_found_from_its_api_url() -> None:
    assert auth.github_web_url("https://api.github.com") == "https://github.com"
    assert auth.github_web_url("https://ghe.example.com/api/v3/") == "https://ghe.example.com"
    assert auth.github_web_url("http://127.0.0.1:9999") == "http://127.0.0.1:9999"


# -- the login -------------------------------------------------------------------------------


async def test_login_sends_to_github_with_a_state_kept_in_a_signed_cookie(
    db: Database, readers: Readers
) -> None:
    async with client_for(db, readers) as http:
        response = await http.get("/login", params={"next": "/deliberations/x"})
    assert response.status_code == 302
    target = urlsplit(response.headers["location"])
    assert f"{target.scheme}://{target.netloc}{target.path}" == (
        "https://github.com/login/oauth/authorize"
    )
    query = parse_qs(target.query, keep_blank_values=True)
    assert query["client_id"] == ["Iv1.unit"]
    assert query["redirect_uri"] == [f"{BASE}/oauth/callback"]
    assert query["scope"] == [""]
    state = query["state"][0]
    assert len(state) >= 32
    cookie = response.headers["set-cookie"]
    assert cookie.startswith(f"{STATE_COOKIE}=")
    assert "HttpOnly" in cookie and "SameSite=lax" in cookie and "Max-Age=600" in cookie
    assert "Secure" not in cookie  # the callback is http here
    kept = Signer(KEY.encode()).loads("state", response.cookies[STATE_COOKIE])
    assert kept == {"state": state, "next": "/deliberations/x"}


async def test_an_https_callback_makes_the_cookies_secure(db: Database) -> None:
    async with client_for(db, Readers(), settings(public_url="https://council.example")) as http:
        response = await http.get("/login")
    assert "Secure" in response.headers["set-cookie"]


async def test_login_keeps_no_open_redirect(db: Database, readers: Readers) -> None:
    async with client_for(db, readers) as http:
        response = await http.get("/login", params={"next": "//evil.example/steal"})
    kept = Signer(KEY.encode()).loads("state", response.cookies[STATE_COOKIE])
    assert kept["next"] == "/"


async def callback(
    http: httpx.AsyncClient, state: str, cookie_state: str | None, next_path: str = "/stats"
) -> httpx.Response:
    if cookie_state is not None:
        signed = Signer(KEY.encode()).dumps("state", {"state": cookie_state, "next": next_path}, 60)
        http.cookies.set(STATE_COOKIE, signed)
    return await http.get("/oauth/callback", params={"code": "c0de", "state": state})


@pytest.fixture
def github_login(monkeypatch: pytest.MonkeyPatch) -> list[str]:
    """GitHub's token exchange and /user, stubbed: the codes exchanged."""
    exchanged: list[str] = []

    async def exchange(http: Any, config: Any, code: str) -> str:
        exchanged.append(code)
        return "ghu_usertoken"

    async def login_of(http: Any, config: Any, token: str) -> str:
        assert token == "ghu_usertoken"
        return "reader"

    monkeypatch.setattr(transcripts, "exchange_code", exchange)
    monkeypatch.setattr(transcripts, "user_login", login_of)
    return exchanged


async def test_a_callback_without_the_login_s_state_is_refused(
    db: Database, readers: Readers, github_login: list[str]
) -> None:
    async with client_for(db, readers) as http:
        no_cookie = await callback(http, "s" * 43, None)
        other = await callback(http, "s" * 43, "t" * 43)
        empty = await callback(http, "", "t" * 43)
    for response in (no_cookie, other, empty):
        assert response.status_code == 400
        assert "login state mismatch" in response.text
        assert SESSION_COOKIE not in response.cookies
    assert github_login == []  # no code was exchanged


async def test_a_callback_with_the_state_logs_in_and_goes_back(
    db: Database, readers: Readers, github_login: list[str], redis: Redis
) -> None:
    async with client_for(db, readers, redis=redis) as http:
        response = await callback(http, "s" * 43, "s" * 43, "/deliberations/abc")
    assert response.status_code == 302
    assert response.headers["location"] == "/deliberations/abc"
    assert github_login == ["c0de"]
    session = Signer(KEY.encode()).loads("session", response.cookies[SESSION_COOKIE])
    assert set(session) == {"login", "sid"} and session["login"] == "reader"  # no token
    assert await SessionStore(redis, PREFIX).login_of(session["sid"]) == "reader"
    assert "ghu_" not in response.headers.get("set-cookie", "")
    cookies = response.headers.get_list("set-cookie")
    assert any(c.startswith(f'{STATE_COOKIE}=""') or "Max-Age=0" in c for c in cookies)


async def test_a_forged_next_in_a_state_cookie_still_stays_on_the_site(
    db: Database, readers: Readers, github_login: list[str], redis: Redis
) -> None:
    async with client_for(db, readers, redis=redis) as http:
        response = await callback(http, "s" * 43, "s" * 43, "https://evil.example/")
    assert response.headers["location"] == "/"


async def test_github_refusing_the_code_is_a_failed_login(
    db: Database, readers: Readers, monkeypatch: pytest.MonkeyPatch
) -> None:
    async def refuse(http: Any, config: Any, code: str) -> str:
        raise auth.LoginFailed("GitHub refused the login (bad_verification_code)")

    monkeypatch.setattr(transcripts, "exchange_code", refuse)
    async with client_for(db, readers) as http:
        response = await callback(http, "s" * 43, "s" * 43)
    assert response.status_code == 502 and "bad_verification_code" in response.text
    assert SESSION_COOKIE not in response.cookies


# -- the pages -------------------------------------------------------------------------------


async def test_without_a_valid_session_a_page_sends_to_login(
    db: Database, readers: Readers, redis: Redis
) -> None:
    deliberation_id = await deliberation(db)
    page = f"/deliberations/{deliberation_id}"
    sessions = {
        "none": None,
        "expired": Signer(KEY.encode()).dumps("session", {"login": "reader"}, 60, now=0),
        "forged": signed("reader", key="another-key-0123456789abcdef"),
        "a state cookie": signed("reader", purpose="state"),
        "a session never opened": signed("reader"),
        "a cookie without a session": Signer(KEY.encode()).dumps(
            "session", {"login": "reader"}, 3600
        ),
        "garbage": "not-a-session",
    }
    config = oauth_config(settings())
    assert config is not None
    opened = session_in(config, await session_for(redis, "reader"))
    assert opened is not None
    sessions["another login's session"] = Signer(KEY.encode()).dumps(
        "session", {"login": "admin", "sid": opened.session_id}, 3600
    )
    async with client_for(db, readers, redis=redis) as http:
        for what, value in sessions.items():
            http.cookies.clear()
            if value is not None:
                http.cookies.set(SESSION_COOKIE, value)
            response = await http.get(page)
            assert response.status_code == 302, what
            assert response.headers["location"] == f"/login?next={page}", what
    assert readers.asked == []


async def test_unknown_not_installed_and_unreadable_are_the_same_404(
    db: Database, readers: Readers, redis: Redis
) -> None:
    readable = await deliberation(db)
    uninstalled = await deliberation(db, "acme/gone")
    readers.readers["acme/gone"] = {"reader"}  # they could read it, but the App is gone
    async with client_for(db, readers, redis=redis) as http:
        http.cookies.set(SESSION_COOKIE, await session_for(redis, "reader"))
        shown = await http.get(f"/deliberations/{readable}")
        unknown = await http.get("/deliberations/no-such-id")
        gone = await http.get(f"/deliberations/{uninstalled}")
        http.cookies.set(SESSION_COOKIE, await session_for(redis, "stranger"))
        unreadable = await http.get(f"/deliberations/{readable}")
    assert shown.status_code == 200 and REPO in shown.text
    assert unknown.status_code == gone.status_code == unreadable.status_code == 404
    assert unknown.text == gone.text == unreadable.text
    assert REPO not in unreadable.text


async def test_the_page_is_private_and_runs_nothing(
    db: Database, readers: Readers, redis: Redis
) -> None:
    deliberation_id = await deliberation(db)
    async with client_for(db, readers, redis=redis) as http:
        http.cookies.set(SESSION_COOKIE, await session_for(redis, "reader"))
        shown = await http.get(f"/deliberations/{deliberation_id}")
        missing = await http.get("/deliberations/nope")
    for response in (shown, missing):
        assert response.headers["cache-control"] == "private, no-store"
        csp = response.headers["content-security-policy"]
        assert csp.startswith("default-src 'none'; style-src 'unsafe-inline'")
        assert "frame-ancestors 'none'" in csp
        assert response.headers["x-content-type-options"] == "nosniff"
    assert "<script" not in shown.text.lower()


async def test_github_not_answering_the_access_check_is_no_page(
    db: Database, readers: Readers, redis: Redis
) -> None:
    deliberation_id = await deliberation(db)
    readers.down = True
    async with client_for(db, readers, redis=redis) as http:
        http.cookies.set(SESSION_COOKIE, await session_for(redis, "reader"))
        response = await http.get(f"/deliberations/{deliberation_id}")
    assert response.status_code == 503 and REPO not in response.text


async def test_stats_count_only_what_the_reader_can_read(
    db: Database, readers: Readers, redis: Redis
) -> None:
    await deliberation(db)
    await deliberation(db, "acme/secret")
    async with client_for(db, readers, redis=redis) as http:
        http.cookies.set(SESSION_COOKIE, await session_for(redis, "reader"))
        response = await http.get("/stats")
    assert response.status_code == 200
    assert response.headers["cache-control"] == "private, no-store"
    assert REPO in response.text and "acme/secret" not in response.text
    assert sorted(repo for repo, _ in readers.asked) == ["acme/secret", REPO]


async def test_unconfigured_pages_say_what_is_missing(db: Database, readers: Readers) -> None:
    config = settings(oauth_client_id=None, session_key=None)
    async with client_for(db, readers, config) as http:
        login = await http.get("/login")
        page = await http.get("/deliberations/x")
    for response in (login, page):
        assert response.status_code == 503
        assert "COUNCIL_OAUTH_CLIENT_ID" in response.text
        assert "COUNCIL_SESSION_KEY" in response.text


# -- logout ----------------------------------------------------------------------------------


async def test_logout_revokes_the_session_so_a_copied_cookie_no_longer_opens_a_page(
    db: Database, readers: Readers, redis: Redis
) -> None:
    deliberation_id = await deliberation(db)
    page = f"/deliberations/{deliberation_id}"
    copied = await session_for(redis, "reader")
    other_browser = await session_for(redis, "reader")
    async with client_for(db, readers, redis=redis) as http:
        http.cookies.set(SESSION_COOKIE, copied)
        assert (await http.get(page)).status_code == 200
        logout = await http.get("/logout")
        assert logout.status_code == 200 and "logged out" in logout.text
        dropped = logout.headers["set-cookie"]
        assert dropped.startswith(f'{SESSION_COOKIE}=""') or "Max-Age=0" in dropped
        # Whoever copied the cookie before the logout sends it again.
        http.cookies.clear()
        http.cookies.set(SESSION_COOKIE, copied)
        refused = await http.get(page)
        stats = await http.get("/stats")
        # The reader's other session (another browser) is its own: still open.
        http.cookies.set(SESSION_COOKIE, other_browser)
        elsewhere = await http.get(page)
    assert refused.status_code == 302
    assert refused.headers["location"] == f"/login?next={page}"
    assert stats.status_code == 302 and stats.headers["location"] == "/login?next=/stats"
    assert elsewhere.status_code == 200


async def test_a_logout_the_session_store_cannot_make_keeps_the_cookie_and_says_so(
    db: Database, readers: Readers, redis: Redis
) -> None:
    cookie = await session_for(redis, "reader")
    away = Redis.from_url("redis://127.0.0.1:9", socket_connect_timeout=1)
    try:
        async with client_for(db, readers, redis=away) as http:
            http.cookies.set(SESSION_COOKIE, cookie)
            logout = await http.get("/logout")
            page = await http.get("/stats")
    finally:
        await away.aclose()
    assert logout.status_code == 503 and "still open" in logout.text
    assert "set-cookie" not in logout.headers  # kept: the reader can try again
    assert page.status_code == 503  # unknown, so neither shown nor sent to log in
    async with client_for(db, readers, redis=redis) as http:  # Redis is back
        http.cookies.set(SESSION_COOKIE, cookie)
        assert (await http.get("/logout")).status_code == 200
        http.cookies.set(SESSION_COOKIE, cookie)
        assert (await http.get("/stats")).status_code == 302
