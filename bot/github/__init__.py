"""Everything that talks to GitHub, through githubkit (async).

- `client`: the one client factory (`GitHubApp`, `RepoClient`), retries, pacing, metrics;
- `fetch`: the pull request, its diff, files, commits, and repository contents;
- `permissions`: who may convene the council;
- `publish`: reactions, replies, the sticky comment and the check run;
- `errors`: typed errors whose messages never carry a credential.
"""

from bot.github.client import GitHubApp, RateLimitRetry, RepoClient, RepoRef
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
    "RateLimitRetry",
    "RepoClient",
    "RepoRef",
    "can_trigger",
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
