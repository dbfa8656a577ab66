"""What every job needs, built once per worker process (arq's on_startup), and the App's
GitHub wiring: the installation's forge and its reads for one job (`connect`)."""

from __future__ import annotations

from collections.abc import AsyncIterator, Sequence
from contextlib import asynccontextmanager
from dataclasses import dataclass

from arq.connections import ArqRedis

from bot.config import ConfigResult
from bot.council.personas import Catalog, load_catalog
from bot.forge import BlobCache, Forge, PullInfo
from bot.github.client import GitHubApp, RepoClient
from bot.github.forge import GitHubForge
from bot.github.snapshot import RedisBlobCache
from bot.pr.ports import RepoReads
from bot.providers import ProviderRegistry
from bot.queue.limits import redis_limiter
from bot.queue.modes import RedisModes
from bot.queue.state import JobState
from bot.review.pull import pull_setup, read_repo_config
from bot.review.setup import RepoSetup
from bot.review.sources import PullSource, Source
from bot.settings import Settings, call_deadline_s
from bot.store.db import Database
from bot.store.findings import PrFinding


@dataclass
class WorkerDeps:
    settings: Settings
    redis: ArqRedis
    db: Database
    github: GitHubApp
    providers: ProviderRegistry
    catalog: Catalog

    @property
    def state(self) -> JobState:
        return JobState(self.redis, self.settings.key_prefix)

    @classmethod
    async def start(cls, settings: Settings, redis: ArqRedis) -> WorkerDeps:
        db = Database(settings.database_url)
        await db.connect()
        limiter = redis_limiter(
            redis, lease_s=call_deadline_s(settings) + 30, prefix=f"{settings.key_prefix}:"
        )
        return cls(
            settings=settings,
            redis=redis,
            db=db,
            github=GitHubApp(settings, redis, key_prefix=f"{settings.key_prefix}:github"),
            providers=ProviderRegistry(
                settings, limiter=limiter, modes=RedisModes(redis, settings.key_prefix)
            ),
            catalog=load_catalog(),
        )

    async def close(self) -> None:
        await self.providers.aclose()
        await self.db.dispose()

    @asynccontextmanager
    async def connect(
        self, installation_id: int, repo: str, *, shared_cache: bool = True
    ) -> AsyncIterator[Connection]:
        """The installation's forge on `repo` and the job's reads through it (`shared_cache`:
        files by blob SHA from the Redis cache every review shares; else one job's own)."""
        async with self.github.for_installation(installation_id, repo) as client:
            yield Connection(GitHubForge(client), GitHubReads(client, self, shared_cache))

    async def app_login(self) -> str:
        """The App's bot login: the author of its sticky comments and review comments."""
        return await self.github.app_login()

    def blob_cache(self) -> RedisBlobCache:
        """Repository files by blob SHA, shared by every review on this Redis."""
        return RedisBlobCache(
            self.redis,
            self.settings.key_prefix,
            max_bytes=self.settings.blob_cache_max_bytes,
            ttl_s=self.settings.blob_cache_ttl_s,
        )


@dataclass(frozen=True)
class Connection:
    forge: Forge
    reads: RepoReads


class GitHubReads:
    """`bot.pr.ports.RepoReads` through an installation's client."""

    def __init__(self, client: RepoClient, deps: WorkerDeps, shared_cache: bool) -> None:
        self.client = client
        self.settings = deps.settings
        self.catalog = deps.catalog
        self.cache: BlobCache | None = deps.blob_cache() if shared_cache else None

    async def config(self, pull: PullInfo) -> tuple[str | None, ConfigResult]:
        return await read_repo_config(self.client, pull, self.settings, self.cache)

    async def setup(self, pull: PullInfo, text: str | None) -> RepoSetup:
        return await pull_setup(self.client, pull, self.settings, self.catalog, text, self.cache)

    def source(
        self,
        pull: PullInfo,
        *,
        since: str | None = None,
        open_findings: Sequence[PrFinding] = (),
    ) -> Source:
        return PullSource(
            GitHubForge(self.client),
            pull,
            cache=self.cache,
            archive_max_bytes=self.settings.archive_max_bytes,
            since=since,
            open_findings=open_findings,
        )
