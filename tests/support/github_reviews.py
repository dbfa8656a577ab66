"""The fake GitHub's pull request reviews: reviews, review comments and their replies,
reactions on review comments, and review threads through GraphQL (`POST /graphql`, the
`reviewThreads` query and the `resolveReviewThread` mutation).

As GitHub does:
- a review's comments must be on lines of the PR's diff, on its right side (context or
  added lines of a hunk); one that is not (a line of the file outside every hunk, or past
  its end) fails the WHOLE review with a 422 "Unprocessable Entity" and `errors: ["Pull
  request review thread line must be part of the diff and Pull request review thread diff
  hunk can't be blank"]`, as GitHub words it (a path not in the diff: "Path could not be
  resolved"; no line number: "Line could not be resolved"; a `start_line` in another hunk
  than `line`: "pull_request_review_thread.start_line must be part of the same hunk as
  the line.");
- each comment of a review opens a thread; a reply joins its thread;
- a workflow's GITHUB_TOKEN (github-actions[bot]) may not resolve a thread: the mutation
  answers HTTP 200 with a FORBIDDEN error "Resource not accessible by integration"
  (`forbid_resolve` makes every token get it); an installation token may;
- GraphQL names a bot `name`, REST `name[bot]`.

Test helpers: `reviews_of(fake)` (the state: `.reviews()`, `.comments()`, `.threads()`),
`resolve_as(fake, comment_id, login)` (a person resolves the thread of a comment) and
`react_as(fake, comment_id, content, login)` (a person reacts, `-1` a thumbs-down).

Mounted by `tests/support/github_server.py` (`review_routes`, `ReviewsFake`).
"""

from __future__ import annotations

import copy
from dataclasses import dataclass, field
from datetime import datetime
from typing import TYPE_CHECKING, Any

from unidiff.patch import PatchSet

from tests.support import github_server as gh

if TYPE_CHECKING:
    from collections.abc import Callable

    from fastapi.responses import Response

    from tests.support.github_server import FakeGitHub, Json, _Ctx

RESOLVE_FORBIDDEN = "Resource not accessible by integration"
LINE_NOT_RESOLVED = "Line could not be resolved"
LINE_NOT_IN_DIFF = (
    "Pull request review thread line must be part of the diff and "
    "Pull request review thread diff hunk can't be blank"
)
PATH_NOT_RESOLVED = "Path could not be resolved"
START_OTHER_HUNK = (
    "pull_request_review_thread.start_line must be part of the same hunk as the line."
)
WORKFLOW_LOGINS = frozenset({"github-actions[bot]"})
EVENTS = ("APPROVE", "REQUEST_CHANGES", "COMMENT")


@dataclass
class ReviewState:
    id: int
    repo: str
    pr: int
    user: str
    user_type: str
    body: str
    event: str
    commit_id: str
    submitted_at: datetime


@dataclass
class ReviewCommentState:
    id: int
    repo: str
    pr: int
    review_id: int | None
    path: str
    line: int
    start_line: int | None
    body: str
    user: str
    user_type: str
    commit_id: str
    created_at: datetime
    in_reply_to_id: int | None = None


@dataclass
class ThreadState:
    id: str  # node id, PRRT_...
    repo: str
    pr: int
    comment_ids: list[int]
    resolved_by: str | None = None  # GraphQL login (a bot without "[bot]")


@dataclass
class ReviewReaction:
    id: int
    comment_id: int
    content: str
    user: str
    user_type: str
    created_at: datetime


@dataclass
class ReviewsFake:
    reviews_by_id: dict[int, ReviewState] = field(default_factory=dict)
    comments_by_id: dict[int, ReviewCommentState] = field(default_factory=dict)
    threads_by_id: dict[str, ThreadState] = field(default_factory=dict)
    reactions: list[ReviewReaction] = field(default_factory=list)
    forbid_resolve: bool = False  # every token's resolveReviewThread is FORBIDDEN

    def reviews(self, repo: str, pr: int) -> list[ReviewState]:
        found = [r for r in self.reviews_by_id.values() if (r.repo, r.pr) == (repo, pr)]
        return copy.deepcopy(sorted(found, key=lambda r: r.id))

    def comments(self, repo: str, pr: int) -> list[ReviewCommentState]:
        found = [c for c in self.comments_by_id.values() if (c.repo, c.pr) == (repo, pr)]
        return copy.deepcopy(sorted(found, key=lambda c: c.id))

    def threads(self, repo: str, pr: int) -> list[ThreadState]:
        found = [t for t in self.threads_by_id.values() if (t.repo, t.pr) == (repo, pr)]
        return copy.deepcopy(sorted(found, key=lambda t: t.comment_ids[0]))

    def thread_of(self, comment_id: int) -> ThreadState | None:
        return next((t for t in self.threads_by_id.values() if comment_id in t.comment_ids), None)


def reviews_of(fake: FakeGitHub) -> ReviewsFake:
    state: ReviewsFake = fake.review_state
    return state


def resolve_as(fake: FakeGitHub, comment_id: int, login: str) -> None:
    """A person resolves the thread of review comment `comment_id` in the UI."""
    with fake._lock:
        thread = reviews_of(fake).thread_of(comment_id)
        assert thread is not None, f"no thread has comment {comment_id}"
        thread.resolved_by = _graphql_login(login)


def react_as(fake: FakeGitHub, comment_id: int, content: str, login: str) -> None:
    """A person reacts to review comment `comment_id` (`-1`: thumbs-down)."""
    with fake._lock:
        state = reviews_of(fake)
        assert comment_id in state.comments_by_id, f"no review comment {comment_id}"
        state.reactions.append(
            ReviewReaction(
                fake._next_id("review-reaction"), comment_id, content, login, "User", gh._now()
            )
        )


def _graphql_login(login: str) -> str:
    return login.removesuffix("[bot]")


# -- the diff's right side -------------------------------------------------------------------


def _right_side(diff: str) -> dict[str, list[tuple[int, int]]]:
    """Per file of the diff, each hunk's right-side lines as (first, last)."""
    hunks: dict[str, list[tuple[int, int]]] = {}
    for patched in PatchSet(diff):
        if patched.is_removed_file:
            continue
        ranges = hunks.setdefault(patched.path, [])
        for hunk in patched:
            numbers = [line.target_line_no for line in hunk if line.target_line_no is not None]
            if numbers:
                ranges.append((min(numbers), max(numbers)))
    return hunks


def _unprocessable(message: str) -> gh._HttpError:
    return gh._HttpError(422, "Unprocessable Entity", errors=[message])


def _checked_comment(
    hunks: dict[str, list[tuple[int, int]]], raw: Any
) -> tuple[str, int, int | None, str]:
    if not isinstance(raw, dict) or not isinstance(raw.get("body"), str):
        raise _unprocessable("body wasn't supplied.")
    path, line, start = raw.get("path"), raw.get("line"), raw.get("start_line")
    if raw.get("side", "RIGHT") != "RIGHT" or raw.get("start_side", "RIGHT") != "RIGHT":
        raise gh._HttpError(422, "The fake GitHub only takes comments on the RIGHT side")
    if not isinstance(line, int):
        raise _unprocessable(LINE_NOT_RESOLVED)
    if path not in hunks:
        raise _unprocessable(PATH_NOT_RESOLVED)
    hunk = next((h for h in hunks[path] if h[0] <= line <= h[1]), None)
    if hunk is None:
        raise _unprocessable(LINE_NOT_IN_DIFF)
    if start is not None:
        if not isinstance(start, int) or start >= line:
            raise _unprocessable("pull_request_review_thread.start_line must precede the end line.")
        if not hunk[0] <= start <= hunk[1]:
            raise _unprocessable(START_OTHER_HUNK)
    return path, line, start, raw["body"]


# -- JSON ------------------------------------------------------------------------------------


def _review_json(fake: FakeGitHub, review: ReviewState) -> Json:
    html = f"{gh.HTML_BASE}/{review.repo}/pull/{review.pr}#pullrequestreview-{review.id}"
    return {
        "id": review.id,
        "node_id": f"PRR_{review.id}",
        "user": gh._user(fake, review.user, review.user_type),
        "body": review.body,
        "state": {"COMMENT": "COMMENTED", "APPROVE": "APPROVED"}.get(
            review.event, "CHANGES_REQUESTED"
        ),
        "html_url": html,
        "pull_request_url": gh._api(fake, f"/repos/{review.repo}/pulls/{review.pr}"),
        "commit_id": review.commit_id,
        "submitted_at": gh._iso(review.submitted_at),
        "author_association": "NONE" if review.user_type == "Bot" else "CONTRIBUTOR",
        "_links": {"html": {"href": html}, "pull_request": {"href": html}},
    }


def _comment_json(fake: FakeGitHub, c: ReviewCommentState) -> Json:
    api = gh._api(fake, f"/repos/{c.repo}")
    body: Json = {
        "id": c.id,
        "node_id": f"PRRC_{c.id}",
        "url": f"{api}/pulls/comments/{c.id}",
        "html_url": f"{gh.HTML_BASE}/{c.repo}/pull/{c.pr}#discussion_r{c.id}",
        "pull_request_url": f"{api}/pulls/{c.pr}",
        "pull_request_review_id": c.review_id,
        "diff_hunk": "",
        "path": c.path,
        "commit_id": c.commit_id,
        "original_commit_id": c.commit_id,
        "user": gh._user(fake, c.user, c.user_type),
        "body": c.body,
        "created_at": gh._iso(c.created_at),
        "updated_at": gh._iso(c.created_at),
        "author_association": "NONE" if c.user_type == "Bot" else "CONTRIBUTOR",
        "line": c.line,
        "original_line": c.line,
        "start_line": c.start_line,
        "original_start_line": c.start_line,
        "side": "RIGHT",
        "start_side": "RIGHT" if c.start_line is not None else None,
        "subject_type": "line",
        "_links": {"self": {"href": f"{api}/pulls/comments/{c.id}"}},
    }
    if c.in_reply_to_id is not None:
        body["in_reply_to_id"] = c.in_reply_to_id
    return body


def _reaction_json(fake: FakeGitHub, r: ReviewReaction) -> Json:
    return {
        "id": r.id,
        "node_id": f"REA_{r.id}",
        "user": gh._user(fake, r.user, r.user_type),
        "content": r.content,
        "created_at": gh._iso(r.created_at),
    }


# -- REST ------------------------------------------------------------------------------------


def _create_review(ctx: _Ctx, owner: str, repo: str, number: str) -> Response:
    fake, full_name = ctx.fake, f"{owner}/{repo}"
    pull = fake._pull(full_name, int(number))
    body = ctx.body
    event = body.get("event")
    if event is not None and event not in EVENTS:
        raise _unprocessable(f"Event '{event}' is not a valid event.")
    commit_id = body.get("commit_id") or pull.head_sha
    if commit_id not in {sha for sha, _ in pull.commits}:
        raise _unprocessable("commit_id is not part of the pull request")
    hunks = _right_side(pull.diff)
    # Every comment is checked before anything is kept: one bad line fails the whole review.
    checked = [_checked_comment(hunks, raw) for raw in body.get("comments") or []]
    login, kind = ctx.actor
    state, now = reviews_of(fake), gh._now()
    review = ReviewState(
        fake._next_id("review"), full_name, pull.number, login, kind,
        body.get("body") or "", event or "PENDING", commit_id, now,
    )  # fmt: skip
    state.reviews_by_id[review.id] = review
    for path, line, start, text in checked:
        comment = ReviewCommentState(
            fake._next_id("review-comment"), full_name, pull.number, review.id, path, line,
            start, text, login, kind, commit_id, now,
        )  # fmt: skip
        state.comments_by_id[comment.id] = comment
        thread = ThreadState(f"PRRT_{comment.id}", full_name, pull.number, [comment.id])
        state.threads_by_id[thread.id] = thread
    return gh._json_response(200, _review_json(fake, review))


def _list_reviews(ctx: _Ctx, owner: str, repo: str, number: str) -> Response:
    ctx.fake._pull(f"{owner}/{repo}", int(number))
    found = reviews_of(ctx.fake).reviews(f"{owner}/{repo}", int(number))
    return gh._page(ctx, [_review_json(ctx.fake, r) for r in found])


def _list_review_comments(ctx: _Ctx, owner: str, repo: str, number: str) -> Response:
    ctx.fake._pull(f"{owner}/{repo}", int(number))
    found = reviews_of(ctx.fake).comments(f"{owner}/{repo}", int(number))
    return gh._page(ctx, [_comment_json(ctx.fake, c) for c in found])


def _reply(ctx: _Ctx, owner: str, repo: str, number: str, comment_id: str) -> Response:
    fake, full_name = ctx.fake, f"{owner}/{repo}"
    pull = fake._pull(full_name, int(number))
    state = reviews_of(fake)
    original = state.comments_by_id.get(int(comment_id))
    if original is None or (original.repo, original.pr) != (full_name, pull.number):
        raise gh._HttpError(404, "Not Found")
    text = ctx.body.get("body")
    if not isinstance(text, str) or not text:
        raise _unprocessable("body wasn't supplied.")
    root = original.in_reply_to_id or original.id  # a reply to a reply joins the thread
    login, kind = ctx.actor
    reply = ReviewCommentState(
        fake._next_id("review-comment"), full_name, pull.number, None, original.path,
        original.line, original.start_line, text, login, kind, pull.head_sha, gh._now(),
        in_reply_to_id=root,
    )  # fmt: skip
    state.comments_by_id[reply.id] = reply
    thread = state.thread_of(root)
    if thread is not None:
        thread.comment_ids.append(reply.id)
    return gh._json_response(201, _comment_json(fake, reply))


def _owned(ctx: _Ctx, owner: str, repo: str, comment_id: str) -> ReviewCommentState:
    comment = reviews_of(ctx.fake).comments_by_id.get(int(comment_id))
    if comment is None or comment.repo != f"{owner}/{repo}":
        raise gh._HttpError(404, "Not Found")
    return comment


def _list_reactions(ctx: _Ctx, owner: str, repo: str, comment_id: str) -> Response:
    comment = _owned(ctx, owner, repo, comment_id)
    found = [r for r in reviews_of(ctx.fake).reactions if r.comment_id == comment.id]
    content = ctx.request.query.get("content")
    if content:
        found = [r for r in found if r.content == content]
    return gh._page(ctx, [_reaction_json(ctx.fake, r) for r in found])


def _create_reaction(ctx: _Ctx, owner: str, repo: str, comment_id: str) -> Response:
    comment = _owned(ctx, owner, repo, comment_id)
    content = ctx.body.get("content")
    if content not in gh._REACTIONS:
        raise gh._validation_failed(
            "Reaction", "content", "invalid", "content is not included in the list"
        )
    login, kind = ctx.actor
    state = reviews_of(ctx.fake)
    for r in state.reactions:
        if (r.comment_id, r.content, r.user) == (comment.id, content, login):
            return gh._json_response(200, _reaction_json(ctx.fake, r))
    reaction = ReviewReaction(
        ctx.fake._next_id("review-reaction"), comment.id, content, login, kind, gh._now()
    )
    state.reactions.append(reaction)
    return gh._json_response(201, _reaction_json(ctx.fake, reaction))


# -- GraphQL ---------------------------------------------------------------------------------


def _graphql_error(kind: str, message: str, path: str) -> Json:
    return {
        "type": kind,
        "path": [path],
        "locations": [{"line": 2, "column": 3}],
        "message": message,
    }


def _graphql(ctx: _Ctx) -> Response:
    body = ctx.body
    query = str(body.get("query") or "")
    variables = body.get("variables") or {}
    if "resolveReviewThread" in query:
        return gh._json_response(200, _resolve(ctx, str(variables.get("threadId") or "")))
    if "reviewThreads" in query:
        return gh._json_response(200, _threads(ctx, variables))
    error = {"message": "The fake GitHub answers reviewThreads and resolveReviewThread only"}
    return gh._json_response(200, {"errors": [error]})


def _visible(ctx: _Ctx, full_name: str) -> bool:
    repo = ctx.fake._repos.get(full_name)
    installation = ctx.token.installation_id
    return repo is not None and (installation is None or repo.installation_id == installation)


def _resolve(ctx: _Ctx, thread_id: str) -> Json:
    state = reviews_of(ctx.fake)
    thread = state.threads_by_id.get(thread_id)
    if thread is None or not _visible(ctx, thread.repo):
        message = f"Could not resolve to a node with the global id of '{thread_id}'"
        return {
            "data": {"resolveReviewThread": None},
            "errors": [_graphql_error("NOT_FOUND", message, "resolveReviewThread")],
        }
    login, _ = ctx.actor
    if state.forbid_resolve or login in WORKFLOW_LOGINS:
        return {
            "data": {"resolveReviewThread": None},
            "errors": [_graphql_error("FORBIDDEN", RESOLVE_FORBIDDEN, "resolveReviewThread")],
        }
    thread.resolved_by = _graphql_login(login)
    return {"data": {"resolveReviewThread": {"thread": {"id": thread.id, "isResolved": True}}}}


def _threads(ctx: _Ctx, variables: Json) -> Json:
    full_name = f"{variables.get('owner')}/{variables.get('name')}"
    number = variables.get("number")
    if not _visible(ctx, full_name):
        message = f"Could not resolve to a Repository with the name '{full_name}'."
        return {
            "data": {"repository": None},
            "errors": [_graphql_error("NOT_FOUND", message, "repository")],
        }
    if (full_name, number) not in ctx.fake._pulls:
        message = f"Could not resolve to a PullRequest with the number of {number}."
        return {
            "data": {"repository": {"pullRequest": None}},
            "errors": [_graphql_error("NOT_FOUND", message, "pullRequest")],
        }
    threads = reviews_of(ctx.fake).threads(full_name, int(str(number)))
    start = int(variables.get("cursor") or 0)
    page = threads[start : start + 100]
    more = start + 100 < len(threads)
    nodes = [
        {
            "id": t.id,
            "isResolved": t.resolved_by is not None,
            "resolvedBy": {"login": t.resolved_by} if t.resolved_by else None,
            "comments": {"nodes": [{"databaseId": t.comment_ids[0]}]},
        }
        for t in page
    ]
    info = {"hasNextPage": more, "endCursor": str(start + 100) if more else None}
    return {
        "data": {
            "repository": {"pullRequest": {"reviewThreads": {"pageInfo": info, "nodes": nodes}}}
        }
    }


def review_routes() -> list[tuple[str, str, Callable[..., Response], bool]]:
    repo = r"/repos/(?P<owner>[^/]+)/(?P<repo>[^/]+)"
    pull = repo + r"/pulls/(?P<number>\d+)"
    comment = repo + r"/pulls/comments/(?P<comment_id>\d+)"
    return [
        ("POST", pull + r"/reviews", _create_review, False),
        ("GET", pull + r"/reviews", _list_reviews, False),
        ("GET", pull + r"/comments", _list_review_comments, False),
        ("POST", pull + r"/comments/(?P<comment_id>\d+)/replies", _reply, False),
        ("GET", comment + r"/reactions", _list_reactions, False),
        ("POST", comment + r"/reactions", _create_reaction, False),
        ("POST", r"/graphql", _graphql, False),
    ]
