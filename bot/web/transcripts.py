"""The transcript and stats pages, behind GitHub login (`bot.web.auth`).

    GET /deliberations/{id}  one deliberation's whole record (bot.render.transcript)
    GET /stats               usage figures over the repositories the reader can read
    GET /login               to GitHub's authorize page, with a fresh `state`
    GET /oauth/callback      back from GitHub: state checked, code exchanged, session set
    GET /logout              the session revoked on the server, the cookie dropped

Without a session - no cookie, or one whose server-side session (`bot.web.sessions`) was
revoked, expired or is unknown - a page sends the browser to `/login?next=<the page>`. A
deliberation the store does not have, one of a repository the App is no longer installed
on, and one the reader cannot read all get the same 404: the page never says that a
private repository's deliberation exists. Every page is `Cache-Control: private, no-store`
under a CSP that allows nothing but inline styles (the pages carry no script, image or
form).
"""

from __future__ import annotations

import hmac
from html import escape
from typing import Any
from urllib.parse import quote

import httpx
import structlog
from fastapi import FastAPI, Request
from starlette.responses import HTMLResponse, RedirectResponse, Response

from bot.queue.links import transcript_path
from bot.render.transcript import stats_html, transcript_html
from bot.settings import MissingSettingError, Settings
from bot.store.db import Database
from bot.store.history import load_transcript, reviewed_repos, usage_stats
from bot.web.auth import (
    SESSION_COOKIE,
    STATE_COOKIE,
    STATE_TTL_S,
    LoginFailed,
    OAuthConfig,
    authorize_url,
    exchange_code,
    missing_settings,
    new_state,
    oauth_config,
    safe_next,
    session_cookie,
    session_in,
    user_login,
)
from bot.web.forge import AccessUnknown, RepoReaders
from bot.web.sessions import SessionStore, SessionsUnavailable
from bot.web.webhook import WebhookReceiver

__all__ = ["CSP", "add_transcript_pages", "transcript_path"]

log = structlog.get_logger(__name__)

CSP = (
    "default-src 'none'; style-src 'unsafe-inline'; frame-ancestors 'none'; "
    "base-uri 'none'; form-action 'none'"
)
PAGE_HEADERS = {
    "Cache-Control": "private, no-store",
    "Content-Security-Policy": CSP,
    "X-Content-Type-Options": "nosniff",
    "X-Frame-Options": "DENY",
    "Referrer-Policy": "no-referrer",
}
_MAX_ID = 200


def _page(title: str, text: str, status: int) -> HTMLResponse:
    body = (
        "<!doctype html><html lang=en><head><meta charset=utf-8>"
        f"<title>{escape(title)}</title></head><body><h1>{escape(title)}</h1>"
        f"<p>{escape(text)}</p></body></html>"
    )
    return HTMLResponse(body, status_code=status, headers=PAGE_HEADERS)


def _not_found() -> HTMLResponse:
    return _page("Not found", "There is no such page, or you cannot see it.", 404)


class _Pages:
    def __init__(self, settings: Settings, receiver: WebhookReceiver) -> None:
        self.settings = settings
        self.receiver = receiver
        self.config = oauth_config(settings)
        self._readers: RepoReaders | None = None

    # -- what a page needs -------------------------------------------------------------------

    def unconfigured(self) -> HTMLResponse:
        missing = missing_settings(self.settings)
        if self.settings.github_app_id is None:
            missing.append("GITHUB_APP_ID")
        return _page("Not configured", f"Missing setting(s): {', '.join(missing)}.", 503)

    def readers(self) -> RepoReaders | None:
        if self._readers is None and self.receiver.redis is not None:
            try:
                self._readers = RepoReaders(self.settings, self.receiver.redis)
            except MissingSettingError:
                return None
        return self._readers

    def sessions(self) -> SessionStore | None:
        redis = self.receiver.redis
        if redis is None:  # starting up, or stopping
            return None
        return SessionStore(redis, self.settings.key_prefix)

    async def login_of(self, config: OAuthConfig, request: Request) -> str | None:
        """The reader's login while their session is open on the server; None without one.
        Raises `SessionsUnavailable` when that cannot be known now."""
        cookie = session_in(config, request.cookies.get(SESSION_COOKIE))
        if cookie is None:
            return None
        sessions = self.sessions()
        if sessions is None:
            raise SessionsUnavailable("no Redis")
        if await sessions.login_of(cookie.session_id) != cookie.login:
            return None  # logged out (revoked), expired, or unknown
        return cookie.login

    def _cookie(
        self, response: Response, config: OAuthConfig, name: str, value: str, max_age: int
    ) -> None:
        response.set_cookie(
            name,
            value,
            max_age=max_age,
            path="/",
            secure=config.secure_cookies,
            httponly=True,
            samesite="lax",
        )

    # -- the login ---------------------------------------------------------------------------

    async def login(self, request: Request) -> Response:
        config = self.config
        if config is None:
            return self.unconfigured()
        target = safe_next(request.query_params.get("next"))
        state = new_state()
        response = RedirectResponse(authorize_url(config, state), status_code=302)
        response.headers.update(PAGE_HEADERS)
        signed = config.signer.dumps("state", {"state": state, "next": target}, STATE_TTL_S)
        self._cookie(response, config, STATE_COOKIE, signed, STATE_TTL_S)
        return response

    async def callback(self, request: Request) -> Response:
        config = self.config
        if config is None:
            return self.unconfigured()
        kept = config.signer.loads("state", request.cookies.get(STATE_COOKIE))
        given = request.query_params.get("state", "")
        expected = kept.get("state") if isinstance(kept, dict) else None
        if not isinstance(expected, str) or not hmac.compare_digest(
            given.encode(), expected.encode()
        ):
            return _page("Login failed", "login state mismatch: start again from the page.", 400)
        assert isinstance(kept, dict)
        code = request.query_params.get("code")
        if not code:
            error = request.query_params.get("error") or "no code"
            return _page("Login failed", f"GitHub did not log you in ({error[:100]}).", 400)
        try:
            async with httpx.AsyncClient() as http:
                token = await exchange_code(http, config, code)
                login = await user_login(http, config, token)
            del token  # only the login is kept
        except LoginFailed as error:
            log.warning("login_failed", reason=str(error))
            return _page("Login failed", str(error), 502)
        sessions = self.sessions()
        try:
            if sessions is None:
                raise SessionsUnavailable("no Redis")
            session_id = await sessions.open(login, config.session_ttl_s)
        except SessionsUnavailable as error:
            log.warning("session_not_opened", error=str(error))
            return _unavailable()
        target = safe_next(kept.get("next") if isinstance(kept.get("next"), str) else None)
        response = RedirectResponse(target, status_code=302)
        response.headers.update(PAGE_HEADERS)
        session = session_cookie(config, login, session_id)
        self._cookie(response, config, SESSION_COOKIE, session, config.session_ttl_s)
        response.delete_cookie(STATE_COOKIE, path="/")
        log.info("login", login=login)
        return response

    async def logout(self, request: Request) -> Response:
        """The session revoked on the server (a copy of the cookie opens nothing after
        this), then the cookie dropped. When the revocation cannot be made the cookie stays,
        so that the reader can try again."""
        config = self.config
        cookie = session_in(config, request.cookies.get(SESSION_COOKIE)) if config else None
        if cookie is not None:
            sessions = self.sessions()
            try:
                if sessions is None:
                    raise SessionsUnavailable("no Redis")
                await sessions.revoke(cookie.session_id)
            except SessionsUnavailable as error:
                log.warning("logout_failed", error=str(error))
                return _page(
                    "Not logged out",
                    "The session store did not answer, so your session is still open; "
                    "try again shortly.",
                    503,
                )
            log.info("logout", login=cookie.login)
        response = _page("Logged out", "You are logged out.", 200)
        response.delete_cookie(SESSION_COOKIE, path="/")
        return response

    # -- the pages ---------------------------------------------------------------------------

    def _to_login(self, path: str) -> Response:
        response = RedirectResponse(f"/login?next={quote(path, safe='/')}", status_code=302)
        response.headers.update(PAGE_HEADERS)
        return response

    async def _ready(self, request: Request) -> tuple[str, RepoReaders, Database] | Response:
        """The reader's login, the access checks and the store; or the answer to give."""
        config = self.config
        if config is None or self.settings.github_app_id is None:
            return self.unconfigured()
        try:
            login = await self.login_of(config, request)
        except SessionsUnavailable as error:
            log.warning("session_check_failed", error=str(error))
            return _unavailable()
        if login is None:
            return self._to_login(request.url.path)
        readers, db = self.readers(), self.receiver.db
        if readers is None or db is None:  # starting up, or stopping
            return _unavailable()
        return login, readers, db

    async def transcript(self, request: Request, deliberation_id: str) -> Response:
        ready = await self._ready(request)
        if isinstance(ready, Response):
            return ready
        login, readers, db = ready
        if len(deliberation_id) > _MAX_ID:
            return _not_found()
        found = await load_transcript(db, deliberation_id)
        if found is None:
            return _not_found()
        record, advisory, events = found
        try:
            allowed = await readers.can_read(record.repo, login)
        except AccessUnknown as error:
            log.warning("read_check_failed", repo=record.repo, error=str(error))
            return _unavailable()
        if not allowed:
            return _not_found()
        title = f"Council transcript - {record.repo}" + (
            f"#{record.pr_number}" if record.pr_number else ""
        )
        html = transcript_html(record, advisory, events, title=title)
        return HTMLResponse(html, headers=PAGE_HEADERS)

    async def stats(self, request: Request) -> Response:
        ready = await self._ready(request)
        if isinstance(ready, Response):
            return ready
        login, readers, db = ready
        repos = await reviewed_repos(db)
        try:
            readable = await readers.readable(repos, login)
        except AccessUnknown as error:
            log.warning("read_check_failed", error=str(error))
            return _unavailable()
        return HTMLResponse(stats_html(await usage_stats(db, repos=readable)), headers=PAGE_HEADERS)


def _unavailable() -> HTMLResponse:
    return _page("Unavailable", "GitHub or the store did not answer; try again shortly.", 503)


def add_transcript_pages(app: FastAPI, settings: Settings, receiver: WebhookReceiver) -> _Pages:
    """The pages' routes on the web app (`bot.web.app.create_app`)."""
    pages = _Pages(settings, receiver)
    routes: list[tuple[str, Any]] = [
        ("/login", pages.login),
        ("/oauth/callback", pages.callback),
        ("/logout", pages.logout),
        ("/stats", pages.stats),
        ("/deliberations/{deliberation_id}", pages.transcript),
    ]
    for path, endpoint in routes:
        app.add_api_route(path, endpoint, methods=["GET"], include_in_schema=False)
    return pages
