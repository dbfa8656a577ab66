"""The forge seam: what the pull-request service needs from a code forge, and no more.

`bot/github/` implements it (`bot.github.forge.GitHubForge`); the service (`bot.pr`) and the
queue and Action's non-wiring modules depend on this package, never on a forge's client. A
second forge (GitLab, Gitea/Forgejo) is one more package implementing `Forge`, and one
wiring module per delivery path.

Designed against the REST APIs of GitHub (pulls, compare, issue comments, check runs,
reactions, collaborators), GitLab (merge requests, repository compare, notes, commit
statuses, award emoji, members) and Gitea/Forgejo (pulls, compare, issue comments, commit
statuses, reactions, collaborators); docs/architecture.md ("The forge seam") maps each
method. What the service does without an optional part (`Capabilities`):

- `annotations` (GitHub only): dropped from the status; the findings are in the comment;
- `buttons` on the status (GitHub's check-run actions only): none; the comment says to
  comment `/council`;
- a `neutral` conclusion (GitHub only; GitLab: success/failed/canceled, Gitea:
  success/failure/warning): `success`, as advisory as neutral: it never blocks a merge;
- `reactions` (GitHub reactions, GitLab award emoji, Gitea reactions): skipped; the
  review itself answers the comment;
- `resolve_threads` (GitHub resolveReviewThread, GitLab discussions `resolved=true`; not
  Gitea's API): a "Fixed in <sha>" reply in the thread instead.

`bot.pr.status` (the status) and `bot.pr.admission` ("seen") apply the fallbacks. The
errors (`ForgeError` and kin) are what every forge's client raises.
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
