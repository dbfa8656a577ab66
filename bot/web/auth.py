"""GitHub login for the transcript pages: the App's OAuth web flow and signed cookies.

The flow (GitHub's "web application flow"): `/login` sends the browser to
`{GITHUB}/login/oauth/authorize` with a random `state`, kept in a signed, short-lived,
HttpOnly cookie; GitHub sends it back to the callback with `code` and `state`; the state
must be the cookie's (login forgery), the code is exchanged for a user token
(`POST /login/oauth/access_token`), and `GET /user` with that token names the user.

The session cookie holds the login and the id of a session kept on the server
(`bot.web.sessions`: a logout revokes it there, so a copied cookie stops working too) -
never the user token, which is dropped as soon as `/user` answered: whether the reader may
see a repository is asked at request time with the App's own installation token
(`bot.web.forge`). Cookies are signed with HMAC-SHA256 under `COUNCIL_SESSION_KEY`,
carry their purpose (a state cookie is no session) and an expiry inside the signature.
"""

from __future__ import annotations

import base64
import hashlib
import hmac
import json
import secrets
import time
from dataclasses import dataclass
from typing import Any
from urllib.parse import urlencode, urlsplit

import httpx

from bot.settings import Settings

__all__ = [
    "SESSION_COOKIE",
    "STATE_COOKIE",
    "STATE_TTL_S",
    "LoginFailed",
    "OAuthConfig",
    "SessionCookie",
    "Signer",
    "authorize_url",
    "exchange_code",
    "new_state",
    "oauth_config",
    "safe_next",
    "session_cookie",
    "session_in",
    "user_login",
]

SESSION_COOKIE = "council_session"
STATE_COOKIE = "council_login"
STATE_TTL_S = 600  # GitHub's codes live 10 minutes; a login takes less
_SIGNING_CONTEXT = b"pr-council cookie v1\x00"
_OAUTH_TIMEOUT_S = 10.0


class LoginFailed(Exception):
    """GitHub did not complete the login (a bad code, wrong credentials, an outage)."""


class Signer:
    """Signed, expiring values: `base64url(json).base64url(hmac-sha256)`.

    The signature covers the purpose, the expiry and the data, so neither can be changed,
    and a value signed for one purpose (the login state) is refused for another (a
    session)."""

    def __init__(self, key: bytes) -> None:
        if len(key) < 16:
            raise ValueError("COUNCIL_SESSION_KEY must be at least 16 bytes")
        self._key = hashlib.sha256(_SIGNING_CONTEXT + key).digest()

    def _mac(self, payload: bytes) -> bytes:
        return hmac.new(self._key, payload, hashlib.sha256).digest()

    def dumps(
        self, purpose: str, data: dict[str, Any], ttl_s: float, *, now: float | None = None
    ) -> str:
        issued = time.time() if now is None else now
        body = {"p": purpose, "exp": int(issued + ttl_s), "d": data}
        payload = _b64(json.dumps(body, separators=(",", ":"), sort_keys=True).encode())
        return payload + "." + _b64(self._mac(payload.encode()))

    def loads(self, purpose: str, value: str | None, *, now: float | None = None) -> Any:
        """The data, or None when the value is absent, forged, expired or another purpose's."""
        if not value or value.count(".") != 1:
            return None
        payload, signature = value.split(".")
        try:
            given = _unb64(signature)
        except ValueError:
            return None
        if not hmac.compare_digest(given, self._mac(payload.encode())):
            return None
        try:
            body = json.loads(_unb64(payload))
        except ValueError:
            return None
        if not isinstance(body, dict) or body.get("p") != purpose:
            return None
        expires = body.get("exp")
        current = time.time() if now is None else now
        if not isinstance(expires, int) or expires <= current:
            return None
        return body.get("d")


def _b64(data: bytes) -> str:
    return base64.urlsafe_b64encode(data).rstrip(b"=").decode()


def _unb64(text: str) -> bytes:
    try:
        return base64.urlsafe_b64decode(text + "=" * (-len(text) % 4))
    except (ValueError, TypeError) as error:
        raise ValueError("not base64url") from error


@dataclass(frozen=True)
class SessionCookie:
    """What a valid session cookie says: whose login, and which server-side session."""

    login: str
    session_id: str


def session_cookie(config: OAuthConfig, login: str, session_id: str) -> str:
    """The signed session cookie's value for a session opened on the server."""
    return config.signer.dumps("session", {"login": login, "sid": session_id}, config.session_ttl_s)


def session_in(config: OAuthConfig, value: str | None) -> SessionCookie | None:
    """The session a cookie names; None when it is absent, forged, expired, another
    purpose's, or names no server-side session (a cookie from before sessions were kept)."""
    data = config.signer.loads("session", value)
    if not isinstance(data, dict):
        return None
    login, session_id = data.get("login"), data.get("sid")
    if not isinstance(login, str) or not login or not isinstance(session_id, str) or not session_id:
        return None
    return SessionCookie(login, session_id)


def new_state() -> str:
    return secrets.token_urlsafe(32)


def safe_next(value: str | None, default: str = "/") -> str:
    """`value` when it is a path on this site, else `default`: no scheme, no host, no
    `//host` or `/\\host` (browsers read both as another site), no control characters."""
    if not value or not value.startswith("/") or value.startswith(("//", "/\\")):
        return default
    if any(ord(ch) < 0x20 or ch == "\x7f" or ch == "\\" for ch in value):
        return default
    parts = urlsplit(value)
    if parts.scheme or parts.netloc:
        return default
    return value


@dataclass(frozen=True)
class OAuthConfig:
    client_id: str
    client_secret: str
    callback_url: str
    web_url: str  # where GitHub's login pages are: https://github.com, https://HOST (GHES)
    api_url: str
    signer: Signer
    session_ttl_s: int
    secure_cookies: bool  # the callback is https: the cookies say Secure


def github_web_url(api_url: str) -> str:
    """GitHub's site for its API: api.github.com -> github.com, HOST/api/v3 -> HOST; an
    API served at a site's root (a test's fake) is the site itself."""
    url = api_url.rstrip("/")
    parts = urlsplit(url)
    if parts.netloc == "api.github.com":
        return f"{parts.scheme}://github.com"
    if parts.path.endswith("/api/v3"):
        return url.removesuffix("/api/v3")
    return url


def oauth_config(settings: Settings) -> OAuthConfig | None:
    """The login's configuration; None when a setting it needs is missing (the pages then
    answer 503, saying which)."""
    callback = settings.oauth_callback_url or (
        settings.public_url.rstrip("/") + "/oauth/callback" if settings.public_url else None
    )
    if (
        not settings.oauth_client_id
        or settings.oauth_client_secret is None
        or settings.session_key is None
        or callback is None
    ):
        return None
    return OAuthConfig(
        client_id=settings.oauth_client_id,
        client_secret=settings.oauth_client_secret.get_secret_value(),
        callback_url=callback,
        web_url=github_web_url(settings.github_api_url),
        api_url=settings.github_api_url.rstrip("/"),
        signer=Signer(settings.session_key.get_secret_value().encode()),
        session_ttl_s=settings.session_ttl_s,
        secure_cookies=callback.startswith("https://"),
    )


def missing_settings(settings: Settings) -> list[str]:
    missing = []
    if not settings.oauth_client_id:
        missing.append("COUNCIL_OAUTH_CLIENT_ID")
    if settings.oauth_client_secret is None:
        missing.append("COUNCIL_OAUTH_CLIENT_SECRET")
    if settings.session_key is None:
        missing.append("COUNCIL_SESSION_KEY")
    if not settings.oauth_callback_url and not settings.public_url:
        missing.append("COUNCIL_OAUTH_CALLBACK_URL or COUNCIL_PUBLIC_URL")
    return missing


def authorize_url(config: OAuthConfig, state: str) -> str:
    # No scope: the token only names the user (`GET /user`), it reads nothing.
    query = urlencode(
        {
            "client_id": config.client_id,
            "redirect_uri": config.callback_url,
            "state": state,
            "scope": "",
            "allow_signup": "false",
        }
    )
    return f"{config.web_url}/login/oauth/authorize?{query}"


async def exchange_code(http: httpx.AsyncClient, config: OAuthConfig, code: str) -> str:
    """The user token for `code`; GitHub answers an error with status 200 and `error`."""
    try:
        response = await http.post(
            f"{config.web_url}/login/oauth/access_token",
            data={
                "client_id": config.client_id,
                "client_secret": config.client_secret,
                "code": code,
                "redirect_uri": config.callback_url,
            },
            headers={"Accept": "application/json"},
            timeout=_OAUTH_TIMEOUT_S,
        )
    except httpx.HTTPError as error:
        raise LoginFailed(f"GitHub did not answer the login ({type(error).__name__})") from None
    try:
        body = response.json()
    except ValueError:
        body = None
    if response.status_code != 200 or not isinstance(body, dict):
        raise LoginFailed(f"GitHub refused the login (HTTP {response.status_code})")
    token = body.get("access_token")
    if not isinstance(token, str) or not token:
        raise LoginFailed(f"GitHub refused the login ({body.get('error') or 'no token'})")
    return token


async def user_login(http: httpx.AsyncClient, config: OAuthConfig, token: str) -> str:
    """The login of the user the token belongs to (`GET /user`)."""
    try:
        response = await http.get(
            f"{config.api_url}/user",
            headers={
                "Authorization": f"Bearer {token}",
                "Accept": "application/vnd.github+json",
            },
            timeout=_OAUTH_TIMEOUT_S,
        )
    except httpx.HTTPError as error:
        raise LoginFailed(f"GitHub did not answer the login ({type(error).__name__})") from None
    try:
        body = response.json()
    except ValueError:
        body = None
    login = body.get("login") if isinstance(body, dict) else None
    if response.status_code != 200 or not isinstance(login, str) or not login:
        raise LoginFailed(f"GitHub did not name the user (HTTP {response.status_code})")
    return login
