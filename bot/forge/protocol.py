"""The `Forge` protocol: what the pull-request service (`bot.pr`) asks of a code forge.

`Forge` is the part every forge has (GitHub, GitLab, Gitea/Forgejo); `Capabilities` says
which optional parts this forge has, and the service applies the fallback stated in
`bot.forge` for each one it lacks. `StatusReport` is the status the review keeps on the
head commit (GitHub: the "Council" check run; GitLab and Gitea: a commit status whose
`context`/`name` is "Council", its description the title, its `target_url` the details).
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from typing import Literal, Protocol, runtime_checkable

from bot.forge.errors import ForgeError
from bot.forge.types import PostedComment, PullDiff, PullFile, PullInfo
from bot.render.checks import CheckRunAction, CheckRunOutput
from bot.render.conclusion import Conclusion

__all__ = ["Capabilities", "Forge", "Reaction", "Reactions", "StatusReport"]

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

    async def compare(self, base: str, head: str) -> list[PullFile]:
        """The files changed from commit `base` to commit `head`."""
        ...

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
