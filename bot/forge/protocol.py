"""The `Forge` protocol: what the pull-request service (`bot.pr`) asks of a code forge.

`Forge` is the part every forge has (GitHub, GitLab, Gitea/Forgejo); `Capabilities` says
which optional parts this forge has, and the service applies the fallback stated in
`bot.forge` for each one it lacks. `StatusReport` is the status the review keeps on the
head commit (GitHub: the "Council" check run; GitLab and Gitea: a commit status whose
`context`/`name` is "Council", its description the title, its `target_url` the details).
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass
from types import TracebackType
from typing import Literal, Protocol, Self, runtime_checkable

from bot.forge.errors import ForgeError
from bot.forge.reviews import LineComment, ReviewComment, ReviewThread
from bot.forge.types import Comparison, PostedComment, PullDiff, PullInfo
from bot.render.checks import CheckRunAction, CheckRunOutput
from bot.render.conclusion import Conclusion

__all__ = [
    "BlobCache",
    "BlobEntry",
    "Capabilities",
    "Forge",
    "Reaction",
    "Reactions",
    "RefFiles",
    "StatusReport",
]

Reaction = Literal["+1", "-1", "laugh", "confused", "heart", "hooray", "rocket", "eyes"]


@dataclass(frozen=True)
class Capabilities:
    """The optional parts; each False means the service uses the fallback instead."""

    annotations: bool = True  # findings as annotations on the status
    buttons: bool = True  # actions on the status ("Re-run as debate")
    neutral: bool = True  # a `neutral` conclusion (advisory, never blocks)
    reactions: bool = True  # an emoji on the `/council` comment ("seen")
    resolve_threads: bool = True  # a fixed finding's review thread resolved by the bot


class StatusReport(Protocol):
    """The review's status on a head commit: opened, kept current, always concluded."""

    async def create(self, head_sha: str, *, external_id: str, title: str, summary: str) -> int:
        """A new status, in progress; `external_id` finds it again after a crash."""
        ...

    async def find(self, head_sha: str, external_id: str) -> int | None: ...

    async def progress(self, check_run_id: int, summary: str, *, title: str | None = None) -> bool:
        """A throttled update; False when it was dropped."""
        ...

    async def note(self, check_run_id: int, title: str, summary: str) -> None: ...

    async def complete(
        self,
        check_run_id: int,
        output: CheckRunOutput,
        conclusion: Conclusion,
        *,
        details_url: str | None = None,
        actions: Sequence[CheckRunAction] = ...,
    ) -> None: ...

    async def cancel(self, check_run_id: int, reason: str) -> None: ...


@runtime_checkable
class Reactions(Protocol):
    """Optional (`Capabilities.reactions`): an emoji on a comment."""

    async def react(self, comment_id: int, content: Reaction = "eyes") -> None: ...


# files at a ref and setup files: what they are read into


class BlobCache(Protocol):
    """Files' bytes by their git blob id, shared by reviews (a blob never changes)."""

    async def contains(self, sha: str) -> bool: ...

    async def get(self, sha: str) -> bytes | None: ...

    async def put(self, sha: str, data: bytes) -> None: ...


class BlobEntry(Protocol):
    """A file of a tree: its git blob id."""

    @property
    def sha(self) -> str: ...


class RefFiles(Protocol):
    """The files of one commit or branch, read as cheaply as the forge allows: its tree
    once, bytes by blob id through a `BlobCache`, a few single reads, then the ref's
    archive. Closed (its archive's files deleted) on leaving `async with`."""

    @property
    def files(self) -> list[str]: ...

    @property
    def entries(self) -> Mapping[str, BlobEntry]: ...

    @property
    def truncated(self) -> bool:
        """The forge listed only part of the tree (reads of other paths go by path)."""
        ...

    async def expect(self, paths: Iterable[str]) -> None:
        """`paths` are read next: many misses fetch the archive at the first one."""
        ...

    async def read(self, path: str) -> bytes | None: ...

    async def read_indexed(self, path: str) -> bytes | None:
        """As `read`, but past the single reads only from the archive (the name index)."""
        ...

    def index_note(self) -> str | None: ...

    async def __aenter__(self) -> Self: ...

    async def __aexit__(
        self,
        exc_type: type[BaseException] | None,
        exc: BaseException | None,
        tb: TracebackType | None,
    ) -> None: ...


class Forge(Protocol):
    """One repository on one forge, with the credentials of one delivery path."""

    @property
    def full_name(self) -> str:
        """ "owner/name" (GitLab: the project's path with its namespace)."""
        ...

    @property
    def capabilities(self) -> Capabilities: ...

    async def pull(self, number: int) -> PullInfo: ...

    async def diff(self, number: int) -> PullDiff: ...

    async def can_trigger(self, login: str) -> bool:
        """`login` may convene the council (write access, or more)."""
        ...

    async def reply(self, pr: int, body: str) -> PostedComment:
        """A new comment on the pull request's conversation."""
        ...

    async def upsert_sticky(self, pr: int, body: str, login: str) -> PostedComment:
        """The one comment of ours (found by its marker and author), written in place."""
        ...

    def comment_too_long(self, error: ForgeError) -> bool:
        """The forge refused a comment for its length (it is rendered shorter)."""
        ...

    def status(self, *, update_interval_s: float) -> StatusReport: ...

    # files at a ref and setup files

    async def files_at(
        self,
        ref: str,
        cache: BlobCache,
        *,
        max_file_bytes: int,
        archive_max_bytes: int,
        blob_reads: int = 3,
        also: Sequence[RefFiles] = (),
    ) -> RefFiles:
        """The files at `ref` (a commit or a branch); past `blob_reads` single reads, the
        ref's archive (at most `archive_max_bytes`); `also` are other files of the same
        review whose archives may hold a blob."""
        ...

    async def commit_messages(self, number: int) -> list[str]:
        """The pull request's commit messages, oldest first."""
        ...

    async def compare(self, base: str, head: str) -> Comparison:
        """Commit `base` to commit `head`: the files changed, the commits, the diff; status
        `missing` when the forge no longer knows `base`."""
        ...

    async def setup_config(self, branch: str, cache: BlobCache) -> str | None:
        """The repository's configuration file on `branch` (`bot.config.CONFIG_PATH`)."""
        ...

    async def setup_agents(self, branch: str, cache: BlobCache) -> dict[str, str]:
        """The repository's persona files on `branch` (`bot.config.AGENTS_DIR`): path ->
        text."""
        ...

    @property
    def org_config_repo(self) -> str:
        """The repository where the organization keeps its configuration ("owner/name")."""
        ...

    # review comments and threads (docs/architecture.md "The forge seam": each method's
    # GitLab and Gitea/Forgejo equivalent, or its fallback)

    async def review_comments(self, pr: int) -> list[ReviewComment]:
        """Every review comment of the pull request, replies too, oldest first."""
        ...

    async def review_threads(self, pr: int) -> list[ReviewThread]: ...

    async def post_review(
        self, pr: int, *, commit_id: str, body: str, comments: Sequence[LineComment]
    ) -> int:
        """One review that only comments (never approves or requests changes), a comment
        per finding on its lines; returns its id. The forge refuses the whole review when
        one comment is not on lines of the diff."""
        ...

    async def reply_in_thread(self, pr: int, comment_id: int, body: str) -> int:
        """A reply in the thread that review comment `comment_id` opened; the reply's id."""
        ...

    async def review_comment_reactions(self, comment_id: int) -> list[tuple[str, str]]:
        """(content, login) of each reaction to a review comment ("-1": a thumbs-down)."""
        ...

    async def resolve_thread(self, thread_id: str) -> bool:
        """The thread resolved; False when these credentials may not resolve it (a forge
        without `Capabilities.resolve_threads` answers False; the service does not ask)."""
        ...

    async def can_write(self, login: str) -> bool:
        """`login` may write to the repository: their dismissal of a finding counts."""
        ...

    async def approvals(self, pr: int, head_sha: str) -> list[str]:
        """Who approves the pull request at `head_sha` (their latest review there
        approves), in login order: what a gate may weigh beside the verdict."""
        ...
