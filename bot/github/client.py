"""The one GitHub client factory: App and installation clients, and a token client.

Every client is a `githubkit.GitHub` built from the same parts:
- `base_url` from `GITHUB_API_URL` (GitHub Enterprise Server: https://HOST/api/v3);
- the `X-GitHub-Api-Version` header from `COUNCIL_GITHUB_API_VERSION` on every request,
  set by an httpx event hook (githubkit's generated methods send their schema's version);
- githubkit's `auto_retry`, with a policy that honours `retry-after` on secondary rate
  limits (and waits out a primary one if the reset is near), retries 5xx, and counts waits;
- a throttler that paces content-creating calls per installation (`pacing.py`);
- `GITHUB_CALLS` counted by method and status for every response, token requests included.

Installation tokens (and the App's JWT) live in githubkit's Redis cache strategy, so every
worker on the same Redis shares one token per installation until it nears expiry.

    app = GitHubApp(settings, redis)
    login = await app.app_login()                  # "my-app[bot]"
    async with app.for_installation(installation_id, "owner/repo") as gh:
        pull = await fetch_pull(gh, 7)
"""

from __future__ import annotations

import ssl
from collections.abc import Awaitable, Callable
from datetime import timedelta
from functools import lru_cache
from types import TracebackType
from typing import Any, Self

import httpx
import structlog
from githubkit import AppAuthStrategy, AppInstallationAuthStrategy, GitHub, TokenAuthStrategy
from githubkit.auth.app import AppAuth
from githubkit.cache import AsyncRedisCacheStrategy, BaseCacheStrategy, MemCacheStrategy
from githubkit.exception import GitHubException, RateLimitExceeded
from githubkit.retry import RetryServerError
from githubkit.typing import RetryOption
from githubkit.versions import RestVersionSwitcher
from pydantic import BaseModel, ConfigDict
from redis.asyncio import Redis

from bot.github.errors import github_errors
from bot.github.pacing import LocalPacer, Pacer, PacingThrottler, RedisPacer
from bot.metrics import GITHUB_CALLS, GITHUB_RATE_LIMIT_WAIT_SECONDS, GITHUB_RATE_LIMIT_WAITS
from bot.settings import MissingSettingError, Settings, private_key

__all__ = ["GitHubApp", "RateLimitRetry", "RepoClient", "RepoRef"]

log = structlog.get_logger(__name__)

USER_AGENT = "pr-council"
REQUEST_TIMEOUT_S = 30.0
DEFAULT_KEY_PREFIX = "council:github"


class RepoRef(BaseModel):
    """A repository by owner and name."""

    model_config = ConfigDict(frozen=True)

    owner: str
    name: str

    @classmethod
    def parse(cls, full_name: str) -> RepoRef:
        owner, sep, name = full_name.strip().partition("/")
        if not sep or not owner or not name or "/" in name:
            raise ValueError(f"not an owner/name repository: {full_name!r}")
        return cls(owner=owner, name=name)

    @property
    def full_name(self) -> str:
        return f"{self.owner}/{self.name}"


# --------------------------------------------------------------------------------------------
# Retries, hooks, redaction
# --------------------------------------------------------------------------------------------


class RateLimitRetry:
    """githubkit's retry decision: rate limits per `retry-after`, then 5xx with backoff.

    A wait longer than `max_wait` (a primary limit resetting in an hour) is not slept
    through inside a job: the call fails with `GitHubRateLimited` instead.
    """

    def __init__(self, *, max_retries: int = 2, max_wait: timedelta = timedelta(minutes=5)) -> None:
        self.max_retries = max_retries
        self.max_wait = max_wait
        self._server_errors = RetryServerError()

    def __call__(self, exc: GitHubException, retry_count: int) -> RetryOption:
        if isinstance(exc, RateLimitExceeded):
            wait = exc.retry_after
            if retry_count >= self.max_retries or wait > self.max_wait:
                return RetryOption(False)
            GITHUB_RATE_LIMIT_WAITS.inc()
            GITHUB_RATE_LIMIT_WAIT_SECONDS.inc(wait.total_seconds())
            log.warning(
                "github_rate_limited",
                kind=type(exc).__name__,
                method=exc.request.method,
                path=exc.request.url.path,
                wait_s=wait.total_seconds(),
            )
            # githubkit sleeps 60 s for a falsy timedelta; "retry-after: 0" means now.
            return RetryOption(True, wait or timedelta(microseconds=1))
        return self._server_errors(exc, retry_count)


def _api_version_hook(version: str) -> Callable[[httpx.Request], Awaitable[None]]:
    async def set_version(request: httpx.Request) -> None:
        request.headers["X-GitHub-Api-Version"] = version

    return set_version


async def _count_call(response: httpx.Response) -> None:
    GITHUB_CALLS.labels(method=response.request.method, status=str(response.status_code)).inc()


class _RedactedAppAuth(AppAuth):
    def __repr__(self) -> str:  # the dataclass repr would print the private key
        return f"AppAuth(app_id={self.app_id!r}, installation_id={self.installation_id!r})"


class _AppAuthStrategy(AppAuthStrategy):
    def __repr__(self) -> str:
        return f"AppAuthStrategy(app_id={self.app_id!r})"

    def as_installation(
        self, installation_id: int, *args: Any, **kwargs: Any
    ) -> AppInstallationAuthStrategy:
        return _InstallationAuthStrategy(self.app_id, self.private_key, installation_id)

    def get_auth_flow(self, github: Any) -> httpx.Auth:
        return _RedactedAppAuth(github, self.app_id, self.private_key)


class _InstallationAuthStrategy(AppInstallationAuthStrategy):
    def __repr__(self) -> str:
        return (
            f"AppInstallationAuthStrategy(app_id={self.app_id!r}, "
            f"installation_id={self.installation_id!r})"
        )

    def get_auth_flow(self, github: Any) -> httpx.Auth:
        return _RedactedAppAuth(
            github, self.app_id, self.private_key, installation_id=self.installation_id
        )


class _TokenAuthStrategy(TokenAuthStrategy):
    def __repr__(self) -> str:
        return "TokenAuthStrategy(token=***)"


@lru_cache(maxsize=1)
def _ssl_context() -> ssl.SSLContext:
    # httpx builds a context (loading the CA bundle, ~20 ms) for every client, and githubkit
    # makes a client per call outside `async with`: build it once (SSL_CERT_FILE honoured).
    return httpx.create_ssl_context()


def _build(
    auth: Any,
    settings: Settings,
    *,
    cache: BaseCacheStrategy,
    pacer: Pacer,
    pace_key: str,
    retry: RateLimitRetry,
) -> GitHub[Any]:
    return GitHub(
        auth,
        base_url=settings.github_api_url,
        user_agent=USER_AGENT,
        timeout=REQUEST_TIMEOUT_S,
        ssl_verify=_ssl_context(),
        cache_strategy=cache,
        # Conditional-request caching of API answers is not worth storing diffs in Redis.
        http_cache=False,
        throttler=PacingThrottler(pacer, pace_key, settings.content_pacing_s),
        auto_retry=retry,
        async_event_hooks={
            "request": [_api_version_hook(settings.github_api_version)],
            "response": [_count_call],
        },
    )


# --------------------------------------------------------------------------------------------
# Clients
# --------------------------------------------------------------------------------------------


class RepoClient:
    """A githubkit client bound to one repository (and installation, if any).

    Use it as an async context manager to share one connection pool across its calls;
    without one, each call opens and closes its own connection.
    """

    def __init__(
        self,
        github: GitHub[Any],
        repo: RepoRef,
        *,
        installation_id: int | None = None,
        app_id: int | None = None,
    ) -> None:
        self.github = github
        self.repo = repo
        self.installation_id = installation_id
        self.app_id = app_id  # set for App clients: filters check runs to our own

    @classmethod
    def from_token(
        cls, token: str, repo: str, settings: Settings, *, retry: RateLimitRetry | None = None
    ) -> RepoClient:
        """A client on a personal or Actions token (`council review --pr`)."""
        github = _build(
            _TokenAuthStrategy(token),
            settings,
            cache=MemCacheStrategy(),
            pacer=LocalPacer(),
            pace_key="token",
            retry=retry or RateLimitRetry(),
        )
        return cls(github, RepoRef.parse(repo))

    @property
    def owner(self) -> str:
        return self.repo.owner

    @property
    def name(self) -> str:
        return self.repo.name

    @property
    def full_name(self) -> str:
        return self.repo.full_name

    @property
    def rest(self) -> RestVersionSwitcher:
        return self.github.rest

    def __repr__(self) -> str:
        return f"RepoClient({self.full_name!r}, installation_id={self.installation_id!r})"

    async def __aenter__(self) -> Self:
        await self.github.__aenter__()  # type: ignore[no-untyped-call]
        return self

    async def __aexit__(
        self,
        exc_type: type[BaseException] | None,
        exc: BaseException | None,
        tb: TracebackType | None,
    ) -> None:
        await self.github.__aexit__(exc_type, exc, tb)


class GitHubApp:
    """The App's credentials, its Redis-backed token cache, and the clients built on them.

    One per process is enough; it holds no connection. `key_prefix` namespaces the Redis
    keys (tokens, JWT, pacing slots): tests give each client its own.
    """

    def __init__(
        self,
        settings: Settings,
        redis: Redis,
        *,
        key_prefix: str = DEFAULT_KEY_PREFIX,
        retry: RateLimitRetry | None = None,
    ) -> None:
        if settings.github_app_id is None:
            raise MissingSettingError("missing required setting: GITHUB_APP_ID")
        self.settings = settings
        self.app_id = settings.github_app_id
        self._auth = _AppAuthStrategy(settings.github_app_id, private_key(settings))
        self._cache = AsyncRedisCacheStrategy(redis, prefix=key_prefix)
        self._pacer = RedisPacer(redis, key_prefix)
        self._retry = retry or RateLimitRetry()
        self._login: str | None = None
        self._installations: dict[str, int] = {}
        self._app_github: GitHub[Any] | None = None

    def __repr__(self) -> str:
        return f"GitHubApp(app_id={self.app_id!r})"

    def _client(self, auth: Any, pace_key: str) -> GitHub[Any]:
        return _build(
            auth,
            self.settings,
            cache=self._cache,
            pacer=self._pacer,
            pace_key=pace_key,
            retry=self._retry,
        )

    def app_client(self) -> GitHub[Any]:
        """Authenticated as the App itself (JWT): `/app` and installation lookups.

        One, kept: githubkit's `rest` namespace only holds a weak reference to its client."""
        if self._app_github is None:
            self._app_github = self._client(self._auth, "app")
        return self._app_github

    def installation_client(self, installation_id: int) -> GitHub[Any]:
        """Authenticated as one installation (its token, shared through Redis)."""
        auth = self._auth.as_installation(installation_id)
        return self._client(auth, f"installation:{installation_id}")

    def for_installation(self, installation_id: int, repo: str) -> RepoClient:
        return RepoClient(
            self.installation_client(installation_id),
            RepoRef.parse(repo),
            installation_id=installation_id,
            app_id=self.app_id,
        )

    async def app_login(self) -> str:
        """The App's bot login, e.g. `my-app[bot]` (from `GET /app`, asked once)."""
        if self._login is None:
            with github_errors("read the App"):
                response = await self.app_client().rest.apps.async_get_authenticated()
                app = response.parsed_data
            if app is None or not app.slug:
                raise MissingSettingError("GET /app returned no App slug")
            self._login = f"{app.slug}[bot]"
        return self._login

    async def installation_for(self, owner: str, repo: str) -> int:
        """The installation id of the App on a repository (cached per process)."""
        key = f"{owner}/{repo}".lower()
        if key not in self._installations:
            with github_errors("find the installation"):
                response = await self.app_client().rest.apps.async_get_repo_installation(
                    owner, repo
                )
                self._installations[key] = response.parsed_data.id
        return self._installations[key]
