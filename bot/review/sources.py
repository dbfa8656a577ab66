"""Where a change comes from: the local repository, a diff file, or a pull request.

Each source gathers the same thing, a built context for a token budget, so everything after
it (inputs, seats, prompts, the engine) is the same whichever source it was.
"""

from __future__ import annotations

from collections.abc import Awaitable, Sequence
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Protocol

from bot.context import (
    BuiltContext,
    GuidanceSource,
    PullRequestMeta,
    build_context,
    clean_untrusted,
)
from bot.context.diff import nothing_to_review
from bot.review.local import LocalChange, NothingToReview
from bot.review.localrepo import build_local_context

if TYPE_CHECKING:  # githubkit is heavy; a local review never needs it
    from bot.github.client import RepoClient
    from bot.github.fetch import PullInfo


PUSH_A_CHANGE = "push a commit that changes a text line, or comment /council again after one"


@dataclass
class Gathered:
    built: BuiltContext
    notes: list[str] = field(default_factory=list)


class Source(Protocol):
    """A change to review. `compared` says what it is, for the report and errors."""

    @property
    def compared(self) -> str: ...

    @property
    def head_sha(self) -> str | None: ...

    async def gather(self, budget_tokens: int, ignore_globs: Sequence[str]) -> Gathered: ...


@dataclass
class LocalSource:
    """A branch of the repository in the working directory, a diff file, or stdin.

    Everything, the repository's guidance (README, AGENTS.md...) included, is read at HEAD:
    the person running the review owns the tree, so there is no one to guard it from (a
    pull request's guidance comes from its default branch instead, see `PullSource`)."""

    change: LocalChange

    @property
    def compared(self) -> str:
        return self.change.compared

    @property
    def head_sha(self) -> str | None:
        return self.change.head_sha

    async def gather(self, budget_tokens: int, ignore_globs: Sequence[str]) -> Gathered:
        built = await build_local_context(self.change, budget_tokens, ignore_globs=ignore_globs)
        return Gathered(built)


@dataclass
class PullSource:
    """A pull request read through the GitHub API: diff, commits and files at its head (a
    fork's head too: GitHub serves a PR's head commit from the base repository), and the
    repository's guidance from the default branch: the PR's author may change README or
    AGENTS.md, and the change is reviewed in the diff, but it is not what the council is
    told about the repository."""

    client: RepoClient
    pull: PullInfo

    @property
    def compared(self) -> str:
        # Branch names are the PR author's words: cleaned like the rest before they are shown.
        pull = self.pull
        base, head = clean_untrusted(pull.base_ref), clean_untrusted(pull.head_ref)
        return f"{base}..{head} ({pull.head_sha[:7]}) of #{pull.number}"

    @property
    def head_sha(self) -> str | None:
        return self.pull.head_sha

    async def gather(self, budget_tokens: int, ignore_globs: Sequence[str]) -> Gathered:
        from bot.github.fetch import commit_messages, fetch_diff, list_tree, read_file

        client, pull = self.client, self.pull
        files, truncated = await list_tree(client, pull.head_sha)
        diff = await fetch_diff(client, pull.number)
        reason = nothing_to_review(diff.text)
        if reason is not None and not diff.files_without_patch:
            raise NothingToReview(reason, self.compared, PUSH_A_CHANGE)
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
            meta,
            diff.text,
            files,
            reader,
            budget_tokens=budget_tokens,
            ignore_globs=ignore_globs,
            guidance_from=await self._default_branch(),
        )
        notes = []
        if truncated:
            notes.append(
                "GitHub truncated the repository tree: related files may be missing from the "
                "context."
            )
        if diff.rebuilt_from_files and diff.files_without_patch:
            notes.append(
                "GitHub did not show the changes of: "
                + ", ".join(clean_untrusted(p) for p in diff.files_without_patch[:20])
            )
        return Gathered(built, notes)

    async def _default_branch(self) -> GuidanceSource:
        from bot.github.fetch import list_tree, read_file

        client, branch = self.client, self.pull.default_branch
        files, _ = await list_tree(client, branch)

        def reader(path: str) -> Awaitable[bytes | None]:
            return read_file(client, path, branch)

        return GuidanceSource(files, reader, branch)
