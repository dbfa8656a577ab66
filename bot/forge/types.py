"""What a forge answers about a pull request, as our own small types (never a client's).

GitHub's pull request, GitLab's merge request and Gitea/Forgejo's pull all fit these:
`number` is GitHub's and Gitea's number and GitLab's `iid`; `head_repo`/`base_repo` are
"owner/name" (GitLab: the project's `path_with_namespace`).
"""

from __future__ import annotations

from typing import Literal

from pydantic import BaseModel, ConfigDict, Field

__all__ = [
    "CompareStatus",
    "Comparison",
    "FileStatus",
    "PostedComment",
    "PullDiff",
    "PullFile",
    "PullInfo",
]

FileStatus = Literal["added", "removed", "modified", "renamed", "copied", "changed", "unchanged"]


class PullInfo(BaseModel):
    model_config = ConfigDict(frozen=True)

    number: int
    title: str
    body: str
    head_sha: str
    head_ref: str
    head_repo: str | None  # "owner/name"; None when the fork was deleted
    base_ref: str
    base_repo: str
    default_branch: str
    draft: bool
    state: str  # "open" or "closed"
    merged: bool
    labels: list[str]
    author_login: str

    @property
    def is_fork(self) -> bool:
        return self.head_repo != self.base_repo


class PullFile(BaseModel):
    model_config = ConfigDict(frozen=True)

    path: str
    status: FileStatus
    additions: int
    deletions: int
    previous_path: str | None = None
    patch: str | None = None  # None for binary files and patches the forge will not show


class PullDiff(BaseModel):
    model_config = ConfigDict(frozen=True)

    text: str
    # True when GitHub refused the diff as too large and it was rebuilt from the files'
    # patches (then `files_without_patch` lists the files whose changes are not in it).
    rebuilt_from_files: bool = False
    files_without_patch: list[str] = Field(default_factory=list)
    # Rebuilt: why GitHub refused it ("more than 300 files"), each file without a patch and
    # why (bot.github.files_diff.skipped_reason), how many files were listed, and whether
    # the files API's 3,000-file limit cut the list.
    refused: str = ""
    skipped: dict[str, str] = Field(default_factory=dict)
    listed: int = 0
    capped: bool = False


class PostedComment(BaseModel):
    model_config = ConfigDict(frozen=True)

    id: int
    html_url: str
    created: bool = True  # False when an existing comment was updated


# How `head` relates to `base`: it still contains it (`ahead`), or the history was rewritten
# (`diverged`, `behind`; `missing` when the forge no longer knows the old commit).
CompareStatus = Literal["ahead", "behind", "diverged", "identical", "missing"]


class Comparison(BaseModel):
    """Two commits compared (GitHub compare, GitLab repository compare, Gitea compare)."""

    model_config = ConfigDict(frozen=True)

    status: CompareStatus
    ahead_by: int = 0
    behind_by: int = 0
    commit_messages: list[str] = Field(default_factory=list)
    files: list[PullFile] = Field(default_factory=list)
    diff: str = ""  # the change from `base` to `head`, from the files' patches
