"""Reading a pull request through the GitHub API into the context every seat reads.

Shared by the worker and `council review --pr`, so both see exactly the same material.
"""

from __future__ import annotations

from collections.abc import Awaitable, Sequence
from dataclasses import dataclass, field

from bot.context.build import build_context
from bot.context.models import BuiltContext, PullRequestMeta
from bot.github.client import RepoClient
from bot.github.fetch import (
    PullInfo,
    commit_messages,
    fetch_diff,
    list_tree,
    read_file,
)


@dataclass
class PullContext:
    built: BuiltContext
    notes: list[str] = field(default_factory=list)


async def pull_context(
    client: RepoClient, pull: PullInfo, *, budget_tokens: int, ignore_globs: Sequence[str] = ()
) -> PullContext:
    """Diff, commits and files at the head commit (a fork's head too: GitHub serves a PR's
    head commit from the base repository), packed to the budget."""
    files, truncated = await list_tree(client, pull.head_sha)
    diff = await fetch_diff(client, pull.number)
    meta = PullRequestMeta(
        title=pull.title,
        body=pull.body,
        commit_messages=await commit_messages(client, pull.number),
        base_ref=pull.base_ref,
        head_ref=pull.head_ref,
    )

    def reader(path: str) -> Awaitable[bytes | None]:
        return read_file(client, path, pull.head_sha)

    built = await build_context(
        meta, diff.text, files, reader, budget_tokens=budget_tokens, ignore_globs=ignore_globs
    )
    notes = []
    if truncated:
        notes.append(
            "GitHub truncated the repository tree: related files may be missing from the context."
        )
    if diff.rebuilt_from_files and diff.files_without_patch:
        notes.append(
            "GitHub did not show the changes of: " + ", ".join(diff.files_without_patch[:20])
        )
    return PullContext(built, notes)
