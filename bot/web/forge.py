"""The web's GitHub wiring: who may read what the App keeps about a repository. The
transcript and stats pages ask here, at request time, with the App's own credentials (the
reader's token is never kept).

A repository is readable by a login when the App is installed on it (`GET
/repos/{o}/{r}/installation` with the App's JWT answers) and the collaborator-permission API
(with that installation's token) gives the login anything but `none` - for a public
repository GitHub answers `read` for everyone, for a private one only for people who can
see it.
"""

from __future__ import annotations

from collections.abc import Iterable

from redis.asyncio import Redis

from bot.forge.errors import ForgeError, ForgeNotFound
from bot.github.client import GitHubApp, RepoRef
from bot.github.errors import github_errors
from bot.github.permissions import permission
from bot.github.retry import Backoff, RetryPolicy
from bot.settings import Settings

__all__ = ["READ_PERMISSIONS", "AccessUnknown", "RepoReaders"]

READ_PERMISSIONS = frozenset({"admin", "maintain", "write", "triage", "read"})
# A page view waits for GitHub a little, not for the workers' whole retry budget.
_PAGE_RETRY_BUDGET_S = 5.0
_PAGE_RETRY_MAX_DELAY_S = 1.0


class AccessUnknown(Exception):
    """GitHub did not answer the access check (an outage, a rate limit): neither yes nor no."""


class RepoReaders:
    """Answers "may this login read this repository, and is the App installed on it"."""

    def __init__(self, settings: Settings, redis: Redis) -> None:
        retry = RetryPolicy(
            Backoff(budget_s=_PAGE_RETRY_BUDGET_S, max_delay_s=_PAGE_RETRY_MAX_DELAY_S)
        )
        # The workers' key prefix: installation tokens are shared with them through Redis.
        self.github = GitHubApp(
            settings, redis, key_prefix=f"{settings.key_prefix}:github", retry=retry
        )

    async def installation(self, repo: str) -> int | None:
        """The App's installation on `repo`, None when it is not installed there (asked
        each time: an App uninstalled a minute ago shows nothing)."""
        ref = RepoRef.parse(repo)
        try:
            with github_errors("find the installation"):
                response = await self.github.app_client().rest.apps.async_get_repo_installation(
                    ref.owner, ref.name
                )
        except ForgeNotFound:
            return None
        return response.parsed_data.id

    async def can_read(self, repo: str, login: str) -> bool:
        """The App is installed on `repo` and `login` can read it; raises `AccessUnknown`
        when GitHub does not say. Not an owner/name (a local run's record): False."""
        try:
            RepoRef.parse(repo)
        except ValueError:
            return False
        try:
            installation = await self.installation(repo)
            if installation is None:
                return False
            return await self.can_read_installed(installation, repo, login)
        except ForgeError as error:
            raise AccessUnknown(str(error)) from error

    async def can_read_installed(self, installation: int, repo: str, login: str) -> bool:
        async with self.github.for_installation(installation, repo) as client:
            return await permission(client, login) in READ_PERMISSIONS

    async def readable(self, repos: Iterable[str], login: str) -> list[str]:
        """Of `repos`, the ones `login` can read (and the App is still installed on)."""
        return [repo for repo in sorted(set(repos)) if await self.can_read(repo, login)]
