"""A pull request as a review source, and its repository's setup, read through GitHub: the
GitHub wiring of the review (`GitHubForge` over a repository client).

The App's worker and `council review --pr` both come here: the PR at its head, the config
and personas from the default branch.
"""

from __future__ import annotations

import re
from collections.abc import AsyncIterator
from contextlib import asynccontextmanager
from dataclasses import dataclass
from typing import TYPE_CHECKING

from bot.council.personas import Catalog
from bot.forge.cache import MemoryBlobCache
from bot.review.setup import RepoSetup, remote_setup
from bot.review.sources import PullSource
from bot.settings import Settings

if TYPE_CHECKING:
    from bot.config import ConfigResult
    from bot.forge import BlobCache
    from bot.github.client import RepoClient
    from bot.github.fetch import PullInfo

_PR = re.compile(r"^(?P<repo>[A-Za-z0-9_.-]+/[A-Za-z0-9_.-]+)#(?P<number>[1-9][0-9]*)$")


class PullRefError(ValueError):
    """A --pr value that is not OWNER/REPO#N, no token to read it with, or a PR that
    cannot be read; the message says which."""


def parse_pr(text: str) -> tuple[str, int]:
    match = _PR.match(text.strip())
    if match is None:
        raise PullRefError(f"--pr takes OWNER/REPO#NUMBER, not {text!r}")
    return match["repo"], int(match["number"])


async def read_repo_config(
    client: RepoClient, pull: PullInfo, settings: Settings, cache: BlobCache | None = None
) -> tuple[str | None, ConfigResult]:
    """`.github/council.yml` from the default branch, validated without personas (what
    admission needs before it pays a read per persona file). Read from the branch's tree
    (which the personas and guidance use again) and `cache`."""
    from bot.config.load import load_repo_config
    from bot.github.forge import GitHubForge

    forge = GitHubForge(client)
    text = await forge.setup_config(pull.default_branch, cache or MemoryBlobCache())
    return text, load_repo_config(text, settings)


async def pull_setup(
    client: RepoClient,
    pull: PullInfo,
    settings: Settings,
    base: Catalog,
    text: str | None,
    cache: BlobCache | None = None,
) -> RepoSetup:
    """The repo's personas from the default branch over `base`, and its config (`text`,
    from `read_repo_config`) validated against them. The personas come from the default
    branch's tree (read once per client: the guidance uses it again) and `cache`."""
    from bot.github.forge import GitHubForge

    async def agents() -> dict[str, str]:
        forge = GitHubForge(client)
        return await forge.setup_agents(pull.default_branch, cache or MemoryBlobCache())

    return await remote_setup(text, agents, settings, base, pull.default_branch)


@dataclass
class OpenedPull:
    source: PullSource
    setup: RepoSetup


@asynccontextmanager
async def open_pull(settings: Settings, pr: str, base: Catalog) -> AsyncIterator[OpenedPull]:
    """`council review --pr OWNER/REPO#N` with GITHUB_TOKEN: the PR and its setup, read as
    the App reads them. GitHub errors become `PullRefError`."""
    from bot.forge.errors import ForgeError
    from bot.github.client import RepoClient
    from bot.github.fetch import fetch_pull
    from bot.github.forge import GitHubForge

    repo, number = parse_pr(pr)
    if settings.github_token is None:
        raise PullRefError("--pr needs GITHUB_TOKEN (a token that can read the repository)")
    token = settings.github_token.get_secret_value()
    async with RepoClient.from_token(token, repo, settings) as client:
        try:
            pull = await fetch_pull(client, number)
            cache = MemoryBlobCache()  # one run: config, personas and files share it
            text, _ = await read_repo_config(client, pull, settings, cache)
            setup = await pull_setup(client, pull, settings, base, text, cache)
            source = PullSource(
                GitHubForge(client), pull, cache=cache, archive_max_bytes=settings.archive_max_bytes
            )
            yield OpenedPull(source, setup)
        except ForgeError as error:  # reading the PR, or its files while gathering
            raise PullRefError(f"cannot read {pr}: {error}") from None
