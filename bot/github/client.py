"""The one GitHub client factory: App and installation clients, and a token client.

Every client is a `githubkit.GitHub` built from the same parts:
- `base_url` from `GITHUB_API_URL` (GitHub Enterprise Server: https://HOST/api/v3);
- the `X-GitHub-Api-Version` header from `COUNCIL_GITHUB_API_VERSION` on every request,
  set by an httpx event hook (githubkit's generated methods send their schema's version);
- one retry loop around every request (`retry.py`, githubkit's own `auto_retry` off):
  5xx and lost connections with backoff and jitter for a bounded time, rate limits per
  `retry-after`, and a new installation token once after a 401;
- a throttler that paces content-creating calls per installation (`pacing.py`);
- `GITHUB_CALLS` counted by method and status for every response, token requests included.
- for installation clients, the requests left in the rate limit recorded from every answer
  (`ratelimit.py`), for reviews to wait on when they run low.

Installation tokens (and the App's JWT) live in githubkit's Redis cache strategy, so every
worker on the same Redis shares one token per installation until it nears expiry - or until
GitHub answers 401 to it (revoked, or expired early): then the first worker to see that
deletes it from Redis, the next request mints a new one, and every worker uses that. No
copy is kept in memory (githubkit reads the cache on every request).

    app = GitHubApp(settings, redis)
    login = await app.app_login()                  # "my-app[bot]"
    async with app.for_installation(installation_id, "owner/repo") as gh:
        pull = await fetch_pull(gh, 7)
"""

from __future__ import annotations

import ssl
from collections.abc import Awaitable, Callable
from functools import lru_cache
from types import TracebackType
from typing import Any, Self, cast

import httpx
import structlog
from githubkit import (
    AppAuthStrategy,
    AppInstallationAuthStrategy,
    GitHub,
    Response,
    TokenAuthStrategy,
)
from githubkit.auth.app import AppAuth
from githubkit.cache import AsyncRedisCacheStrategy, BaseCacheStrategy, MemCacheStrategy
from githubkit.exception import GitHubException, RequestFailed
from githubkit.utils import UNSET
from githubkit.versions import RestVersionSwitcher
from pydantic import BaseModel, ConfigDict
from redis.asyncio import Redis

from bot.github.errors import github_errors
from bot.github.pacing import LocalPacer, Pacer, PacingThrottler, RedisPacer
from bot.github.ratelimit import RateWatch
from bot.github.retry import RetryPolicy
from bot.metrics import GITHUB_CALLS
from bot.settings import MissingSettingError, Settings, private_key

__all__ = ["GitHubApp", "RepoClient", "RepoRef", "RetryPolicy"]

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
# Retries, token renewal, hooks, redaction
# --------------------------------------------------------------------------------------------


class _RedisTokenCache(AsyncRedisCacheStrategy):
    """githubkit's Redis cache, plus forgetting a credential GitHub no longer takes."""

    # Delete the key only if it still holds the credential that failed: another worker
    # may have put a new one there already.
    _FORGET = """
if redis.call('GET', KEYS[1]) == ARGV[1] then
  return redis.call('DEL', KEYS[1])
end
return 0
"""

    async def forget(self, key: str, value: str) -> None:
        name = f"{self.prefix}:{key}" if self.prefix else key
        await cast(Any, self.client.eval(self._FORGET, 1, name, value))


async def _renew_credentials(github: GitHub[Any], failed: GitHubException) -> bool:
    """After a 401: forget the installation token (or the App's JWT) the request carried.
    True when a new one can be had; a personal token cannot be renewed."""
    flow = github.auth.get_auth_flow(github)
    cache = github.config.cache_strategy
    if not isinstance(flow, AppAuth) or not isinstance(cache, _RedisTokenCache):
        return False
    if not isinstance(failed, RequestFailed):
        return False
    scheme, _, used = failed.request.headers.get("authorization", "").partition(" ")
    if not used:
        return False
    if scheme.lower() == "bearer":  # the JWT: the App's own routes, or minting a token
        await cache.forget(flow._get_jwt_cache_key(), used)
    elif flow.installation_id is not UNSET:
        await cache.forget(flow._get_installation_cache_key(), used)
    else:
        return False
    log.warning("github_credentials_rejected", scheme=scheme.lower(), path=failed.request.url.path)
    return True


class _RetryingGitHub(GitHub[Any]):
    """githubkit's client with our retry loop around every request (REST, pagination and
    GraphQL all come through `arequest`)."""

    retry_policy: RetryPolicy = RetryPolicy()  # `_build` sets the settings' policy

    async def arequest(self, method: str, url: str | httpx.URL, **kwargs: Any) -> Response[Any]:
        send = super().arequest

        async def attempt() -> Response[Any]:
            response: Response[Any] = await send(method, url, **kwargs)
            return response

        async def refresh(failed: GitHubException) -> bool:
            return await _renew_credentials(self, failed)

        path = httpx.URL(str(url)).path
        return await self.retry_policy.call(attempt, method=method, path=path, refresh=refresh)


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
    retry: RetryPolicy,
    on_response: tuple[Callable[[httpx.Response], Awaitable[None]], ...] = (),
) -> GitHub[Any]:
    github = _RetryingGitHub(
        auth,
        base_url=settings.github_api_url,
        user_agent=USER_AGENT,
        timeout=REQUEST_TIMEOUT_S,
        ssl_verify=_ssl_context(),
        cache_strategy=cache,
        # Conditional-request caching of API answers is not worth storing diffs in Redis.
        http_cache=False,
        throttler=PacingThrottler(pacer, pace_key, settings.content_pacing_s),
        auto_retry=False,  # `_RetryingGitHub` retries, with a budget and a clock of its own
        async_event_hooks={
            "request": [_api_version_hook(settings.github_api_version)],
            "response": [_count_call, *on_response],
        },
    )
    github.retry_policy = retry
    return github


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
        # Trees read through this client, by ref (`bot.github.snapshot.read_tree`): a job
        # reads its default branch's tree once, for personas and guidance alike.
        self.trees: dict[str, Any] = {}

    @classmethod
    def from_token(
        cls, token: str, repo: str, settings: Settings, *, retry: RetryPolicy | None = None
    ) -> RepoClient:
        """A client on a personal or Actions token (`council review --pr`)."""
        github = _build(
            _TokenAuthStrategy(token),
            settings,
            cache=MemCacheStrategy(),
            pacer=LocalPacer(),
            pace_key="token",
            retry=retry or RetryPolicy.from_settings(settings),
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
        retry: RetryPolicy | None = None,
    ) -> None:
        if settings.github_app_id is None:
            raise MissingSettingError("missing required setting: GITHUB_APP_ID")
        self.settings = settings
        self.app_id = settings.github_app_id
        self._auth = _AppAuthStrategy(settings.github_app_id, private_key(settings))
        self._cache = _RedisTokenCache(redis, prefix=key_prefix)
        self._pacer = RedisPacer(redis, key_prefix)
        self.rate_watch = RateWatch(redis, key_prefix)
        self._retry = retry or RetryPolicy.from_settings(settings)
        self._login: str | None = None
        self._installations: dict[str, int] = {}
        self._app_github: GitHub[Any] | None = None

    def __repr__(self) -> str:
        return f"GitHubApp(app_id={self.app_id!r})"

    def _client(
        self,
        auth: Any,
        pace_key: str,
        on_response: tuple[Callable[[httpx.Response], Awaitable[None]], ...] = (),
    ) -> GitHub[Any]:
        return _build(
            auth,
            self.settings,
            cache=self._cache,
            pacer=self._pacer,
            pace_key=pace_key,
            retry=self._retry,
            on_response=on_response,
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
        return self._client(
            auth,
            f"installation:{installation_id}",
            on_response=(self.rate_watch.hook(installation_id),),
        )

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
