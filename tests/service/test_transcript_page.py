"""The transcript page in a real headless browser: Debian's chromium, driven by Selenium
through Debian's chromedriver, against the App as it runs (uvicorn, worker, Redis) and the
fake GitHub's OAuth web flow (tests/support/github_oauth.py).

A deliberation is run first (a `/council quick` comment); its check run's details link and
the comment's "Full transcript" link point at the page. Then, in the browser: anonymous ->
GitHub's authorize page; signed in as someone who cannot read the (private) repository ->
the 404 page; as a reader -> the seats' personas and the finding's `path:line`; a callback
with a forged state -> "login state mismatch". And `/stats` lists only what the reader reads.

`make test` installs chromium and chromium-driver when they are missing; without them this
test fails (it never skips in CI, and prefers failing to skipping anywhere).
"""

from __future__ import annotations

import asyncio
import os
import re
import shutil
import socket
from collections.abc import AsyncIterator, Iterator
from pathlib import Path
from typing import Any

import httpx
import pytest

from bot.store.db import Database
from bot.store.deliberations import create_deliberation
from tests.support.council_answers import CouncilScript
from tests.support.github_server import FakeGitHub, app_keypair
from tests.support.model_server import FakeModelServer
from tests.support.service import (
    AUTHOR,
    PR,
    REPO,
    App,
    app_settings,
    comment_event,
    drained,
    eventually,
    running_app,
    seed_github,
)

KEYS = app_keypair()
# Debian's packages (`make test` installs them); CHROMIUM_BIN / CHROMEDRIVER_BIN elsewhere.
CHROMIUM = os.environ.get("CHROMIUM_BIN") or "/usr/bin/chromium"
CHROMEDRIVER = os.environ.get("CHROMEDRIVER_BIN") or "/usr/bin/chromedriver"
CLIENT_ID = "Iv1.counciltest0001"
CLIENT_SECRET = "oauth-client-secret-for-tests"
READER = "reader-octocat"
STRANGER = "stranger-octocat"
UNINSTALLED = "Codertocat/not-installed"
SEAT = "Application Security Reviewer"
FINDING = {
    "severity": "critical",
    "path": "app/auth.py",
    "start_line": 2,
    "end_line": 3,
    "title": "Hard-coded admin password",
    "detail": "Anyone who types admin logs in.",
    "suggestion": None,
}


def _browser_binaries() -> None:
    missing = [p for p in (CHROMIUM, CHROMEDRIVER) if shutil.which(p) is None]
    if missing:
        pytest.fail(
            f"{', '.join(missing)} missing: `make test` installs Debian's chromium and "
            "chromium-driver (apt-get install -y chromium chromium-driver)",
            pytrace=False,
        )


@pytest.fixture
def browser(tmp_path: Path) -> Iterator[Any]:
    _browser_binaries()
    from selenium import webdriver
    from selenium.webdriver.chrome.service import Service

    options = webdriver.ChromeOptions()
    options.binary_location = CHROMIUM
    for arg in (
        "--headless=new",
        "--no-sandbox",
        "--disable-gpu",
        "--disable-dev-shm-usage",
        f"--user-data-dir={tmp_path / 'chromium'}",
    ):
        options.add_argument(arg)
    driver = webdriver.Chrome(service=Service(CHROMEDRIVER), options=options)
    driver.set_page_load_timeout(30)
    try:
        yield driver
    finally:
        driver.quit()


def _free_port() -> int:
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        port: int = sock.getsockname()[1]
        return port


@pytest.fixture
def gh(fake_github: FakeGitHub) -> FakeGitHub:
    seed_github(fake_github, KEYS[1])
    with fake_github._lock:  # private: only collaborators can read it
        fake_github._repos[REPO].private = True
    fake_github.set_permission(REPO, READER, "read")
    return fake_github


@pytest.fixture
async def app(tmp_path: Path, models: FakeModelServer, gh: FakeGitHub) -> AsyncIterator[App]:
    models.default(CouncilScript(findings={SEAT: [FINDING]}).reply)
    port = _free_port()
    base = f"http://127.0.0.1:{port}"
    gh.oauth.register(CLIENT_ID, CLIENT_SECRET, f"{base}/oauth/callback")
    settings = app_settings(
        tmp_path,
        models,
        gh,
        KEYS[0],
        public_url=base,
        oauth_client_id=CLIENT_ID,
        oauth_client_secret=CLIENT_SECRET,
        session_key="k" * 32,
    )
    async with running_app(settings, port=port) as running:
        assert running.url == base
        yield running


async def _deliberate(app: App, gh: FakeGitHub) -> str:
    """Run `/council quick`; the transcript URL the check run's details link gives."""
    comment_id = gh.add_comment(REPO, PR, "/council quick", user=AUTHOR)
    response = await app.deliver(
        "issue_comment", comment_event("/council quick", comment_id=comment_id)
    )
    assert response.status_code == 202, response.text
    (run,) = await eventually(
        lambda: [c for c in gh.check_runs(REPO) if c.status == "completed"],
        what="a completed check run",
    )
    assert run.details_url and run.details_url.startswith(f"{app.url}/deliberations/")
    (sticky,) = [c for c in gh.comments(REPO, PR) if c.user == gh.app_login]
    assert f"[Full transcript]({run.details_url})" in sticky.body
    # The record takes the advisory just after the check run completes: let the job end.
    await drained(app)
    return run.details_url


async def _visit(driver: Any, url: str) -> tuple[str, str]:
    """Load `url` in the browser (off the event loop, which serves the App); the URL it
    ended on and the page's text."""

    def load() -> tuple[str, str]:
        from selenium.webdriver.common.by import By

        driver.get(url)
        return driver.current_url, driver.find_element(By.TAG_NAME, "body").text

    return await asyncio.to_thread(load)


async def test_the_transcript_page_behind_github_login(
    app: App, gh: FakeGitHub, browser: Any
) -> None:
    page = await _deliberate(app, gh)

    # Anonymous: to /login, then to GitHub's authorize page, where nobody is signed in.
    gh.oauth.log_in_as(None)
    ended, text = await _visit(browser, page)
    assert ended.startswith(f"{gh.url}/login/oauth/authorize?"), ended
    assert f"client_id={CLIENT_ID}" in ended and "state=" in ended
    assert "Sign in to GitHub" in text
    (authorize,) = gh.calls_to("GET", r"/login/oauth/authorize")
    assert authorize.query["redirect_uri"] == f"{app.url}/oauth/callback"

    # Signed in as someone who cannot read the private repository: the same 404 as for a
    # deliberation that does not exist.
    gh.oauth.log_in_as(STRANGER)
    ended, text = await _visit(browser, page)
    assert ended == page and "Not found" in text
    assert SEAT not in text and "app/auth.py" not in text
    exchange = gh.calls_to("POST", r"/login/oauth/access_token")[-1]
    assert exchange.json["client_secret"] == CLIENT_SECRET
    assert exchange.json["redirect_uri"] == f"{app.url}/oauth/callback"
    ended, text = await _visit(browser, f"{app.url}/stats")
    assert REPO not in text

    # A reader: the whole record.
    await asyncio.to_thread(browser.delete_all_cookies)
    gh.oauth.log_in_as(READER)
    ended, text = await _visit(browser, page)
    assert ended == page
    assert SEAT in text and "app/auth.py:2" in text, text[:2000]
    assert "Hard-coded admin password" in text
    ended, text = await _visit(browser, f"{app.url}/stats")
    assert REPO in text

    # A callback whose state is not the one the login started with.
    _, text = await _visit(browser, f"{app.url}/oauth/callback?code=forged&state=forged")
    assert "login state mismatch" in text


async def test_the_page_answers_as_a_page_should(app: App, gh: FakeGitHub) -> None:
    """Over plain HTTP: the status codes and headers the browser does not show."""
    page = await _deliberate(app, gh)
    async with httpx.AsyncClient(follow_redirects=False, timeout=10) as http:
        anonymous = await http.get(page)
        assert anonymous.status_code == 302
        path = page.removeprefix(app.url)
        assert anonymous.headers["location"] == f"/login?next={path}"
        login = await http.get(f"{app.url}{anonymous.headers['location']}")
        assert login.status_code == 302
        state_cookie = login.headers["set-cookie"]
        assert "HttpOnly" in state_cookie and "SameSite=lax" in state_cookie
        state = re.search(r"state=([^&]+)", login.headers["location"])
        assert state is not None
        forged = await http.get(f"{app.url}/oauth/callback", params={"code": "x", "state": "y"})
        assert forged.status_code == 400 and "login state mismatch" in forged.text
        gh.oauth.log_in_as(READER)
        authorized = await http.get(login.headers["location"])
        assert authorized.status_code == 302
        back = await http.get(authorized.headers["location"])
        assert back.status_code == 302 and back.headers["location"] == path
        shown = await http.get(page)
        assert shown.status_code == 200
        assert shown.headers["cache-control"] == "private, no-store"
        assert shown.headers["content-security-policy"].startswith(
            "default-src 'none'; style-src 'unsafe-inline'"
        )
        assert SEAT in shown.text
        unknown = await http.get(f"{app.url}/deliberations/no-such-deliberation")
        assert unknown.status_code == 404
        # A repository the App is not installed on: asked with the App's JWT, 404, and the
        # page is the same 404 though the reader could read the repository.
        gh.add_repo(UNINSTALLED, installation_id=None, files={"README.md": "# x\n"})
        gh.set_permission(UNINSTALLED, READER, "read")
        elsewhere = await _record_for(app, UNINSTALLED)
        gone = await http.get(f"{app.url}/deliberations/{elsewhere}")
        assert gone.status_code == 404 and gone.text == unknown.text
        (asked,) = gh.calls_to("GET", rf"/repos/{UNINSTALLED}/installation")
        assert asked.auth == "app" and asked.status == 404
        # The permission was asked with the App's installation token, never a user's.
        (permission,) = gh.calls_to("GET", rf"/repos/{REPO}/collaborators/{READER}/permission")
        assert permission.auth.startswith("installation:")


async def _record_for(app: App, repo: str) -> str:
    async with Database(app.settings.database_url) as db:
        record = await create_deliberation(
            db,
            key=f"elsewhere-{repo}",
            repo=repo,
            pr_number=1,
            head_sha="ab" * 20,
            trigger="command",
            protocol="quick",
            topic="Review",
        )
    return record.id
