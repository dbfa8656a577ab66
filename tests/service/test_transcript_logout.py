"""Logging out of the transcript pages ends the session on the server: the App as it runs
(uvicorn, Redis, the SQLite store) and the fake GitHub's OAuth web flow, over plain HTTP.

Someone who copied the session cookie before the logout gets the login redirect with it
afterwards, as a browser without a session does - not the 8 hours the signed cookie itself
would still have.
"""

from __future__ import annotations

import re
import socket
from collections.abc import AsyncIterator
from pathlib import Path

import httpx
import pytest

from bot.web.auth import SESSION_COOKIE
from tests.support.github_server import FakeGitHub, app_keypair
from tests.support.model_server import FakeModelServer
from tests.support.service import App, app_settings, running_app, seed_github

KEYS = app_keypair()
CLIENT_ID = "Iv1.counciltest0002"
CLIENT_SECRET = "oauth-client-secret-for-logout-tests"
READER = "reader-octocat"


def _free_port() -> int:
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        port: int = sock.getsockname()[1]
        return port


@pytest.fixture
async def app(
    tmp_path: Path, models: FakeModelServer, fake_github: FakeGitHub
) -> AsyncIterator[App]:
    seed_github(fake_github, KEYS[1])
    port = _free_port()
    base = f"http://127.0.0.1:{port}"
    fake_github.oauth.register(CLIENT_ID, CLIENT_SECRET, f"{base}/oauth/callback")
    fake_github.oauth.log_in_as(READER)
    settings = app_settings(
        tmp_path,
        models,
        fake_github,
        KEYS[0],
        public_url=base,
        oauth_client_id=CLIENT_ID,
        oauth_client_secret=CLIENT_SECRET,
        session_key="s" * 32,
    )
    async with running_app(settings, worker=False, port=port) as running:
        yield running


async def log_in(http: httpx.AsyncClient, app: App) -> str:
    """Through GitHub's login as a browser goes; the session cookie it ends with."""
    to_login = await http.get(f"{app.url}/stats")
    assert to_login.status_code == 302 and to_login.headers["location"] == "/login?next=/stats"
    to_github = await http.get(f"{app.url}{to_login.headers['location']}")
    assert re.search(r"state=", to_github.headers["location"])
    back = await http.get(to_github.headers["location"])  # GitHub signs READER in
    assert back.status_code == 302 and back.headers["location"].startswith(app.url)
    home = await http.get(back.headers["location"])
    assert home.status_code == 302 and home.headers["location"] == "/stats"
    return home.cookies[SESSION_COOKIE]


async def test_a_cookie_copied_before_logout_is_refused_after_it(app: App) -> None:
    async with httpx.AsyncClient(follow_redirects=False, timeout=10) as http:
        cookie = await log_in(http, app)
        assert (await http.get(f"{app.url}/stats")).status_code == 200
        logout = await http.get(f"{app.url}/logout")
        assert logout.status_code == 200 and "logged out" in logout.text
    async with httpx.AsyncClient(follow_redirects=False, timeout=10) as thief:
        thief.cookies.set(SESSION_COOKIE, cookie)
        after = await thief.get(f"{app.url}/stats")
    assert after.status_code == 302
    assert after.headers["location"] == "/login?next=/stats"


async def test_logging_in_again_after_a_logout_opens_a_new_session(app: App) -> None:
    async with httpx.AsyncClient(follow_redirects=False, timeout=10) as http:
        first = await log_in(http, app)
        await http.get(f"{app.url}/logout")
        second = await log_in(http, app)
        assert second != first
        assert (await http.get(f"{app.url}/stats")).status_code == 200
