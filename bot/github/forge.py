"""GitHub as a `bot.forge.Forge`: the repository client of one delivery path (the App's
installation, the Action's workflow token). GitHub has every optional capability; a
delivery path may have fewer (`WORKFLOW`: a workflow run cannot answer a check run's
buttons, and its token cannot resolve a review thread)."""

from __future__ import annotations

from bot.forge import (
    Capabilities,
    ForgeError,
    PostedComment,
    PullDiff,
    PullFile,
    PullInfo,
    Reaction,
)
from bot.github.client import RepoClient
from bot.github.fetch import compare_files, fetch_diff, fetch_pull
from bot.github.permissions import can_trigger
from bot.github.publish import (
    CheckRunPublisher,
    comment_too_long,
    react,
    reply,
    upsert_sticky_comment,
)

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

    async def compare(self, base: str, head: str) -> list[PullFile]:
        return await compare_files(self.client, base, head)

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
