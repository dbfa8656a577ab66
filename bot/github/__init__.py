"""Everything that talks to GitHub, through githubkit (async).

- `client`: the one client factory (`GitHubApp`, `RepoClient`), token renewal, metrics;
- `retry`: the one retry loop of every call (5xx, lost connections, rate limits, a 401);
- `pacing`: content-creating calls spaced out per installation;
- `fetch`: the pull request, its diff, files, commits, and repository contents;
- `permissions`: who may convene the council;
- `publish`: reactions, replies, the sticky comment and the check run;
- `errors`: typed errors whose messages never carry a credential.
"""

from bot.github.client import GitHubApp, RepoClient, RepoRef, RetryPolicy
from bot.github.errors import (
    GitHubAuthError,
    GitHubError,
    GitHubNotFound,
    GitHubRateLimited,
    GitHubUnavailable,
    GitHubValidationError,
)
from bot.github.fetch import (
    PullDiff,
    PullFile,
    PullInfo,
    commit_messages,
    compare_files,
    fetch_diff,
    fetch_pull,
    list_files,
    list_tree,
    read_agents,
    read_config,
    read_file,
)
from bot.github.permissions import can_trigger, permission
from bot.github.publish import (
    CheckRunPublisher,
    PostedComment,
    comment_too_long,
    find_sticky_comment,
    react,
    reply,
    upsert_sticky_comment,
)

__all__ = [
    "CheckRunPublisher",
    "GitHubApp",
    "GitHubAuthError",
    "GitHubError",
    "GitHubNotFound",
    "GitHubRateLimited",
    "GitHubUnavailable",
    "GitHubValidationError",
    "PostedComment",
    "PullDiff",
    "PullFile",
    "PullInfo",
    "RepoClient",
    "RepoRef",
    "RetryPolicy",
    "can_trigger",
    "comment_too_long",
    "commit_messages",
    "compare_files",
    "fetch_diff",
    "fetch_pull",
    "find_sticky_comment",
    "list_files",
    "list_tree",
    "permission",
    "react",
    "read_agents",
    "read_config",
    "read_file",
    "reply",
    "upsert_sticky_comment",
]
