"""The fake GitHub's OAuth web flow checks what GitHub checks (tests/support/github_oauth.py)."""

from __future__ import annotations

from collections.abc import Iterator
from urllib.parse import parse_qs, urlsplit

import httpx
import pytest

from tests.support.github_server import FakeGitHub, run_fake_github

CALLBACK = "http://127.0.0.1:1/oauth/callback"


@pytest.fixture
def gh() -> Iterator[FakeGitHub]:
    with run_fake_github() as fake:
        fake.oauth.register("Iv1.abc", "secret", CALLBACK)
        yield fake


def authorize(gh: FakeGitHub, **params: str) -> httpx.Response:
    query = {"client_id": "Iv1.abc", "redirect_uri": CALLBACK, "state": "st", **params}
    return httpx.get(f"{gh.url}/login/oauth/authorize", params=query)


def code_of(response: httpx.Response) -> str:
    assert response.status_code == 302
    query = parse_qs(urlsplit(response.headers["location"]).query)
    assert query["state"] == ["st"]
    return query["code"][0]


def exchange(gh: FakeGitHub, code: str, **overrides: str) -> dict[str, str]:
    data = {
        "client_id": "Iv1.abc",
        "client_secret": "secret",
        "code": code,
        "redirect_uri": CALLBACK,
        **overrides,
    }
    response = httpx.post(
        f"{gh.url}/login/oauth/access_token", data=data, headers={"Accept": "application/json"}
    )
    assert response.status_code == 200  # GitHub answers its errors with 200 too
    body: dict[str, str] = response.json()
    return body


def test_a_code_becomes_a_user_token_once(gh: FakeGitHub) -> None:
    gh.oauth.log_in_as("octocat")
    code = code_of(authorize(gh))
    token = exchange(gh, code)
    assert token["token_type"] == "bearer" and token["access_token"].startswith("ghu_")
    user = httpx.get(f"{gh.url}/user", headers={"Authorization": f"Bearer {token['access_token']}"})
    assert user.status_code == 200 and user.json()["login"] == "octocat"
    assert exchange(gh, code)["error"] == "bad_verification_code"  # used


def test_the_exchange_checks_the_client_the_code_and_the_redirect(gh: FakeGitHub) -> None:
    gh.oauth.log_in_as("octocat")
    code = code_of(authorize(gh))
    assert exchange(gh, code, client_secret="wrong")["error"] == "incorrect_client_credentials"
    assert exchange(gh, code, client_id="Iv1.other")["error"] == "incorrect_client_credentials"
    assert exchange(gh, "nope")["error"] == "bad_verification_code"
    mismatch = exchange(gh, code, redirect_uri="http://127.0.0.1:1/oauth/callback/x")
    assert mismatch["error"] == "redirect_uri_mismatch"
    assert "access_token" in exchange(gh, code)  # still good after the refusals


def test_authorize_refuses_an_unknown_client_and_a_foreign_redirect(gh: FakeGitHub) -> None:
    gh.oauth.log_in_as("octocat")
    assert authorize(gh, client_id="Iv1.nope").status_code == 404
    foreign = authorize(gh, redirect_uri="https://evil.example/cb")
    assert foreign.status_code == 302
    location = foreign.headers["location"]
    assert location.startswith(CALLBACK + "?") and "error=redirect_uri_mismatch" in location


def test_nobody_signed_in_stops_at_the_sign_in_page(gh: FakeGitHub) -> None:
    response = authorize(gh)
    assert response.status_code == 200 and "Sign in to GitHub" in response.text
    gh.reset()  # the registration is kept, as the App's key is
    assert gh.oauth.client_id == "Iv1.abc" and gh.oauth.login is None


def test_user_names_the_token_s_user_and_wants_a_token(gh: FakeGitHub) -> None:
    gh.add_token("ghp_personal", login="someone")
    assert (
        httpx.get(f"{gh.url}/user", headers={"Authorization": "token ghp_personal"}).json()["login"]
        == "someone"
    )
    assert httpx.get(f"{gh.url}/user").status_code == 401
