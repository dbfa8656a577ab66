"""The fake GitHub's OAuth web flow (the App's user login), hooked into `FakeGitHub`.

GitHub's site, not its API: `GET /login/oauth/authorize` and `POST
/login/oauth/access_token` on the same port as the fake's API (`github_web_url` maps an API
served at a site's root to the site itself), and `GET /user` for the user tokens it issues.

    gh.oauth.register("Iv1.test", "s3cret", "http://127.0.0.1:8000/oauth/callback")
    gh.oauth.log_in_as("octocat")   # who "signs in" on the authorize page

The authorize page signs in at once as `log_in_as`'s user (or the `login` query parameter,
a fake's extension) and redirects to the callback with a one-time `code` (10 minutes) and
the `state` it was given; with nobody to sign in it shows a sign-in page and stops there.
The token exchange checks what GitHub checks - the client id and secret, the code (known,
unused, unexpired, issued to that client) and `redirect_uri` (the authorize request's) -
and answers, as GitHub does, with status 200 either way: a token, or an `error`
(`incorrect_client_credentials`, `bad_verification_code`, `redirect_uri_mismatch`), as JSON
when asked with `Accept: application/json`, else form-encoded.
"""

from __future__ import annotations

import json
import secrets
import time
from dataclasses import dataclass
from datetime import timedelta
from typing import TYPE_CHECKING, Any
from urllib.parse import parse_qsl, urlencode, urlsplit

from fastapi import FastAPI, Request
from fastapi.responses import HTMLResponse, RedirectResponse, Response

if TYPE_CHECKING:
    from tests.support.github_server import FakeGitHub

CODE_TTL_S = 600
USER_TOKEN_TTL = timedelta(hours=8)
_TROUBLE = "https://docs.github.com/apps/managing-oauth-apps/troubleshooting-oauth-app-access-token-request-errors"
_AUTHORIZE_TROUBLE = (
    "https://docs.github.com/apps/managing-oauth-apps/troubleshooting-authorization-request-errors"
)


@dataclass(frozen=True)
class _Code:
    client_id: str
    login: str
    redirect_uri: str | None
    expires: float


class OAuthFake:
    """The OAuth side of one `FakeGitHub` (`gh.oauth`)."""

    def __init__(self, fake: FakeGitHub) -> None:
        self.fake = fake
        self.client_id: str | None = None
        self.client_secret: str | None = None
        self.callback_url: str | None = None
        self.login: str | None = None
        self._codes: dict[str, _Code] = {}

    # -- scripting ---------------------------------------------------------------------------

    def register(self, client_id: str, client_secret: str, callback_url: str) -> None:
        """The App's OAuth credentials and its registered callback URL (kept over `reset`,
        as the App's key is)."""
        with self.fake._lock:
            self.client_id, self.client_secret = client_id, client_secret
            self.callback_url = callback_url

    def log_in_as(self, login: str | None) -> None:
        """Who the authorize page signs in (None: nobody; it shows the sign-in page)."""
        with self.fake._lock:
            self.login = login

    def reset(self) -> None:
        with self.fake._lock:
            self.login = None
            self._codes.clear()

    # -- serving -----------------------------------------------------------------------------

    def mount(self, app: FastAPI) -> None:
        """The site's routes, before the API's catch-all."""
        app.add_api_route(
            "/login/oauth/authorize", self._authorize, methods=["GET"], include_in_schema=False
        )
        app.add_api_route(
            "/login/oauth/access_token",
            self._access_token,
            methods=["POST"],
            include_in_schema=False,
        )

    def _record(self, request: Request, status: int, body: Any) -> None:
        from tests.support.github_server import RecordedCall

        self.fake.calls.append(
            RecordedCall(
                method=request.method,
                path=request.url.path,
                query=dict(parse_qsl(request.url.query, keep_blank_values=True)),
                status=status,
                time=time.monotonic(),
                json=body,
                auth="none",
                accept=request.headers.get("accept", ""),
                api_version=None,
            )
        )

    async def _authorize(self, request: Request) -> Response:
        query = dict(parse_qsl(request.url.query, keep_blank_values=True))
        with self.fake._lock:
            response = self._authorized(query)
            self._record(request, response.status_code, None)
        return response

    def _authorized(self, query: dict[str, str]) -> Response:
        client_id = query.get("client_id", "")
        if self.client_id is None or client_id != self.client_id:
            return HTMLResponse(
                "<h1>404</h1><p>This is not the web page you are looking for.</p>", 404
            )
        assert self.callback_url is not None
        redirect_uri = query.get("redirect_uri") or None
        state = query.get("state")
        if redirect_uri is not None and not _under(redirect_uri, self.callback_url):
            extra = {
                "error": "redirect_uri_mismatch",
                "error_description": "The redirect_uri MUST match the registered callback URL "
                "for this application.",
                "error_uri": f"{_AUTHORIZE_TROUBLE}#redirect-uri-mismatch",
            }
            return RedirectResponse(_with(self.callback_url, extra, state), 302)
        login = query.get("login") or self.login
        if login is None:
            page = "<title>Sign in to GitHub</title><h1>Sign in to GitHub</h1><form></form>"
            return HTMLResponse(page, 200)
        code = secrets.token_hex(10)
        self._codes[code] = _Code(client_id, login, redirect_uri, time.time() + CODE_TTL_S)
        return RedirectResponse(
            _with(redirect_uri or self.callback_url, {"code": code}, state), 302
        )

    async def _access_token(self, request: Request) -> Response:
        raw = (await request.body()).decode("utf-8", "replace")
        params = dict(parse_qsl(request.url.query, keep_blank_values=True))
        if "json" in request.headers.get("content-type", ""):
            try:
                data = json.loads(raw)
            except ValueError:
                data = {}
            params.update({k: str(v) for k, v in data.items()} if isinstance(data, dict) else {})
        else:
            params.update(dict(parse_qsl(raw, keep_blank_values=True)))
        with self.fake._lock:
            body = self._exchange(params)
            self._record(request, 200, params)
        if "application/json" in request.headers.get("accept", ""):
            return Response(json.dumps(body), 200, media_type="application/json")
        return Response(urlencode(body), 200, media_type="application/x-www-form-urlencoded")

    def _exchange(self, params: dict[str, str]) -> dict[str, str]:
        from tests.support.github_server import _now, _Token

        if (
            self.client_id is None
            or params.get("client_id") != self.client_id
            or params.get("client_secret") != self.client_secret
        ):
            return _error(
                "incorrect_client_credentials",
                "The client_id and/or client_secret passed are incorrect.",
                "incorrect-client-credentials",
            )
        found = self._codes.get(params.get("code", ""))
        if found is None or found.expires <= time.time() or found.client_id != self.client_id:
            return _error(
                "bad_verification_code",
                "The code passed is incorrect or expired.",
                "bad-verification-code",
            )
        given = params.get("redirect_uri") or None
        if found.redirect_uri is not None and given != found.redirect_uri:
            return _error(
                "redirect_uri_mismatch",
                "The redirect_uri MUST match the registered callback URL for this application.",
                "redirect-uri-mismatch2",
            )
        del self._codes[params["code"]]  # a code is good once
        token = "ghu_" + secrets.token_hex(18)
        self.fake._tokens[token] = _Token(None, _now() + USER_TOKEN_TTL, found.login)
        return {"access_token": token, "token_type": "bearer", "scope": ""}


def _error(code: str, description: str, anchor: str) -> dict[str, str]:
    return {"error": code, "error_description": description, "error_uri": f"{_TROUBLE}#{anchor}"}


def _under(url: str, registered: str) -> bool:
    """GitHub's rule: the same scheme, host and port, and the path under the registered
    one."""
    given, known = urlsplit(url), urlsplit(registered)
    if (given.scheme, given.netloc) != (known.scheme, known.netloc):
        return False
    base = known.path.rstrip("/")
    return given.path == known.path or given.path.startswith(base + "/")


def _with(url: str, params: dict[str, str], state: str | None) -> str:
    if state is not None:
        params = {**params, "state": state}
    return url + ("&" if "?" in url else "?") + urlencode(params)


# -- GET /user (the API, with a user token) ----------------------------------------------------


def _get_user(ctx: Any) -> Response:
    from tests.support.github_server import _HttpError, _json_response, _user

    token = ctx.token
    if token.installation_id is not None:
        raise _HttpError(403, "Resource not accessible by integration")
    data = {**_user(ctx.fake, token.login), "name": token.login, "email": None}
    return _json_response(200, data)


def oauth_routes() -> list[tuple[str, str, Any, bool]]:
    """The API routes of the OAuth side, for the fake's route table."""
    return [("GET", r"/user", _get_user, False)]
