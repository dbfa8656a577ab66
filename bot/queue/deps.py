"""What every job needs, built once per worker process (arq's on_startup)."""

from __future__ import annotations

from dataclasses import dataclass

from arq.connections import ArqRedis

from bot.council.personas import Catalog, load_catalog
from bot.github.client import GitHubApp
from bot.providers import ProviderRegistry
from bot.queue.limits import redis_limiter
from bot.queue.modes import RedisModes
from bot.queue.state import JobState
from bot.settings import Settings, call_deadline_s
from bot.store.db import Database


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
