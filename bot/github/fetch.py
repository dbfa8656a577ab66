"""Reading a pull request and its repository: our own small result types, never dicts.

Files at the head are read from the BASE repository by commit SHA: a fork's commits live
in the base repository's network, and the installation may not see the fork at all. The
repo's configuration and agents are read from the default branch only, never from the PR.
"""

from __future__ import annotations

import base64
from urllib.parse import quote

from githubkit.rest.paginator import Paginator
from githubkit_schemas.latest.models import Commit, ContentFile, DiffEntry
from pydantic import BaseModel

from bot.config import AGENTS_DIR, CONFIG_PATH
from bot.forge.errors import ForgeError, ForgeNotFound
from bot.forge.types import PullDiff, PullFile, PullInfo
from bot.github.client import RepoClient
from bot.github.errors import github_errors
from bot.github.files_diff import MAX_FILES, diff_from_files, refusal, skipped_reason

__all__ = [
    "AGENTS_DIR",
    "CONFIG_PATH",
    "PullDiff",
    "PullFile",
    "PullInfo",
    "commit_messages",
    "fetch_diff",
    "fetch_pull",
    "list_files",
    "list_tree",
    "read_agents",
    "read_config",
    "read_file",
]

MAX_AGENT_FILES = 50
PER_PAGE = 100
DIFF_MEDIA_TYPE = "application/vnd.github.diff"
RAW_MEDIA_TYPE = "application/vnd.github.raw"

# -- the pull request ------------------------------------------------------------------------
# Parsed with our own narrow models: githubkit's generated PullRequest requires keys (e.g.
# `labels[].archived_by`) that GitHub's own example payloads lack, and we need ten fields.


class _Login(BaseModel):
    login: str


class _Repo(BaseModel):
    full_name: str
    default_branch: str = "main"


class _Branch(BaseModel):
    ref: str
    sha: str
    repo: _Repo | None = None


class _Label(BaseModel):
    name: str


class _Pull(BaseModel):
    number: int
    title: str
    body: str | None = None
    state: str
    draft: bool = False
    merged: bool = False
    user: _Login | None = None
    labels: list[_Label] = []
    head: _Branch
    base: _Branch


async def fetch_pull(client: RepoClient, number: int) -> PullInfo:
    with github_errors("fetch the pull request"):
        response = await client.rest.pulls.async_get(client.owner, client.name, number)
        wire = _Pull.model_validate_json(response.content)
    base_repo = wire.base.repo or _Repo(full_name=client.full_name)
    return PullInfo(
        number=wire.number,
        title=wire.title,
        body=wire.body or "",
        head_sha=wire.head.sha,
        head_ref=wire.head.ref,
        head_repo=wire.head.repo.full_name if wire.head.repo else None,
        base_ref=wire.base.ref,
        base_repo=base_repo.full_name,
        default_branch=base_repo.default_branch,
        draft=wire.draft,
        state=wire.state,
        merged=wire.merged,
        labels=[label.name for label in wire.labels],
        author_login=wire.user.login if wire.user else "",
    )


# -- diff, files, commits --------------------------------------------------------------------


async def list_files(client: RepoClient, number: int, *, limit: int = 3_000) -> list[PullFile]:
    """Every changed file (GitHub lists at most 3,000: 30 pages of 100)."""
    files: list[PullFile] = []
    with github_errors("list the pull request's files"):
        pages: Paginator[DiffEntry] = client.rest.paginate(
            client.rest.pulls.async_list_files,
            owner=client.owner,
            repo=client.name,
            pull_number=number,
            per_page=PER_PAGE,
        )
        async for entry in pages:
            files.append(
                PullFile(
                    path=entry.filename,
                    status=entry.status,
                    additions=entry.additions,
                    deletions=entry.deletions,
                    previous_path=entry.previous_filename or None,
                    patch=entry.patch or None,
                )
            )
            if len(files) >= limit:
                break
    return files


async def fetch_diff(client: RepoClient, number: int) -> PullDiff:
    """The unified diff; rebuilt from the files' patches when GitHub says it is too large."""
    try:
        with github_errors("fetch the diff"):
            response = await client.rest.pulls.async_get(
                client.owner, client.name, number, headers={"Accept": DIFF_MEDIA_TYPE}
            )
            return PullDiff(text=response.text)
    except ForgeError as exc:
        # 406 "too_large": over 300 files or 20,000 lines (or too slow to generate).
        if exc.status != 406:
            raise
        message = exc.reason
    files = await list_files(client, number, limit=MAX_FILES)
    reasons = {f.path: skipped_reason(f) for f in files}
    return PullDiff(
        text=diff_from_files(files),
        rebuilt_from_files=True,
        files_without_patch=[f.path for f in files if f.patch is None],
        refused=refusal(message),
        skipped={path: why for path, why in reasons.items() if why is not None},
        listed=len(files),
        capped=len(files) >= MAX_FILES,
    )


async def commit_messages(client: RepoClient, number: int) -> list[str]:
    """The PR's commit messages, oldest first (GitHub lists at most 250)."""
    with github_errors("list the pull request's commits"):
        pages: Paginator[Commit] = client.rest.paginate(
            client.rest.pulls.async_list_commits,
            owner=client.owner,
            repo=client.name,
            pull_number=number,
            per_page=PER_PAGE,
        )
        return [commit.commit.message async for commit in pages]


# -- repository contents ---------------------------------------------------------------------


async def read_file(client: RepoClient, path: str, ref: str) -> bytes | None:
    """A file's bytes at `ref`, or None if there is no file there (absent, a directory...)."""
    quoted = quote(path.strip("/"), safe="/")
    try:
        with github_errors("read a file"):
            response = await client.rest.repos.async_get_content(
                client.owner, client.name, quoted, ref=ref
            )
            item = response.parsed_data
    except ForgeNotFound:
        return None
    if not isinstance(item, ContentFile):
        return None
    if item.encoding == "base64":
        return base64.b64decode(item.content)
    # Files over 1 MB come with encoding "none": ask for the raw bytes instead.
    with github_errors("read a large file"):
        raw = await client.rest.repos.async_get_content(
            client.owner, client.name, quoted, ref=ref, headers={"Accept": RAW_MEDIA_TYPE}
        )
        return raw.content


async def list_tree(client: RepoClient, ref: str) -> tuple[list[str], bool]:
    """Every file path at `ref`, and whether GitHub truncated the listing."""
    with github_errors("list the tree"):
        response = await client.rest.git.async_get_tree(
            client.owner, client.name, quote(ref, safe=""), recursive="1"
        )
        tree = response.parsed_data
    return [entry.path for entry in tree.tree if entry.type == "blob"], tree.truncated


async def read_config(client: RepoClient, default_branch: str) -> str | None:
    """`.github/council.yml` from the default branch, or None if there is none."""
    data = await read_file(client, CONFIG_PATH, default_branch)
    return None if data is None else data.decode("utf-8", errors="replace")


async def read_agents(client: RepoClient, default_branch: str) -> dict[str, str]:
    """`.github/council/agents/*.md` from the default branch: repo path -> text."""
    try:
        with github_errors("list the agents"):
            response = await client.rest.repos.async_get_content(
                client.owner, client.name, AGENTS_DIR, ref=default_branch
            )
            listing = response.parsed_data
    except ForgeNotFound:
        return {}
    if not isinstance(listing, list):
        return {}
    paths = sorted(
        item.path
        for item in listing
        if item.type == "file" and item.name.endswith(".md") and not item.name.startswith(".")
    )[:MAX_AGENT_FILES]
    agents: dict[str, str] = {}
    for path in paths:
        data = await read_file(client, path, default_branch)
        if data is not None:
            agents[path] = data.decode("utf-8", errors="replace")
    return agents
