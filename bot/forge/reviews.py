"""Review comments and threads, as our own small types: a finding's comment on its lines.

GitHub's review comments and threads, GitLab's merge request discussions (a diff note
opens one; `resolved`, `resolved_by`) and Gitea/Forgejo's pull review comments (each its
own thread, `resolver`) all fit these: ids are the forge's comment (note) ids; a thread's
`id` is what resolving it takes (GitHub's GraphQL node id, GitLab's discussion id).
"""

from __future__ import annotations

from dataclasses import dataclass

from pydantic import BaseModel, ConfigDict

__all__ = ["LineComment", "ReviewComment", "ReviewThread"]


class ReviewComment(BaseModel):
    """A comment on a line of the pull request's diff, or a reply in its thread."""

    model_config = ConfigDict(frozen=True)

    id: int
    node_id: str = ""
    path: str = ""
    line: int | None = None
    body: str = ""
    user: str | None = None  # the author's login
    in_reply_to_id: int | None = None  # the thread's first comment, for a reply


class ReviewThread(BaseModel):
    model_config = ConfigDict(frozen=True)

    id: str  # what resolving the thread takes
    is_resolved: bool
    resolved_by: str | None  # login of who resolved it
    first_comment_id: int | None  # the id of the thread's first comment


@dataclass(frozen=True)
class LineComment:
    """A comment to post on lines of the diff's new side: `line`, or `start_line` to `line`
    (both in one hunk)."""

    path: str
    line: int
    body: str
    start_line: int | None = None
