"""Database URLs: plain `sqlite:///x` and `postgresql://...` get their async drivers."""

from __future__ import annotations

from sqlalchemy.engine import URL, make_url

ASYNC_DRIVERS = {
    "sqlite": "sqlite+aiosqlite",
    "postgresql": "postgresql+asyncpg",
    # Heroku-style URLs.
    "postgres": "postgresql+asyncpg",
}


def async_url_object(url: str | URL) -> URL:
    parsed = make_url(url)
    backend = parsed.get_backend_name()
    if backend not in ASYNC_DRIVERS:
        raise ValueError(f"unsupported database backend {backend!r}: use sqlite or postgresql")
    return parsed.set(drivername=ASYNC_DRIVERS[backend])


def async_url(url: str | URL) -> str:
    """The URL with its async driver, as a string that keeps the password."""
    return async_url_object(url).render_as_string(hide_password=False)
