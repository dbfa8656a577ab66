"""GitHub as a `bot.forge.Forge`: the repository client of one delivery path (the App's
installation, the Action's workflow token). GitHub has every optional capability; a
delivery path may have fewer (`WORKFLOW`: a workflow run cannot answer a check run's
buttons, and its token cannot resolve a review thread)."""

from __future__ import annotations

from collections.abc import Sequence

from bot.forge import (
    BlobCache,
    Capabilities,
    Comparison,
    ForgeError,
    PostedComment,
    PullDiff,
    PullInfo,
    Reaction,
    RefFiles,
)
from bot.forge.reviews import LineComment, ReviewComment, ReviewThread
from bot.github.client import RepoClient
from bot.github.fetch import commit_messages, fetch_diff, fetch_pull
from bot.github.files_diff import compare
from bot.github.permissions import can_trigger, can_write
from bot.github.publish import (
    CheckRunPublisher,
    comment_too_long,
    react,
    reply,
    upsert_sticky_comment,
)
from bot.github.reviews import (
    approvals,
    create_review,
    list_review_comments,
    reply_in_thread,
    resolve_thread,
    review_comment_reactions,
    review_threads,
)
from bot.github.snapshot import Snapshot, read_agents, read_config

__all__ = ["EVERYTHING", "WORKFLOW", "GitHubForge"]

EVERYTHING = Capabilities()
WORKFLOW = Capabilities(buttons=False, resolve_threads=False)


class GitHubForge:
    def __init__(self, client: RepoClient, capabilities: Capabilities = EVERYTHING) -> None:
        self.client = client
        self._capabilities = capabilities

    @property
    def full_name(self) -> str:
        return self.client.full_name

    @property
    def capabilities(self) -> Capabilities:
        return self._capabilities

    async def pull(self, number: int) -> PullInfo:
        return await fetch_pull(self.client, number)

    async def diff(self, number: int) -> PullDiff:
        return await fetch_diff(self.client, number)

    async def can_trigger(self, login: str) -> bool:
        return await can_trigger(self.client, login)

    async def reply(self, pr: int, body: str) -> PostedComment:
        return await reply(self.client, pr, body)

    async def upsert_sticky(self, pr: int, body: str, login: str) -> PostedComment:
        return await upsert_sticky_comment(self.client, pr, body, login)

    def comment_too_long(self, error: ForgeError) -> bool:
        return comment_too_long(error)

    async def react(self, comment_id: int, content: Reaction = "eyes") -> None:
        await react(self.client, comment_id, content)

    def status(self, *, update_interval_s: float) -> CheckRunPublisher:
        return CheckRunPublisher(self.client, update_interval_s=update_interval_s)

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
    ) -> Snapshot:
        return await Snapshot.open(
            self.client,
            ref,
            cache,
            max_file_bytes=max_file_bytes,
            archive_max_bytes=archive_max_bytes,
            blob_reads=blob_reads,
            also=tuple(s for s in also if isinstance(s, Snapshot)),
        )

    async def commit_messages(self, number: int) -> list[str]:
        return await commit_messages(self.client, number)

    async def compare(self, base: str, head: str) -> Comparison:
        return await compare(self.client, base, head)

    async def setup_config(self, branch: str, cache: BlobCache) -> str | None:
        return await read_config(self.client, branch, cache)

    async def setup_agents(self, branch: str, cache: BlobCache) -> dict[str, str]:
        return await read_agents(self.client, branch, cache)

    @property
    def org_config_repo(self) -> str:
        """GitHub: the organization's `.github` repository."""
        return f"{self.client.owner}/.github"

    # review comments and threads

    async def review_comments(self, pr: int) -> list[ReviewComment]:
        return await list_review_comments(self.client, pr)

    async def review_threads(self, pr: int) -> list[ReviewThread]:
        return await review_threads(self.client, pr)

    async def post_review(
        self, pr: int, *, commit_id: str, body: str, comments: Sequence[LineComment]
    ) -> int:
        fields = [_on_the_right(c) for c in comments]
        return await create_review(self.client, pr, commit_id=commit_id, body=body, comments=fields)

    async def reply_in_thread(self, pr: int, comment_id: int, body: str) -> int:
        return await reply_in_thread(self.client, pr, comment_id, body)

    async def review_comment_reactions(self, comment_id: int) -> list[tuple[str, str]]:
        return await review_comment_reactions(self.client, comment_id)

    async def resolve_thread(self, thread_id: str) -> bool:
        return await resolve_thread(self.client, thread_id)

    async def can_write(self, login: str) -> bool:
        return await can_write(self.client, login)

    async def approvals(self, pr: int, head_sha: str) -> list[str]:
        return await approvals(self.client, pr, head_sha)


def _on_the_right(comment: LineComment) -> dict[str, object]:
    """GitHub's fields for a comment on the diff's new side ("RIGHT")."""
    fields: dict[str, object] = {
        "path": comment.path,
        "line": comment.line,
        "side": "RIGHT",
        "body": comment.body,
    }
    if comment.start_line is not None:
        fields.update(start_line=comment.start_line, start_side="RIGHT")
    return fields
