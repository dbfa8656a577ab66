"""Pull request reviews: review comments, their replies and reactions, and review threads.

What inline findings need from GitHub (`bot.pr.followup` decides what to post), behind
`GitHubForge` (bot/github/forge.py); the types are the seam's (bot/forge/reviews.py):

- `create_review`: ONE review with event COMMENT (never APPROVE or REQUEST_CHANGES: the
  council advises) and a comment per line. GitHub refuses the whole review (422 "Line could
  not be resolved") when one comment's line is not part of the diff, so the lines are
  checked before this is called.
- `list_review_comments`, `reply_in_thread`, `review_comment_reactions`: REST.
- `review_threads`, `resolve_thread`: GraphQL (REST has no threads). A workflow's
  GITHUB_TOKEN may not resolve a thread: GitHub answers FORBIDDEN ("Resource not accessible
  by integration"), which `resolve_thread` reports as False; an App needs
  `pull_requests: write`.

Raw requests (not githubkit's models): only the fields read here are needed, and each
call goes through the client's retry loop and pacing like every other.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

from githubkit.exception import GraphQLFailed

from bot.forge.errors import ForgeAuthError, ForgeError
from bot.forge.reviews import ReviewComment, ReviewThread
from bot.github.client import RepoClient
from bot.github.errors import github_errors

__all__ = [
    "approvals",
    "create_review",
    "list_review_comments",
    "reply_in_thread",
    "resolve_thread",
    "review_comment_reactions",
    "review_threads",
]

PER_PAGE = 100
DECIDING = ("APPROVED", "CHANGES_REQUESTED", "DISMISSED")
MAX_PAGES = 30  # 3,000 review comments: past that a PR is not read further


def _pulls(client: RepoClient, pr: int) -> str:
    return f"/repos/{client.owner}/{client.name}/pulls/{pr}"


async def create_review(
    client: RepoClient,
    pr: int,
    *,
    commit_id: str,
    body: str,
    comments: Sequence[dict[str, Any]],
) -> int:
    """One review with event COMMENT; returns its id. `comments`: path, line, side, body,
    optionally start_line and start_side (GitHub's own fields)."""
    payload = {"commit_id": commit_id, "body": body, "event": "COMMENT", "comments": comments}
    with github_errors("post the review comments"):
        response = await client.github.arequest(
            "POST", f"{_pulls(client, pr)}/reviews", json=payload
        )
        return int(response.json()["id"])


async def approvals(client: RepoClient, pr: int, head_sha: str) -> list[str]:
    """The logins whose latest deciding review of commit `head_sha` approves (GitHub's
    reviews list: a later CHANGES_REQUESTED or DISMISSED review ends an approval; a
    COMMENTED one leaves it)."""
    latest: dict[str, str] = {}
    with github_errors("list the reviews"):
        for page in range(1, MAX_PAGES + 1):
            response = await client.github.arequest(
                "GET", f"{_pulls(client, pr)}/reviews", params={"per_page": PER_PAGE, "page": page}
            )
            rows = response.json()
            for row in rows:
                user = (row.get("user") or {}).get("login")
                if user and row.get("commit_id") == head_sha and row.get("state") in DECIDING:
                    latest[user] = str(row.get("state"))
            if len(rows) < PER_PAGE:
                break
    return sorted(user for user, state in latest.items() if state == "APPROVED")


async def list_review_comments(client: RepoClient, pr: int) -> list[ReviewComment]:
    """Every review comment of the pull request, oldest first."""
    found: list[ReviewComment] = []
    with github_errors("list the review comments"):
        for page in range(1, MAX_PAGES + 1):
            response = await client.github.arequest(
                "GET",
                f"{_pulls(client, pr)}/comments",
                params={"per_page": PER_PAGE, "page": page, "sort": "created", "direction": "asc"},
            )
            items = response.json()
            for item in items:
                user = item.get("user") or {}
                found.append(
                    ReviewComment(
                        id=item["id"],
                        node_id=item.get("node_id") or "",
                        path=item.get("path") or "",
                        line=item.get("line"),
                        body=item.get("body") or "",
                        user=user.get("login"),
                        in_reply_to_id=item.get("in_reply_to_id"),
                    )
                )
            if len(items) < PER_PAGE:
                break
    return found


async def reply_in_thread(client: RepoClient, pr: int, comment_id: int, body: str) -> int:
    """A reply in the thread of review comment `comment_id`; returns the reply's id."""
    with github_errors("reply in a review thread"):
        response = await client.github.arequest(
            "POST", f"{_pulls(client, pr)}/comments/{comment_id}/replies", json={"body": body}
        )
        return int(response.json()["id"])


async def review_comment_reactions(client: RepoClient, comment_id: int) -> list[tuple[str, str]]:
    """(content, login) of each reaction to a review comment (`-1` is a thumbs-down)."""
    path = f"/repos/{client.owner}/{client.name}/pulls/comments/{comment_id}/reactions"
    with github_errors("list a review comment's reactions"):
        response = await client.github.arequest("GET", path, params={"per_page": PER_PAGE})
        return [
            (str(r.get("content")), str((r.get("user") or {}).get("login") or ""))
            for r in response.json()
        ]


_THREADS = """
query($owner: String!, $name: String!, $number: Int!, $cursor: String) {
  repository(owner: $owner, name: $name) {
    pullRequest(number: $number) {
      reviewThreads(first: 100, after: $cursor) {
        pageInfo { hasNextPage endCursor }
        nodes {
          id
          isResolved
          resolvedBy { login }
          comments(first: 1) { nodes { databaseId } }
        }
      }
    }
  }
}
"""

_RESOLVE = """
mutation($threadId: ID!) {
  resolveReviewThread(input: {threadId: $threadId}) { thread { id isResolved } }
}
"""


async def review_threads(client: RepoClient, pr: int) -> list[ReviewThread]:
    threads: list[ReviewThread] = []
    cursor: str | None = None
    variables: dict[str, Any] = {"owner": client.owner, "name": client.name, "number": pr}
    for _ in range(MAX_PAGES):
        data = await _graphql(
            client, "list the review threads", _THREADS, {**variables, "cursor": cursor}
        )
        pull = ((data.get("repository") or {}).get("pullRequest")) or {}
        page = pull.get("reviewThreads") or {}
        for node in page.get("nodes") or []:
            first = ((node.get("comments") or {}).get("nodes")) or [{}]
            threads.append(
                ReviewThread(
                    id=node["id"],
                    is_resolved=bool(node.get("isResolved")),
                    resolved_by=(node.get("resolvedBy") or {}).get("login"),
                    first_comment_id=first[0].get("databaseId"),
                )
            )
        info = page.get("pageInfo") or {}
        if not info.get("hasNextPage"):
            break
        cursor = info.get("endCursor")
    return threads


async def resolve_thread(client: RepoClient, thread_id: str) -> bool:
    """Resolve a review thread; False when the token may not (a workflow's GITHUB_TOKEN:
    FORBIDDEN), so the caller can reply in the thread instead."""
    try:
        await _graphql(client, "resolve a review thread", _RESOLVE, {"threadId": thread_id})
    except ForgeAuthError:
        return False
    return True


async def _graphql(
    client: RepoClient, action: str, query: str, variables: dict[str, Any]
) -> dict[str, Any]:
    with github_errors(action):
        try:
            return await client.github.graphql.arequest(query, variables)
        except GraphQLFailed as failed:  # HTTP 200 with `errors`
            raise _graphql_error(failed, action) from None


def _graphql_error(failed: GraphQLFailed, action: str) -> ForgeError:
    errors = failed.response.errors or []
    kinds = {str(getattr(e, "type", "") or "") for e in errors}
    reason = "; ".join(str(getattr(e, "message", "")) for e in errors) or "GraphQL error"
    kind = ForgeAuthError if kinds & {"FORBIDDEN", "INSUFFICIENT_SCOPES"} else ForgeError
    error = kind(reason, status=200, method="POST", path="/graphql", codes=tuple(sorted(kinds)))
    error.action = action
    return error
