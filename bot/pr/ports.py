"""The ports of the pull-request service: what differs between the delivery paths, each a
small protocol the wiring implements (`bot.queue.deps` for the App, `bot.action.run` for
the Action).

- `RepoReads`: the repository's council files and the pull request as a review source,
  read through the forge with the path's cache (the App's is shared in Redis, the
  Action's lives for one run);
- `ReplyThrottle`: at most one refusal per pull request per window (the App keeps the
  window in Redis, the Action reads it from the pull request's comments).
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import TYPE_CHECKING, Protocol

from bot.forge import PullInfo

if TYPE_CHECKING:
    from bot.config import ConfigResult
    from bot.review.setup import RepoSetup
    from bot.review.sources import Source
    from bot.store.findings import PrFinding

__all__ = ["ReplyThrottle", "RepoReads"]


class RepoReads(Protocol):
    """The repository's council files from the default branch, and the pull request to
    review, for one job."""

    async def config(self, pull: PullInfo) -> tuple[str | None, ConfigResult]:
        """`.github/council.yml`'s text and the config validated without personas."""
        ...

    async def setup(self, pull: PullInfo, text: str | None) -> RepoSetup:
        """The personas over the operator's catalog, and the config validated with them."""
        ...

    def source(
        self,
        pull: PullInfo,
        *,
        since: str | None = None,
        open_findings: Sequence[PrFinding] = (),
    ) -> Source:
        """The pull request as a review source (`since`: a re-review's last head)."""
        ...


class ReplyThrottle(Protocol):
    async def first_in_window(self, pr: int) -> bool:
        """True when no refusal was posted on `pr` within the window (and this one is)."""
        ...
