"""Where a change comes from: the local repository, a diff file, or a pull request.

Each source gathers the same thing, a built context for a token budget, so everything after
it (inputs, seats, prompts, the engine) is the same whichever source it was.
"""

from __future__ import annotations

import re
from collections.abc import Sequence
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Protocol

from bot.context import (
    BuiltContext,
    GuidanceSource,
    Indexing,
    MemoryFactsCache,
    PullRequestMeta,
    build_context,
    clean_untrusted,
)
from bot.context.diff import nothing_to_review
from bot.context.related import MAX_FILE_BYTES
from bot.forge.cache import MemoryBlobCache
from bot.review.local import LocalChange, NothingToReview
from bot.review.localrepo import build_local_context
from bot.review.pullplan import PullPlan, plan_pull
from bot.review.rereview import head_text_lines

# What each blob of a repository yields to the name index (its words, definitions), by blob
# SHA, for every review this process runs (a worker's next review of the same repository
# reads and parses only the blobs it has not seen). Beside the blob cache, in memory.
FACTS = MemoryFactsCache(max_bytes=64_000_000)

if TYPE_CHECKING:
    from bot.council.scope import ReviewScope
    from bot.forge import BlobCache, Forge, PullInfo, RefFiles
    from bot.review.rereview import FindingTracking
    from bot.store.findings import PrFinding


_CHANGED = re.compile(r"^\+\+\+ b/(.+)$", re.M)  # the changed files' paths at head
PUSH_A_CHANGE = "push a commit that changes a text line, or comment /council again after one"


@dataclass
class Gathered:
    built: BuiltContext
    notes: list[str] = field(default_factory=list)
    # A pull request's: what the review covered (bot.council.scope), how to follow its
    # findings after it (bot.review.rereview), and context sections beyond the change's
    # own ((kind, why, text): the findings still open from the last review).
    scope: ReviewScope | None = None
    tracking: FindingTracking | None = None
    extra: list[tuple[str, str, str]] = field(default_factory=list)
    # A pull request's whole diff as GitHub gave it (or as rebuilt from its files): where
    # inline comments may go. Kept only until the review is published.
    pr_diff: str | None = None


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
    """A pull request read through its forge (`bot.forge.Forge`): diff, commits and files at
    its head (a fork's head too: the forge serves a PR's head commit from the base
    repository), and the repository's guidance from the default branch: the PR's author may
    change README or AGENTS.md, and the change is reviewed in the diff, but it is not what
    the council is told about the repository.

    Files come through `Forge.files_at`: one tree per commit, then `cache` by blob SHA
    (shared across reviews), a few blob reads, and one archive of the commit past those,
    so a review costs a bounded number of requests whatever the context reads."""

    forge: Forge
    pull: PullInfo
    cache: BlobCache | None = None  # None: a cache for this review only
    archive_max_bytes: int = 100_000_000
    # An incremental re-review of a push (bot.review.rereview): the last advisory's head,
    # and the findings still open on the pull request.
    since: str | None = None
    open_findings: Sequence[PrFinding] = ()

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
        pull = self.pull
        cache = self.cache if self.cache is not None else MemoryBlobCache()
        head = await self._files(pull.head_sha, cache)
        async with head:
            diff = await self.forge.diff(pull.number)
            reason = nothing_to_review(diff.text)
            if reason is not None and not diff.files_without_patch:
                raise NothingToReview(reason, self.compared, PUSH_A_CHANGE)
            plan = await plan_pull(self.forge, pull, diff, self.since, self.open_findings)
            await head.expect(_CHANGED.findall(plan.text))
            tracking = plan.tracking
            for path in {f.path for f in self.open_findings}:  # fixed? read their lines
                tracking.head_lines[path] = head_text_lines(await head.read(path))
            meta = await self._meta(plan)
            # The default branch's guidance: a few files, most often the head's own blobs.
            guide = await self._files(pull.default_branch, cache, blob_reads=6, also=(head,))
            async with guide:
                built = await self._build(meta, plan.text, head, guide, budget_tokens, ignore_globs)
        notes = []
        if head.truncated:
            notes.append(
                "GitHub truncated the repository tree: related files may be missing from the "
                "context."
            )
        tracking.reviewed_files = {f.path for f in built.files}
        return Gathered(
            built, notes, scope=plan.scope, tracking=tracking, extra=plan.extra, pr_diff=diff.text
        )

    async def _files(
        self, ref: str, cache: BlobCache, *, blob_reads: int = 3, also: tuple[RefFiles, ...] = ()
    ) -> RefFiles:
        return await self.forge.files_at(
            ref,
            cache,
            max_file_bytes=MAX_FILE_BYTES,
            archive_max_bytes=self.archive_max_bytes,
            blob_reads=blob_reads,
            also=also,
        )

    async def _meta(self, plan: PullPlan) -> PullRequestMeta:
        """The PR's title, body and commit messages (a re-review's: the new commits')."""
        pull = self.pull
        messages = plan.commit_messages
        if messages is None:
            messages = await self.forge.commit_messages(pull.number)
        return PullRequestMeta(
            title=pull.title,
            body=pull.body,
            commit_messages=messages,
            base_ref=pull.base_ref,
            head_ref=pull.head_ref,
        )

    async def _build(
        self,
        meta: PullRequestMeta,
        diff: str,
        head: RefFiles,
        guide: RefFiles,
        budget_tokens: int,
        ignore_globs: Sequence[str],
    ) -> BuiltContext:
        return await build_context(
            meta,
            diff,
            head.files,
            head.read,
            budget_tokens=budget_tokens,
            ignore_globs=ignore_globs,
            guidance_from=GuidanceSource(guide.files, guide.read, self.pull.default_branch),
            indexing=Indexing(
                blob_sha=lambda path: e.sha if (e := head.entries.get(path)) else None,
                cache=FACTS,
                read=head.read_indexed,
                unsearched=head.index_note,
            ),
        )
