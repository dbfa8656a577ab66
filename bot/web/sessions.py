"""The transcript pages' login sessions, kept on the server so that a logout ends them.

A login opens a session: a random id, stored in Redis (the web process's own; the App's
key prefix) under a hash of the id, with the login it belongs to and an expiry of
`COUNCIL_SESSION_TTL_S`. The session cookie (`bot.web.auth`, signed) carries the id and the
login; every page asks Redis whether that id is still open for that login. Logging out
deletes it: the cookie, even one copied before, no longer opens anything. A session Redis
does not have (revoked, expired, lost with Redis's data) is no session.

Redis holds a hash of the id, not the id: whoever reads Redis cannot make a cookie from it
(nor could they without `COUNCIL_SESSION_KEY`).
"""

from __future__ import annotations

import hashlib
import secrets

from redis.asyncio import Redis
from redis.exceptions import RedisError

__all__ = ["SessionStore", "SessionsUnavailable"]


class SessionsUnavailable(Exception):
    """Redis did not answer: whether the session is open is not known."""


class SessionStore:
    """Open, look up and revoke login sessions in Redis."""

    def __init__(self, redis: Redis, key_prefix: str) -> None:
        self.redis = redis
        self.key_prefix = key_prefix

    def _key(self, session_id: str) -> str:
        digest = hashlib.sha256(session_id.encode()).hexdigest()
        return f"{self.key_prefix}:session:{digest}"

    async def open(self, login: str, ttl_s: int) -> str:
        """A new session of `login` for `ttl_s`; returns its id (for the cookie only)."""
        session_id = secrets.token_urlsafe(32)
        try:
            await self.redis.set(self._key(session_id), login.encode(), ex=ttl_s)
        except (RedisError, OSError) as error:
            raise SessionsUnavailable(type(error).__name__) from None
        return session_id

    async def login_of(self, session_id: str) -> str | None:
        """The login whose open session this is; None for one revoked, expired or unknown."""
        try:
            value = await self.redis.get(self._key(session_id))
        except (RedisError, OSError) as error:
            raise SessionsUnavailable(type(error).__name__) from None
        if value is None:
            return None
        return value.decode() if isinstance(value, bytes) else str(value)

    async def revoke(self, session_id: str) -> None:
        """End the session now, wherever its cookie is."""
        try:
            await self.redis.delete(self._key(session_id))
        except (RedisError, OSError) as error:
            raise SessionsUnavailable(type(error).__name__) from None
