"""The one retry loop of every GitHub call: transient failures, rate limits, a stale token.

githubkit's `auto_retry` asks a function (exception, attempt count) -> wait, and sleeps with
`anyio.sleep`: it can neither see how long a call has been failing nor let a test drive the
clock. So the clients in `client.py` turn it off and run each `arequest` through
`RetryPolicy.call`:

- 5xx (500, 502, 503, 504) and failed connections: exponential backoff with jitter (each
  wait capped at `max_delay_s`) while the next try starts within `budget_s` of the first.
  A POST whose connection broke after it was sent may have been done: it is not sent again;
- rate limits: GitHub's `retry-after`, when it ends within the budget; otherwise
  `ForgeRateLimited` at once, for the caller to try again later;
- 401 Bad credentials: the caller's `refresh` forgets the credentials (an installation
  token revoked or expired early) and the call is made again, once.

The token request githubkit makes inside a call fails as `RequestError(its RequestFailed)`:
the loop judges the inner failure, so a 5xx while minting a token is retried too.
"""

from __future__ import annotations

import asyncio
import random
import time
from collections.abc import Awaitable, Callable
from dataclasses import dataclass
from typing import TypeVar

import httpx
import structlog
from githubkit.exception import GitHubException, RateLimitExceeded, RequestError, RequestFailed

from bot.metrics import GITHUB_RATE_LIMIT_WAIT_SECONDS, GITHUB_RATE_LIMIT_WAITS
from bot.settings import Settings

__all__ = ["TRANSIENT_STATUSES", "Backoff", "RetryPolicy", "cause_of", "is_unauthorized"]

log = structlog.get_logger(__name__)

T = TypeVar("T")

TRANSIENT_STATUSES = frozenset({500, 502, 503, 504})
# The request never reached GitHub: sending it again cannot do anything twice.
_NOT_SENT = (httpx.ConnectError, httpx.ConnectTimeout, httpx.PoolTimeout)
# The connection failed while the request or its answer was under way.
_BROKEN = (httpx.TimeoutException, httpx.NetworkError, httpx.RemoteProtocolError)

Refresh = Callable[[GitHubException], Awaitable[bool]]


@dataclass(frozen=True)
class Backoff:
    """Waits of 1, 2, 4, ... s (times a jitter in [0.5, 1]), each at most `max_delay_s`,
    while the next try would start within `budget_s` of the first."""

    budget_s: float = 180.0
    first_s: float = 1.0
    max_delay_s: float = 30.0

    def delay(self, retry: int, draw: float) -> float:
        """The wait before try `retry + 1`; `draw` in [0, 1) picks the jitter."""
        ceiling = min(self.max_delay_s, self.first_s * 2.0 ** min(retry, 32))
        return ceiling * (0.5 + 0.5 * draw)


def cause_of(exc: GitHubException) -> GitHubException:
    """The failure to judge: the token request's own, when githubkit wrapped it."""
    if type(exc) is RequestError and isinstance(exc.exc, GitHubException):
        return exc.exc
    return exc


def is_unauthorized(exc: GitHubException) -> bool:
    return isinstance(exc, RequestFailed) and exc.response.status_code == 401


def _transient(exc: GitHubException, method: str) -> bool:
    if isinstance(exc, RequestFailed):
        return exc.response.status_code in TRANSIENT_STATUSES
    if isinstance(exc, RequestError):  # RequestTimeout included
        if isinstance(exc.exc, _NOT_SENT):
            return True
        return method.upper() != "POST" and isinstance(exc.exc, _BROKEN)
    return False


def _describe(exc: GitHubException) -> str:
    if isinstance(exc, RequestFailed):
        return str(exc.response.status_code)
    inner = exc.exc if isinstance(exc, RequestError) else exc
    return type(inner).__name__


class RetryPolicy:
    """How every GitHub call is tried again. `clock`, `sleep` and `draw` (the jitter's
    random number) are injectable, so a test can run the schedule without waiting."""

    def __init__(
        self,
        backoff: Backoff | None = None,
        *,
        clock: Callable[[], float] = time.monotonic,
        sleep: Callable[[float], Awaitable[None]] = asyncio.sleep,
        draw: Callable[[], float] = random.random,
    ) -> None:
        self.backoff = backoff or Backoff()
        self._clock = clock
        self._sleep = sleep
        self._draw = draw

    @classmethod
    def from_settings(cls, settings: Settings) -> RetryPolicy:
        return cls(
            Backoff(
                budget_s=settings.github_retry_budget_s,
                max_delay_s=settings.github_retry_max_delay_s,
            )
        )

    async def call(
        self,
        attempt: Callable[[], Awaitable[T]],
        *,
        method: str = "GET",
        path: str = "",
        refresh: Refresh | None = None,
    ) -> T:
        """`attempt()` until it succeeds, the failure is not worth another try, or the
        budget is spent; then githubkit's exception for the last try is raised."""
        started = self._clock()
        retry = 0
        refreshed = refresh is None
        while True:
            try:
                return await attempt()
            except GitHubException as exc:
                cause = cause_of(exc)
                if is_unauthorized(cause) and not refreshed:
                    refreshed = True
                    assert refresh is not None
                    if await refresh(cause):
                        log.info("github_credentials_renewed", method=method, path=path)
                        continue
                    raise
                wait = self._wait(cause, method, retry, self._clock() - started)
                if wait is None:
                    raise
                self._note(cause, method, path, retry, wait)
            await self._sleep(wait)
            retry += 1

    def _wait(self, exc: GitHubException, method: str, retry: int, elapsed: float) -> float | None:
        """Seconds to wait before the next try, or None: give up now."""
        if isinstance(exc, RateLimitExceeded):
            wait = exc.retry_after.total_seconds()
        elif _transient(exc, method):
            wait = self.backoff.delay(retry, self._draw())
        else:
            return None
        return wait if elapsed + wait <= self.backoff.budget_s else None

    def _note(self, exc: GitHubException, method: str, path: str, retry: int, wait: float) -> None:
        if isinstance(exc, RateLimitExceeded):
            GITHUB_RATE_LIMIT_WAITS.inc()
            GITHUB_RATE_LIMIT_WAIT_SECONDS.inc(wait)
            log.warning(
                "github_rate_limited",
                kind=type(exc).__name__,
                method=method,
                path=path,
                wait_s=wait,
            )
            return
        log.warning(
            "github_retry",
            method=method,
            path=path,
            failure=_describe(exc),
            retry=retry + 1,
            wait_s=round(wait, 3),
        )
