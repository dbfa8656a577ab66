"""The forge seam: what the pull-request service needs from a code forge, and no more.

`bot/github/` implements it (`bot.github.forge.GitHubForge`); the service (`bot.pr`) and the
queue and Action's wiring depend on this package, never on a forge's client. A second forge
(GitLab, Gitea/Forgejo) is one more package implementing `Forge`, and one wiring module.

Designed against the REST APIs of GitHub (pulls, issue comments, check runs, reactions,
collaborators), GitLab (merge requests, notes, discussions, commit statuses, award emoji,
members) and Gitea/Forgejo (pulls, issue comments, pull reviews, commit statuses,
reactions, collaborators). What each forge has, and what the service does without it:

Required (every forge has it; GitHub / GitLab / Gitea-Forgejo):
- the pull request, its diff and files: pulls / merge_requests (by iid), changes / pulls;
- files at a ref and the head archive: contents, tarball / repository files, archive /
  contents, archive; the setup files from the default branch the same way;
- the sticky comment and replies: issue comments / MR notes / issue comments;
- who may convene: collaborator permission / member access_level >= 30 (developer) /
  collaborator permission;
- the status with its progress and conclusion: check run / commit status (pending,
  running, success, failed, canceled) / commit status (pending, success, error, failure,
  warning); the title goes in the description, the summary is in the comment;
- labels (trigger labels) and approvals: labels, reviews / labels, approvals / labels,
  reviews; the organization's configuration: the `.github` repository / a group-level
  project / the `.gitea` repository (without one: the repository's own file only).

Optional (`Capabilities`), with the fallback when a forge lacks it:
- `annotations` (GitHub only): dropped from the status; the findings are in the comment;
- `buttons` on the status (GitHub's check-run actions only): none; the comment says to
  comment `/council`;
- a `neutral` conclusion (GitHub only; GitLab: success/failed/canceled, Gitea:
  success/failure/warning): `success`, as advisory as neutral: it never blocks a merge;
- `reactions` (GitHub reactions, GitLab award emoji, Gitea reactions): skipped; the
  review itself answers the comment;
- `resolve_threads` (GitHub resolveReviewThread, GitLab discussions `resolved=true`; not
  Gitea's API): a "Fixed in <sha>" reply in the thread instead.

`Capabilities` carries the optional rows; `bot.pr.status` and `bot.pr.publishing` apply
their fallbacks. The errors (`ForgeError` and kin) are raised by every forge's client.
"""

from bot.forge.errors import (
    ForgeAuthError,
    ForgeError,
    ForgeNotFound,
    ForgeRateLimited,
    ForgeUnavailable,
    ForgeValidationError,
)
from bot.forge.protocol import (
    BlobCache,
    BlobEntry,
    Capabilities,
    Forge,
    Reaction,
    Reactions,
    RefFiles,
    StatusReport,
)
from bot.forge.types import (
    CompareStatus,
    Comparison,
    FileStatus,
    PostedComment,
    PullDiff,
    PullFile,
    PullInfo,
)

__all__ = [
    "BlobCache",
    "BlobEntry",
    "Capabilities",
    "CompareStatus",
    "Comparison",
    "FileStatus",
    "Forge",
    "ForgeAuthError",
    "ForgeError",
    "ForgeNotFound",
    "ForgeRateLimited",
    "ForgeUnavailable",
    "ForgeValidationError",
    "PostedComment",
    "PullDiff",
    "PullFile",
    "PullInfo",
    "Reaction",
    "Reactions",
    "RefFiles",
    "StatusReport",
]
