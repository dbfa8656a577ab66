"""A fake GitHub REST API on a real port, for githubkit to talk to through `base_url`.

State lives in memory (installations, repositories with files per ref, pull requests, issue
comments, reactions, labels, check runs, collaborator permissions); every call is recorded
(method, path, query, status, monotonic time, JSON body, who authenticated). Responses carry
the shapes of GitHub's own (2022-11-28 REST shapes, which githubkit's generated models parse;
`tests/unit/support/test_fake_github.py` proves it endpoint by endpoint), the status codes,
headers and error bodies of GitHub's recorded answers (octokit/fixtures' normalized
recordings: `link` pagination, rate-limit headers, 422 "Validation Failed"), and GitHub's
limits (65,536-character comments, 65,535-character check-run summaries, 50 annotations a request).

Auth is checked like GitHub does it: the App's routes want an RS256 JWT signed by the key
registered with `set_app_key`; everything else wants an installation token it issued (or a
token added with `add_token`), scoped to the installation's repositories.

    with run_fake_github() as gh:
        gh.set_app_key(APP_ID, public_pem)
        gh.add_installation(7, "acme")
        gh.add_repo("acme/widgets", installation_id=7, files={"README.md": "# hi"})
        gh.add_pull("acme/widgets", 1, title="t", body="b", head_sha="ab" * 20, diff=DIFF,
                    files_at_head={"a.py": "x = 1\\n"})
        gh.rate_limit("POST", r"/repos/acme/widgets/issues/\\d+/comments", retry_after=1)
        ... githubkit.GitHub(auth, base_url=gh.url) ...
        assert [c.status for c in gh.calls_to("POST", r".*/comments")] == [403, 201]

Faults are rules over the request (method, path regex, or a predicate), used up after
`times` matches; they replace the answer before any handler runs.
"""

from __future__ import annotations

import base64
import contextlib
import copy
import difflib
import gzip
import hashlib
import io
import json
import random
import re
import tarfile
import threading
import time
from collections.abc import Callable, Iterator, Mapping
from dataclasses import dataclass, field
from datetime import UTC, datetime, timedelta
from functools import lru_cache
from typing import Any, Literal, TypeAlias
from urllib.parse import parse_qsl, quote, urlencode

import jwt
from cryptography.hazmat.primitives import serialization
from cryptography.hazmat.primitives.asymmetric import rsa
from fastapi import FastAPI, Request
from fastapi.responses import Response
from unidiff.patch import PatchSet

from tests.support.serving import ServerThread

Json: TypeAlias = dict[str, Any]
Permission: TypeAlias = Literal["admin", "write", "read", "none"]

HTML_BASE = "https://github.com"
DOCS = "https://docs.github.com/rest"
COMMENT_MAX = 65_536
OUTPUT_MAX = 65_535
ANNOTATIONS_MAX = 50
CONTENT_INLINE_MAX = 1_000_000  # above this, GitHub sends content "" and encoding "none"
SECONDARY_RATE_LIMIT_MESSAGE = (
    "You have exceeded a secondary rate limit. Please wait a few minutes before you try "
    "again. If you reach out to GitHub Support for help, please include the request ID "
    "0000:00000:0000000:0000000:00000000."
)
DIFF_TOO_LARGE_MESSAGE = (
    "Sorry, the diff exceeded the maximum number of files (300). Consider using 'List pull "
    "requests files' API or locally cloning the repository instead."
)
DIFF_TOO_MANY_LINES_MESSAGE = (
    "Sorry, the diff exceeded the maximum number of lines (20000). Consider using 'List pull "
    "requests files' API or locally cloning the repository instead."
)
_EPOCH = datetime(2024, 1, 2, 3, 4, 5, tzinfo=UTC)
_MUTATING = frozenset({"POST", "PATCH", "PUT", "DELETE"})


# --------------------------------------------------------------------------------------------
# Keys
# --------------------------------------------------------------------------------------------


@lru_cache(maxsize=1)
def app_keypair() -> tuple[str, str]:
    """An RSA key pair for a test App (private PEM, public PEM), made once per process."""
    key = rsa.generate_private_key(public_exponent=65537, key_size=2048)
    private = key.private_bytes(
        serialization.Encoding.PEM,
        serialization.PrivateFormat.PKCS8,
        serialization.NoEncryption(),
    ).decode()
    public = (
        key.public_key()
        .public_bytes(serialization.Encoding.PEM, serialization.PublicFormat.SubjectPublicKeyInfo)
        .decode()
    )
    return private, public


# --------------------------------------------------------------------------------------------
# What the log keeps, what a fault answers
# --------------------------------------------------------------------------------------------


@dataclass(frozen=True)
class RecordedCall:
    method: str
    path: str  # without the query
    query: dict[str, str]
    status: int
    time: float  # time.monotonic() at arrival
    json: Any  # the JSON body, or None
    auth: str  # "app", "installation:<id>", "token", "none" or "invalid"
    accept: str
    api_version: str | None


@dataclass(frozen=True)
class FakeRequest:
    """What a fault rule sees."""

    method: str
    path: str
    query: dict[str, str]
    headers: dict[str, str]
    json: Any


@dataclass(frozen=True)
class Fault:
    status: int
    body: Any = None
    headers: dict[str, str] = field(default_factory=dict)


@dataclass
class _Rule:
    match: Callable[[FakeRequest], bool]
    fault: Fault
    times: int | None


class _HttpError(Exception):
    def __init__(self, status: int, message: str, **extra: Any) -> None:
        super().__init__(message)
        self.status = status
        self.body: Json = {"message": message, **extra}
        self.body.setdefault("documentation_url", DOCS)
        self.body.setdefault("status", str(status))


def _validation_failed(resource: str, field_name: str, code: str, message: str) -> _HttpError:
    # The shape of the 422 in errors.json, with the message GitHub adds for custom codes.
    error = {"resource": resource, "code": code, "field": field_name, "message": message}
    return _HttpError(422, "Validation Failed", errors=[error])


# --------------------------------------------------------------------------------------------
# State
# --------------------------------------------------------------------------------------------


@dataclass
class _Installation:
    id: int
    account: str
    account_type: str


@dataclass
class _Repo:
    id: int
    full_name: str
    installation_id: int | None
    default_branch: str
    private: bool
    fork: bool
    # ref (branch name or commit SHA) -> path -> content
    refs: dict[str, dict[str, bytes]]
    commit_messages: dict[str, str]  # sha -> message, for every commit we know of

    @property
    def owner(self) -> str:
        return self.full_name.split("/", 1)[0]

    @property
    def name(self) -> str:
        return self.full_name.split("/", 1)[1]


@dataclass
class _Pull:
    number: int
    id: int
    repo: str
    title: str
    body: str | None
    head_sha: str
    head_ref: str
    head_repo: str
    base_ref: str
    base_sha: str
    diff: str
    draft: bool
    labels: list[str]
    user: str
    commits: list[tuple[str, str]]  # (sha, message)
    state: str = "open"
    merged: bool = False
    diff_too_large: bool = False
    created_at: datetime = _EPOCH
    # head SHA -> every commit it contains since the PR's base, oldest first (a push adds
    # to the previous head's; a force-push starts again; a base merge adds the base's head)
    history: dict[str, list[str]] = field(default_factory=dict)


@dataclass
class CommentState:
    id: int
    repo: str
    issue_number: int
    body: str
    user: str
    user_type: str
    created_at: datetime
    updated_at: datetime


@dataclass
class ReactionState:
    id: int
    comment_id: int
    content: str
    user: str
    user_type: str
    created_at: datetime


@dataclass
class CheckRunState:
    id: int
    repo: str
    name: str
    head_sha: str
    status: str
    conclusion: str | None
    external_id: str | None
    details_url: str | None
    started_at: datetime | None
    completed_at: datetime | None
    title: str | None
    summary: str | None
    text: str | None
    annotations: list[Json]
    actions: list[Json]
    app_id: int


@dataclass
class _Token:
    installation_id: int | None  # None: a personal token added with add_token
    expires: datetime
    login: str


def _now() -> datetime:
    return datetime.now(UTC).replace(microsecond=0)


def _iso(moment: datetime | None) -> str | None:
    return None if moment is None else moment.astimezone(UTC).strftime("%Y-%m-%dT%H:%M:%SZ")


def _sha(*parts: str) -> str:
    return hashlib.sha1("\0".join(parts).encode()).hexdigest()


def _blob_sha(data: bytes) -> str:
    return hashlib.sha1(b"blob %d\0" % len(data) + data).hexdigest()


def _as_bytes(content: str | bytes) -> bytes:
    return content.encode() if isinstance(content, str) else content


def _b64_lines(data: bytes) -> str:
    # GitHub wraps base64 content at 60 characters with "\n".
    text = base64.b64encode(data).decode()
    return "".join(text[i : i + 60] + "\n" for i in range(0, len(text), 60))


# --------------------------------------------------------------------------------------------
# The fake
# --------------------------------------------------------------------------------------------


class FakeGitHub:
    """The scriptable state behind the HTTP app; run it with `run_fake_github()`."""

    # GitHub's limits on a pull request's diff and files (a test may lower them): the diff
    # media type answers 406 "too_large" past `diff_max_files` files or `diff_max_lines`
    # changed lines; the files API lists at most `files_max` files; a file changing more
    # than `patch_max_lines` lines comes without its `patch` (as a binary file does).
    diff_max_files = 300
    diff_max_lines = 20_000
    files_max = 3_000
    patch_max_lines = 20_000

    def __init__(self) -> None:
        self.url = ""
        self.app_id: int | None = None
        self.app_slug = "council-test"
        self.app_name = "PR Council (test)"
        self.tree_limit = 100_000  # entries a recursive tree lists before `truncated`
        # What a tarball download answers instead of the archive (e.g. corrupt bytes).
        self.archive_override: bytes | None = None
        # (remaining, reset epoch): the core rate limit every answer reports until then.
        self._rate: tuple[int, float] | None = None
        self._rate_windows: tuple[int, float] = (0, 0.0)  # further low windows, their length
        self._archive_tokens: dict[str, tuple[str, str]] = {}  # token -> (repo, ref)
        self.token_ttl = timedelta(hours=1)
        self.calls: list[RecordedCall] = []
        self._lock = threading.RLock()
        self._public_key: str | None = None
        self._rules: list[_Rule] = []
        self._ids: dict[str, int] = {}
        self._id_base = random.randrange(1, 1_000_000) * 100_000
        self._user_ids: dict[str, int] = {}
        self._installations: dict[int, _Installation] = {}
        self._repos: dict[str, _Repo] = {}
        self._pulls: dict[tuple[str, int], _Pull] = {}
        self._comments: dict[int, CommentState] = {}
        self._reactions: list[ReactionState] = []
        self._issue_labels: dict[tuple[str, int], list[str]] = {}
        self._check_runs: dict[int, CheckRunState] = {}
        self._permissions: dict[tuple[str, str], Permission] = {}
        self._not_collaborators: set[tuple[str, str]] = set()
        self._tokens: dict[str, _Token] = {}
        self._routes = _routes(self)
        # Reviews, review comments, threads (tests/support/github_reviews.py).
        from tests.support.github_reviews import ReviewsFake

        self.review_state = ReviewsFake()
        # The OAuth web flow, GitHub's site (tests/support/github_oauth.py).
        from tests.support.github_oauth import OAuthFake

        self.oauth = OAuthFake(self)
        self.app = FastAPI()
        self.oauth.mount(self.app)
        self.app.add_api_route(
            "/{full_path:path}",
            self._handle,
            methods=["GET", "POST", "PATCH", "PUT", "DELETE"],
            include_in_schema=False,
        )

    # -- scripting: the App, installations, repositories ------------------------------------

    @property
    def app_login(self) -> str:
        return f"{self.app_slug}[bot]"

    def set_app_key(self, app_id: int, public_pem: str, *, slug: str | None = None) -> None:
        """Register the App: JWTs must be RS256 with this key and `iss` = app_id."""
        with self._lock:
            self.app_id = app_id
            self._public_key = public_pem
            if slug:
                self.app_slug = slug

    def add_installation(self, installation_id: int, account: str, *, org: bool = True) -> None:
        with self._lock:
            kind = "Organization" if org else "User"
            self._installations[installation_id] = _Installation(installation_id, account, kind)

    def add_repo(
        self,
        full_name: str,
        *,
        installation_id: int | None,
        default_branch: str = "main",
        files: Mapping[str, str | bytes] | None = None,
        private: bool = False,
        fork: bool = False,
    ) -> None:
        """A repository; `files` are its tree at the default branch's head commit."""
        with self._lock:
            if installation_id is not None and installation_id not in self._installations:
                raise ValueError(f"unknown installation {installation_id}")
            snapshot = {p: _as_bytes(c) for p, c in (files or {}).items()}
            head = _sha(full_name, default_branch, "head")
            self._repos[full_name] = _Repo(
                id=self._next_id("repo"),
                full_name=full_name,
                installation_id=installation_id,
                default_branch=default_branch,
                private=private,
                fork=fork,
                refs={default_branch: snapshot, head: snapshot},
                commit_messages={head: "Initial commit"},
            )

    def set_files(self, full_name: str, ref: str, files: Mapping[str, str | bytes]) -> None:
        """Replace the tree at a ref (branch name or commit SHA)."""
        with self._lock:
            self._repo(full_name).refs[ref] = {p: _as_bytes(c) for p, c in files.items()}

    def add_pull(
        self,
        full_name: str,
        number: int,
        *,
        title: str,
        body: str | None,
        head_sha: str,
        diff: str,
        files_at_head: Mapping[str, str | bytes],
        base_ref: str = "main",
        head_ref: str | None = None,
        head_repo: str | None = None,
        draft: bool = False,
        labels: tuple[str, ...] | list[str] = (),
        user: str = "octocat",
        commits: tuple[str, ...] | list[str] = ("msg",),
    ) -> None:
        """A pull request; `head_repo` names a fork (added as an uninstalled repo if new).

        Its head commit's files are readable from the base repository by SHA, as on GitHub
        (a fork PR's commits live in the base repository's network)."""
        _check_diff(diff)
        with self._lock:
            self._repo(full_name)  # the base repository must exist
            source = head_repo or full_name
            if source not in self._repos:
                self.add_repo(source, installation_id=None, fork=True)
            pull = _Pull(
                number=number,
                id=self._next_id("pull"),
                repo=full_name,
                title=title,
                body=body,
                head_sha=head_sha,
                head_ref=head_ref or f"feature-{number}",
                head_repo=source,
                base_ref=base_ref,
                base_sha=_sha(full_name, base_ref, "head"),
                diff=diff,
                draft=draft,
                labels=list(labels),
                user=user,
                commits=[],
            )
            self._pulls[(full_name, number)] = pull
            self._issue_labels[(full_name, number)] = list(labels)
            self._push(pull, head_sha, diff, files_at_head, commits)

    def push(
        self,
        full_name: str,
        number: int,
        *,
        head_sha: str,
        diff: str | None = None,
        files_at_head: Mapping[str, str | bytes] | None = None,
        commits: tuple[str, ...] | list[str] = ("another commit",),
        force: bool = False,
        base_merged: bool = False,
    ) -> None:
        """A new push to the PR's head branch (a `synchronize`). `diff` is the PR's diff at
        the new head (unchanged if None); compare between two recorded heads diffs their
        files. `force`: a force-push, the old head is no longer an ancestor (compare says
        `diverged`); `base_merged`: the last commit merges the base branch into the PR."""
        with self._lock:
            pull = self._pull(full_name, number)
            files = files_at_head
            if files is None:
                files = dict(self._repo(full_name).refs[pull.head_sha])
            if diff is not None:
                _check_diff(diff)
            self._push(
                pull, head_sha, diff or pull.diff, files, commits, force=force, merge=base_merged
            )

    def close_pull(self, full_name: str, number: int, *, merged: bool = False) -> None:
        with self._lock:
            pull = self._pull(full_name, number)
            pull.state, pull.merged = "closed", merged

    def set_diff_too_large(self, full_name: str, number: int, too_large: bool = True) -> None:
        """The diff media type answers 406 "too_large", as for a PR over 300 files."""
        with self._lock:
            self._pull(full_name, number).diff_too_large = too_large

    def set_permission(self, full_name: str, login: str, permission: Permission) -> None:
        with self._lock:
            self._permissions[(full_name, login)] = permission
            self._not_collaborators.discard((full_name, login.casefold()))

    def set_not_collaborator(self, full_name: str, login: str) -> None:
        """GitHub counts `login` as no collaborator of the repository (or knows no such
        user): the permission endpoint answers 404 Not Found, as its schema allows."""
        with self._lock:
            self._permissions.pop((full_name, login), None)
            self._not_collaborators.add((full_name, login.casefold()))

    def add_token(self, token: str, *, login: str = "token-user") -> None:
        """A personal/Actions token (`council review --pr` with GITHUB_TOKEN): all repos."""
        with self._lock:
            self._tokens[token] = _Token(None, _now() + timedelta(days=1), login)

    def expire_tokens(self) -> None:
        """Every installation token issued so far stops working (401 Bad credentials)."""
        with self._lock:
            for token in self._tokens.values():
                if token.installation_id is not None:
                    token.expires = _now() - timedelta(seconds=1)

    def add_comment(
        self, full_name: str, number: int, body: str, *, user: str, user_type: str = "User"
    ) -> int:
        """A comment someone else wrote; returns its id."""
        with self._lock:
            return self._create_comment(full_name, number, body, user, user_type).id

    # -- scripting: faults -------------------------------------------------------------------

    def fail(
        self,
        method: str | None = None,
        path: str | None = None,
        *,
        status: int,
        body: Any = None,
        headers: dict[str, str] | None = None,
        times: int | None = 1,
        when: Callable[[FakeRequest], bool] | None = None,
    ) -> None:
        """Answer matching requests with `status` (path: a regex over the whole path)."""
        pattern = re.compile(path) if path else None

        def match(request: FakeRequest) -> bool:
            if method and request.method != method.upper():
                return False
            if pattern and not pattern.fullmatch(request.path):
                return False
            return when(request) if when else True

        default = {"message": "Server Error", "documentation_url": DOCS, "status": str(status)}
        fault = Fault(status, default if body is None else body, headers or {})
        with self._lock:
            self._rules.append(_Rule(match, fault, times))

    def rate_limit(
        self,
        method: str | None = None,
        path: str | None = None,
        *,
        retry_after: int = 1,
        times: int | None = 1,
    ) -> None:
        """GitHub's secondary rate limit: 403, `retry-after`, its message."""
        body = {
            "message": SECONDARY_RATE_LIMIT_MESSAGE,
            "documentation_url": "https://docs.github.com/free-pro-team@latest/rest/"
            "overview/rate-limits-for-the-rest-api#about-secondary-rate-limits",
            "status": "403",
        }
        headers = {"retry-after": str(retry_after), "x-ratelimit-remaining": "4990"}
        self.fail(method, path, status=403, body=body, headers=headers, times=times)

    def set_rate_limit(self, remaining: int, *, reset_in_s: float, windows: int = 1) -> None:
        """Every answer reports `remaining` requests left until `reset_in_s` from now, in
        GitHub's `x-ratelimit-*` headers; then the limit is full again, or, with `windows`
        > 1, as low again for another `reset_in_s` (another client of the installation
        spends it), `windows` times in all."""
        with self._lock:
            self._rate = (remaining, time.time() + reset_in_s)
            self._rate_windows = (windows - 1, reset_in_s)

    def rate_headers(self) -> dict[str, str]:
        headers = _rate_headers()
        with self._lock:
            if self._rate is not None and time.time() >= self._rate[1] and self._rate_windows[0]:
                left, window_s = self._rate_windows
                self._rate = (self._rate[0], time.time() + window_s)
                self._rate_windows = (left - 1, window_s)
        if self._rate is not None and time.time() < self._rate[1]:
            remaining, reset = self._rate
            headers["x-ratelimit-remaining"] = str(remaining)
            headers["x-ratelimit-used"] = str(5000 - remaining)
            headers["x-ratelimit-reset"] = str(int(reset) + (reset > int(reset)))
        return headers

    def server_error(
        self,
        method: str | None = None,
        path: str | None = None,
        *,
        status: int = 502,
        times: int = 1,
    ) -> None:
        self.fail(method, path, status=status, times=times)

    def reset(self) -> None:
        """Forget everything but the App's key and slug."""
        with self._lock:
            self.calls.clear()
            self._rules.clear()
            self._installations.clear()
            self._repos.clear()
            self._pulls.clear()
            self._comments.clear()
            self._reactions.clear()
            self._issue_labels.clear()
            self._check_runs.clear()
            self._permissions.clear()
            self._not_collaborators.clear()
            self._tokens.clear()
            self.review_state = type(self.review_state)()
            self.oauth.reset()
            self.tree_limit = 100_000
            for limit in ("diff_max_files", "diff_max_lines", "files_max", "patch_max_lines"):
                self.__dict__.pop(limit, None)  # back to the class's (GitHub's) limits
            self.archive_override = None
            self._rate = None
            self._archive_tokens.clear()

    # -- inspection --------------------------------------------------------------------------

    def comments(self, full_name: str, number: int) -> list[CommentState]:
        with self._lock:
            return [
                copy.deepcopy(c)
                for c in sorted(self._comments.values(), key=lambda c: c.id)
                if c.repo == full_name and c.issue_number == number
            ]

    def check_runs(self, full_name: str) -> list[CheckRunState]:
        with self._lock:
            runs = sorted(self._check_runs.values(), key=lambda r: r.id)
            return [copy.deepcopy(r) for r in runs if r.repo == full_name]

    def reactions(self, comment_id: int) -> list[ReactionState]:
        with self._lock:
            return [copy.deepcopy(r) for r in self._reactions if r.comment_id == comment_id]

    def labels(self, full_name: str, number: int) -> list[str]:
        with self._lock:
            return list(self._issue_labels.get((full_name, number), []))

    def calls_to(self, method: str | None = None, path: str | None = None) -> list[RecordedCall]:
        pattern = re.compile(path) if path else None
        with self._lock:
            return [
                c
                for c in self.calls
                if (method is None or c.method == method.upper())
                and (pattern is None or pattern.fullmatch(c.path))
            ]

    # -- internals: state --------------------------------------------------------------------

    def _next_id(self, kind: str) -> int:
        # A random base per process: ids (and so arq job ids) never repeat across test runs
        # that share one Redis.
        start = self._id_base + 1000 * (len(self._ids) + 1)
        self._ids[kind] = self._ids.get(kind, start) + 1
        return self._ids[kind]

    def _user_id(self, login: str) -> int:
        if login not in self._user_ids:
            self._user_ids[login] = 500_000 + len(self._user_ids)
        return self._user_ids[login]

    def _repo(self, full_name: str) -> _Repo:
        try:
            return self._repos[full_name]
        except KeyError:
            raise _HttpError(404, "Not Found") from None

    def _pull(self, full_name: str, number: int) -> _Pull:
        try:
            return self._pulls[(full_name, number)]
        except KeyError:
            raise _HttpError(404, "Not Found") from None

    def _push(
        self,
        pull: _Pull,
        head_sha: str,
        diff: str,
        files: Mapping[str, str | bytes],
        messages: tuple[str, ...] | list[str],
        *,
        force: bool = False,
        merge: bool = False,
    ) -> None:
        shas = [_sha(pull.repo, str(pull.number), head_sha, str(i)) for i in messages[:-1]]
        shas.append(head_sha)
        before = [] if force else pull.history.get(pull.head_sha, [])
        if force:  # the PR's commits are the new ones only
            pull.commits = []
        if merge:  # the base branch's head becomes part of the PR's history
            before = [*before, _sha(pull.repo, pull.base_ref, "head")]
        pull.history[head_sha] = [*before, *shas]
        for sha, message in zip(shas, messages, strict=True):
            pull.commits.append((sha, message))
        pull.head_sha, pull.diff = head_sha, diff
        snapshot = {p: _as_bytes(c) for p, c in files.items()}
        for name in {pull.repo, pull.head_repo}:
            repo = self._repos[name]
            repo.refs[head_sha] = snapshot
            repo.commit_messages.update(dict(zip(shas, messages, strict=True)))
        self._repos[pull.head_repo].refs[pull.head_ref] = snapshot

    def _create_comment(
        self, full_name: str, number: int, body: str, user: str, user_type: str
    ) -> CommentState:
        now = _now()
        comment = CommentState(
            self._next_id("comment"), full_name, number, body, user, user_type, now, now
        )
        self._comments[comment.id] = comment
        return comment

    def _resolve_ref(self, repo: _Repo, ref: str | None) -> dict[str, bytes]:
        ref = ref or repo.default_branch
        ref = ref.removeprefix("refs/heads/")
        if ref not in repo.refs:
            raise _HttpError(404, f"No commit found for the ref {ref}")
        return repo.refs[ref]

    # -- internals: HTTP ---------------------------------------------------------------------

    async def _handle(self, request: Request, full_path: str) -> Response:
        arrived = time.monotonic()
        raw = await request.body()
        try:
            body = json.loads(raw) if raw else None
        except ValueError:
            body = None
        path = "/" + full_path
        query = dict(parse_qsl(request.url.query, keep_blank_values=True))
        headers = {k.lower(): v for k, v in request.headers.items()}
        fake_request = FakeRequest(request.method, path, query, headers, body)
        with self._lock:
            auth = "none"
            try:
                fault = self._fault(fake_request)
                if fault is not None:
                    response = _json_response(fault.status, fault.body, fault.headers)
                else:
                    response, auth = self._dispatch(fake_request)
            except _HttpError as exc:
                response = _json_response(exc.status, exc.body)
                auth = getattr(exc, "auth", auth)
            if not path.startswith("/codeload/"):
                response.headers.update(self.rate_headers())
            self.calls.append(
                RecordedCall(
                    method=request.method,
                    path=path,
                    query=query,
                    status=response.status_code,
                    time=arrived,
                    json=body,
                    auth=auth,
                    accept=headers.get("accept", ""),
                    api_version=headers.get("x-github-api-version"),
                )
            )
        return response

    def _fault(self, request: FakeRequest) -> Fault | None:
        for rule in self._rules:
            if rule.match(request):
                if rule.times is not None:
                    rule.times -= 1
                    if rule.times <= 0:
                        self._rules.remove(rule)
                return rule.fault
        return None

    def _dispatch(self, request: FakeRequest) -> tuple[Response, str]:
        if request.path.startswith("/codeload/"):
            return self._codeload(request), "archive-token"
        known_path = False
        for route in self._routes:
            found = route.pattern.fullmatch(request.path)
            if not found:
                continue
            known_path = True
            if route.method != request.method:
                continue
            params = found.groupdict()
            identity: _Token | None = None
            if route.app_auth:
                auth = "app"
                self._check_jwt(request)
            else:
                auth, identity = self._check_token(request, params.get("owner"), params.get("repo"))
            try:
                return route.handler(_Ctx(self, request, identity), **params), auth
            except _HttpError as exc:
                exc.auth = auth  # type: ignore[attr-defined]
                raise
        # GitHub answers an unknown route, or a known one with another method, with 404.
        del known_path
        raise _HttpError(404, "Not Found")

    def _codeload(self, request: FakeRequest) -> Response:
        """codeload.github.com: the archive a tarball redirect points at, by its token."""
        found = self._archive_tokens.get(request.query.get("token", ""))
        if found is None:
            raise _HttpError(404, "Not Found")
        full_name, ref = found
        repo = self._repo(full_name)
        data = self.archive_override
        if data is None:
            data = _tarball(repo, ref, self._resolve_ref(repo, ref))
        top = f"{repo.owner}-{repo.name}-{_short(repo, ref)}"
        headers = {"content-disposition": f"attachment; filename={top}.tar.gz"}
        return Response(data, 200, headers, media_type="application/x-gzip")

    def _credentials(self, request: FakeRequest) -> tuple[str, str] | None:
        header = request.headers.get("authorization", "")
        scheme, _, value = header.partition(" ")
        if scheme.lower() not in ("bearer", "token") or not value:
            return None
        return scheme.lower(), value.strip()

    def _check_jwt(self, request: FakeRequest) -> None:
        creds = self._credentials(request)
        if creds is None or creds[0] != "bearer" or self._public_key is None:
            raise _HttpError(401, "A JSON web token could not be decoded")
        try:
            claims = jwt.decode(
                creds[1],
                self._public_key,
                algorithms=["RS256"],
                options={"require": ["iat", "exp", "iss"]},
                leeway=30,
            )
        except jwt.PyJWTError:
            raise _HttpError(401, "A JSON web token could not be decoded") from None
        if str(claims["iss"]) != str(self.app_id):
            raise _HttpError(401, "'Issuer' claim ('iss') must be an Integer")
        if claims["exp"] - claims["iat"] > 600 + 60:
            raise _HttpError(401, "'Expiration time' claim ('exp') is too far in the future")

    def _check_token(
        self, request: FakeRequest, owner: str | None, repo: str | None
    ) -> tuple[str, _Token]:
        creds = self._credentials(request)
        token = self._tokens.get(creds[1]) if creds else None
        if token is None or token.expires <= _now():
            error = _HttpError(401, "Bad credentials")
            error.auth = "invalid" if creds else "none"  # type: ignore[attr-defined]
            raise error
        auth = "token" if token.installation_id is None else f"installation:{token.installation_id}"
        if owner and repo and token.installation_id is not None:
            target = self._repos.get(f"{owner}/{repo}")
            # A repository the installation cannot see is "Not Found", as on GitHub.
            if target is None or target.installation_id != token.installation_id:
                error = _HttpError(404, "Not Found")
                error.auth = auth  # type: ignore[attr-defined]
                raise error
        return auth, token


@dataclass(frozen=True)
class _Ctx:
    fake: FakeGitHub
    request: FakeRequest
    identity: _Token | None  # None on the App's own (JWT) routes

    @property
    def token(self) -> _Token:
        assert self.identity is not None, "an App route has no installation token"
        return self.identity

    @property
    def actor(self) -> tuple[str, str]:
        """Who the token acts as: the App's bot user, or the token's own user."""
        if self.token.installation_id is not None:
            return self.fake.app_login, "Bot"
        # A workflow's GITHUB_TOKEN writes as github-actions[bot].
        return self.token.login, "Bot" if self.token.login.endswith("[bot]") else "User"

    @property
    def body(self) -> Json:
        body = self.request.json
        if not isinstance(body, dict):
            raise _HttpError(400, "Problems parsing JSON")
        return body

    def query_int(self, name: str, default: int, *, low: int = 1, high: int = 100) -> int:
        try:
            value = int(self.request.query.get(name, default))
        except ValueError:
            return default
        return max(low, min(high, value))


@dataclass(frozen=True)
class _Route:
    method: str
    pattern: re.Pattern[str]
    handler: Callable[..., Response]
    app_auth: bool = False


def _json_response(status: int, body: Any, headers: dict[str, str] | None = None) -> Response:
    all_headers = _rate_headers()
    all_headers.update(headers or {})
    content = b"" if status == 204 else json.dumps(body).encode()
    return Response(content, status, all_headers, media_type="application/json; charset=utf-8")


def _rate_headers() -> dict[str, str]:
    return {
        "x-ratelimit-limit": "5000",
        "x-ratelimit-remaining": "4999",
        "x-ratelimit-reset": str(int(time.time()) + 3600),
        "x-ratelimit-used": "1",
        "x-ratelimit-resource": "core",
        "x-github-media-type": "github.v3; format=json",
        "x-github-request-id": "0000:00000:0000000:0000000:00000000",
    }


def _check_diff(diff: str) -> None:
    try:
        PatchSet(diff)
    except Exception as exc:  # the fake's own input: fail the test early and clearly
        raise ValueError(f"the fake cannot parse this diff: {exc}") from exc


# --------------------------------------------------------------------------------------------
# Shapes (GitHub's own, built from state)
# --------------------------------------------------------------------------------------------


def _api(fake: FakeGitHub, path: str) -> str:
    return f"{fake.url}{path}"


def _user(fake: FakeGitHub, login: str, kind: str = "User") -> Json:
    api = _api(fake, f"/users/{quote(login)}")
    uid = fake._user_id(login)
    return {
        "login": login,
        "id": uid,
        "node_id": f"U_{uid}",
        "avatar_url": f"https://avatars.githubusercontent.com/u/{uid}?v=4",
        "gravatar_id": "",
        "url": api,
        "html_url": f"{HTML_BASE}/{login}",
        "followers_url": f"{api}/followers",
        "following_url": f"{api}/following{{/other_user}}",
        "gists_url": f"{api}/gists{{/gist_id}}",
        "starred_url": f"{api}/starred{{/owner}}{{/repo}}",
        "subscriptions_url": f"{api}/subscriptions",
        "organizations_url": f"{api}/orgs",
        "repos_url": f"{api}/repos",
        "events_url": f"{api}/events{{/privacy}}",
        "received_events_url": f"{api}/received_events",
        "type": kind,
        "site_admin": False,
    }


def _repo_json(fake: FakeGitHub, repo: _Repo) -> Json:
    api = _api(fake, f"/repos/{repo.full_name}")
    html = f"{HTML_BASE}/{repo.full_name}"
    owner_kind = "User"
    if repo.installation_id is not None:
        owner_kind = fake._installations[repo.installation_id].account_type
    stamp = _iso(_EPOCH)
    templates = {
        "forks_url": "/forks",
        "keys_url": "/keys{/key_id}",
        "collaborators_url": "/collaborators{/collaborator}",
        "teams_url": "/teams",
        "hooks_url": "/hooks",
        "issue_events_url": "/issues/events{/number}",
        "events_url": "/events",
        "assignees_url": "/assignees{/user}",
        "branches_url": "/branches{/branch}",
        "tags_url": "/tags",
        "blobs_url": "/git/blobs{/sha}",
        "git_tags_url": "/git/tags{/sha}",
        "git_refs_url": "/git/refs{/sha}",
        "trees_url": "/git/trees{/sha}",
        "statuses_url": "/statuses/{sha}",
        "languages_url": "/languages",
        "stargazers_url": "/stargazers",
        "contributors_url": "/contributors",
        "subscribers_url": "/subscribers",
        "subscription_url": "/subscription",
        "commits_url": "/commits{/sha}",
        "git_commits_url": "/git/commits{/sha}",
        "comments_url": "/comments{/number}",
        "issue_comment_url": "/issues/comments{/number}",
        "contents_url": "/contents/{+path}",
        "compare_url": "/compare/{base}...{head}",
        "merges_url": "/merges",
        "archive_url": "/{archive_format}{/ref}",
        "downloads_url": "/downloads",
        "issues_url": "/issues{/number}",
        "pulls_url": "/pulls{/number}",
        "milestones_url": "/milestones{/number}",
        "notifications_url": "/notifications{?since,all,participating}",
        "labels_url": "/labels{/name}",
        "releases_url": "/releases{/id}",
        "deployments_url": "/deployments",
    }
    data: Json = {
        "id": repo.id,
        "node_id": f"R_{repo.id}",
        "name": repo.name,
        "full_name": repo.full_name,
        "private": repo.private,
        "owner": _user(fake, repo.owner, owner_kind),
        "html_url": html,
        "description": None,
        "fork": repo.fork,
        "url": api,
        **{key: api + suffix for key, suffix in templates.items()},
        "created_at": stamp,
        "updated_at": stamp,
        "pushed_at": stamp,
        "git_url": f"git://github.com/{repo.full_name}.git",
        "ssh_url": f"git@github.com:{repo.full_name}.git",
        "clone_url": f"{html}.git",
        "svn_url": html,
        "homepage": None,
        "size": 1,
        "stargazers_count": 0,
        "watchers_count": 0,
        "language": "Python",
        "has_issues": True,
        "has_projects": True,
        "has_downloads": True,
        "has_wiki": True,
        "has_pages": False,
        "has_discussions": False,
        "forks_count": 0,
        "mirror_url": None,
        "archived": False,
        "disabled": False,
        "open_issues_count": 0,
        "license": None,
        "allow_forking": True,
        "is_template": False,
        "web_commit_signoff_required": False,
        "topics": [],
        "visibility": "private" if repo.private else "public",
        "forks": 0,
        "open_issues": 0,
        "watchers": 0,
        "default_branch": repo.default_branch,
        "network_count": 0,
        "subscribers_count": 0,
    }
    return data


def _app_json(fake: FakeGitHub) -> Json:
    stamp = _iso(_EPOCH)
    return {
        "id": fake.app_id,
        "slug": fake.app_slug,
        "client_id": f"Iv1.{fake.app_id}",
        "node_id": f"A_{fake.app_id}",
        "owner": _user(fake, "council-owner", "Organization"),
        "name": fake.app_name,
        "description": "Convenes a council of AI reviewers on a pull request.",
        "external_url": "https://example.com/pr-council",
        "html_url": f"{HTML_BASE}/apps/{fake.app_slug}",
        "created_at": stamp,
        "updated_at": stamp,
        "permissions": {
            "checks": "write",
            "contents": "read",
            "issues": "write",
            "metadata": "read",
            "pull_requests": "write",
        },
        "events": ["check_run", "issue_comment", "pull_request"],
        "installations_count": len(fake._installations),
    }


def _installation_json(fake: FakeGitHub, inst: _Installation) -> Json:
    stamp = _iso(_EPOCH)
    api = _api(fake, f"/app/installations/{inst.id}")
    return {
        "id": inst.id,
        "account": _user(fake, inst.account, inst.account_type),
        "repository_selection": "selected",
        "access_tokens_url": f"{api}/access_tokens",
        "repositories_url": _api(fake, "/installation/repositories"),
        "html_url": f"{HTML_BASE}/organizations/{inst.account}/settings/installations/{inst.id}",
        "app_id": fake.app_id,
        "app_slug": fake.app_slug,
        "target_id": fake._user_id(inst.account),
        "target_type": inst.account_type,
        "permissions": _app_json(fake)["permissions"],
        "events": _app_json(fake)["events"],
        "created_at": stamp,
        "updated_at": stamp,
        "single_file_name": None,
        "has_multiple_single_files": False,
        "single_file_paths": [],
        "suspended_by": None,
        "suspended_at": None,
    }


def _label_json(fake: FakeGitHub, repo: str, name: str) -> Json:
    lid = int(_sha(repo, name)[:8], 16)
    return {
        "id": lid,
        "node_id": f"LA_{lid}",
        "url": _api(fake, f"/repos/{repo}/labels/{quote(name)}"),
        "name": name,
        "color": "ededed",
        "default": False,
        "description": None,
        # githubkit's generated models require these two keys (GitHub's description does).
        "archived_at": None,
        "archived_by": None,
    }


def _pull_json(fake: FakeGitHub, pull: _Pull) -> Json:
    base_repo = fake._repos[pull.repo]
    head_repo = fake._repos[pull.head_repo]
    api = _api(fake, f"/repos/{pull.repo}")
    html = f"{HTML_BASE}/{pull.repo}/pull/{pull.number}"
    files = _diff_entries(fake, pull)
    stamp = _iso(pull.created_at)
    links = {
        "self": f"{api}/pulls/{pull.number}",
        "html": html,
        "issue": f"{api}/issues/{pull.number}",
        "comments": f"{api}/issues/{pull.number}/comments",
        "review_comments": f"{api}/pulls/{pull.number}/comments",
        "review_comment": f"{api}/pulls/comments{{/number}}",
        "commits": f"{api}/pulls/{pull.number}/commits",
        "statuses": f"{api}/statuses/{pull.head_sha}",
    }
    return {
        "url": links["self"],
        "id": pull.id,
        "node_id": f"PR_{pull.id}",
        "html_url": html,
        "diff_url": f"{html}.diff",
        "patch_url": f"{html}.patch",
        "issue_url": links["issue"],
        "commits_url": links["commits"],
        "review_comments_url": links["review_comments"],
        "review_comment_url": links["review_comment"],
        "comments_url": links["comments"],
        "statuses_url": links["statuses"],
        "number": pull.number,
        "state": pull.state,
        "locked": False,
        "title": pull.title,
        "user": _user(fake, pull.user),
        "body": pull.body,
        "labels": [
            _label_json(fake, pull.repo, n) for n in fake._issue_labels[(pull.repo, pull.number)]
        ],
        "milestone": None,
        "active_lock_reason": None,
        "created_at": stamp,
        "updated_at": stamp,
        "closed_at": None if pull.state == "open" else stamp,
        "merged_at": stamp if pull.merged else None,
        "merge_commit_sha": None,
        "assignee": None,
        "assignees": [],
        "requested_reviewers": [],
        "requested_teams": [],
        "head": {
            "label": f"{head_repo.owner}:{pull.head_ref}",
            "ref": pull.head_ref,
            "sha": pull.head_sha,
            "user": _user(fake, head_repo.owner),
            "repo": _repo_json(fake, head_repo),
        },
        "base": {
            "label": f"{base_repo.owner}:{pull.base_ref}",
            "ref": pull.base_ref,
            "sha": pull.base_sha,
            "user": _user(fake, base_repo.owner),
            "repo": _repo_json(fake, base_repo),
        },
        "_links": {key: {"href": href} for key, href in links.items()},
        "author_association": "CONTRIBUTOR",
        "auto_merge": None,
        "draft": pull.draft,
        "merged": pull.merged,
        "mergeable": True,
        "rebaseable": True,
        "mergeable_state": "clean",
        "merged_by": None,
        "comments": 0,
        "review_comments": 0,
        "maintainer_can_modify": False,
        "commits": len(pull.commits),
        "additions": sum(f["additions"] for f in files),
        "deletions": sum(f["deletions"] for f in files),
        "changed_files": len(files),
    }


def _raw_patches(diff: str) -> list[str]:
    """Each file's hunks exactly as written (unidiff would rewrite "@@ -0,0 +1 @@")."""
    patches: list[str] = []
    for segment in re.split(r"^(?=diff --git )", diff, flags=re.M):
        if not segment.startswith("diff --git "):
            continue
        lines = segment.splitlines(keepends=True)
        first = next((i for i, line in enumerate(lines) if line.startswith("@@")), len(lines))
        patches.append("".join(lines[first:]).rstrip("\n"))
    return patches


def _diff_entries(fake: FakeGitHub, pull: _Pull) -> list[Json]:
    return _entries_of(fake, pull.repo, pull.head_sha, pull.diff)


def _entries_of(fake: FakeGitHub, repo: str, head_sha: str, diff: str) -> list[Json]:
    """The files API's rows of `diff` at `head_sha` (no `patch` for a binary file or one
    changing more than `patch_max_lines` lines)."""
    entries: list[Json] = []
    files = PatchSet(diff)
    raw = _raw_patches(diff)
    if len(raw) != len(files):  # not a git diff: fall back to unidiff's rendering
        raw = ["".join(str(hunk) for hunk in patched).rstrip("\n") for patched in files]
    for patched, patch in zip(files, raw, strict=True):
        name = patched.path
        status = "modified"
        if patched.is_added_file:
            status = "added"
        elif patched.is_removed_file:
            status = "removed"
        elif patched.is_rename:
            status = "renamed"
        raw_url = f"{HTML_BASE}/{repo}/raw/{head_sha}/{quote(name)}"
        entry: Json = {
            "sha": _sha(head_sha, name),
            "filename": name,
            "status": status,
            "additions": patched.added,
            "deletions": patched.removed,
            "changes": patched.added + patched.removed,
            "blob_url": f"{HTML_BASE}/{repo}/blob/{head_sha}/{quote(name)}",
            "raw_url": raw_url,
            "contents_url": _api(fake, f"/repos/{repo}/contents/{quote(name)}?ref={head_sha}"),
        }
        too_large = patched.added + patched.removed > fake.patch_max_lines
        if not patched.is_binary_file and len(patched) and not too_large:
            entry["patch"] = patch
        if patched.is_rename:
            entry["previous_filename"] = patched.source_file.removeprefix("a/")
        entries.append(entry)
    return entries


def _commit_json(fake: FakeGitHub, repo: str, sha: str, message: str, parent: str | None) -> Json:
    api = _api(fake, f"/repos/{repo}")
    stamp = _iso(_EPOCH)
    person = {"name": "Octo Cat", "email": "octocat@example.com", "date": stamp}
    parents = [] if parent is None else [parent]
    return {
        "url": f"{api}/commits/{sha}",
        "sha": sha,
        "node_id": f"C_{sha[:12]}",
        "html_url": f"{HTML_BASE}/{repo}/commit/{sha}",
        "comments_url": f"{api}/commits/{sha}/comments",
        "commit": {
            "url": f"{api}/git/commits/{sha}",
            "author": person,
            "committer": person,
            "message": message,
            "tree": {"sha": _sha(sha, "tree"), "url": f"{api}/git/trees/{_sha(sha, 'tree')}"},
            "comment_count": 0,
            "verification": {
                "verified": False,
                "reason": "unsigned",
                "signature": None,
                "payload": None,
                "verified_at": None,
            },
        },
        "author": _user(fake, "octocat"),
        "committer": _user(fake, "web-flow"),
        "parents": [
            {"sha": p, "url": f"{api}/commits/{p}", "html_url": f"{HTML_BASE}/{repo}/commit/{p}"}
            for p in parents
        ],
    }


def _comment_json(fake: FakeGitHub, comment: CommentState) -> Json:
    api = _api(fake, f"/repos/{comment.repo}")
    return {
        "id": comment.id,
        "node_id": f"IC_{comment.id}",
        "url": f"{api}/issues/comments/{comment.id}",
        "html_url": f"{HTML_BASE}/{comment.repo}/pull/{comment.issue_number}"
        f"#issuecomment-{comment.id}",
        "issue_url": f"{api}/issues/{comment.issue_number}",
        "body": comment.body,
        "user": _user(fake, comment.user, comment.user_type),
        "created_at": _iso(comment.created_at),
        "updated_at": _iso(comment.updated_at),
        "author_association": "NONE" if comment.user_type == "Bot" else "CONTRIBUTOR",
        "performed_via_github_app": _app_json(fake) if comment.user_type == "Bot" else None,
    }


def _reaction_json(fake: FakeGitHub, reaction: ReactionState) -> Json:
    return {
        "id": reaction.id,
        "node_id": f"REA_{reaction.id}",
        "user": _user(fake, reaction.user, reaction.user_type),
        "content": reaction.content,
        "created_at": _iso(reaction.created_at),
    }


def _check_run_json(fake: FakeGitHub, run: CheckRunState) -> Json:
    api = _api(fake, f"/repos/{run.repo}")
    pulls = [
        p
        for p in fake._pulls.values()
        if p.repo == run.repo and p.head_sha == run.head_sha and p.head_repo == p.repo
    ]
    repo_min = {"id": fake._repos[run.repo].id, "url": api, "name": fake._repos[run.repo].name}
    return {
        "id": run.id,
        "head_sha": run.head_sha,
        "node_id": f"CR_{run.id}",
        "external_id": run.external_id,
        "url": f"{api}/check-runs/{run.id}",
        "html_url": f"{HTML_BASE}/{run.repo}/runs/{run.id}",
        "details_url": run.details_url,
        "status": run.status,
        "conclusion": run.conclusion,
        "started_at": _iso(run.started_at),
        "completed_at": _iso(run.completed_at),
        "output": {
            "title": run.title,
            "summary": run.summary,
            "text": run.text,
            "annotations_count": len(run.annotations),
            "annotations_url": f"{api}/check-runs/{run.id}/annotations",
        },
        "name": run.name,
        "check_suite": {"id": int(_sha(run.repo, run.head_sha)[:8], 16)},
        "app": _app_json(fake),
        # GitHub leaves this empty for a PR from a fork.
        "pull_requests": [
            {
                "id": p.id,
                "number": p.number,
                "url": f"{api}/pulls/{p.number}",
                "head": {"ref": p.head_ref, "sha": p.head_sha, "repo": repo_min},
                "base": {"ref": p.base_ref, "sha": p.base_sha, "repo": repo_min},
            }
            for p in pulls
        ],
    }


# --------------------------------------------------------------------------------------------
# Pagination
# --------------------------------------------------------------------------------------------


def _page(ctx: _Ctx, items: list[Any], wrap: Callable[[list[Any]], Any] | None = None) -> Response:
    """One page of `items` with GitHub's `link` header (per_page <= 100, default 30)."""
    per_page = ctx.query_int("per_page", 30)
    page = ctx.query_int("page", 1, high=10**6)
    last = max(1, -(-len(items) // per_page))
    chunk = items[(page - 1) * per_page : page * per_page]
    links = []

    def link(n: int, rel: str) -> str:
        query = {**ctx.request.query, "per_page": str(per_page), "page": str(n)}
        return f'<{ctx.fake.url}{ctx.request.path}?{urlencode(query)}>; rel="{rel}"'

    if page > 1:
        links.append(link(page - 1, "prev"))
    if page < last:
        links += [link(page + 1, "next"), link(last, "last")]
    if page > 1:
        links.append(link(1, "first"))
    headers = {"link": ", ".join(links)} if links else {}
    return _json_response(200, wrap(chunk) if wrap else chunk, headers)


# --------------------------------------------------------------------------------------------
# Handlers
# --------------------------------------------------------------------------------------------


def _get_app(ctx: _Ctx) -> Response:
    return _json_response(200, _app_json(ctx.fake))


def _get_repo_installation(ctx: _Ctx, owner: str, repo: str) -> Response:
    target = ctx.fake._repos.get(f"{owner}/{repo}")
    if target is None or target.installation_id is None:
        raise _HttpError(
            404,
            "Not Found",
            documentation_url=f"{DOCS}/apps/apps#get-a-repository-installation-for-the-authenticated-app",
        )
    inst = ctx.fake._installations[target.installation_id]
    return _json_response(200, _installation_json(ctx.fake, inst))


def _create_token(ctx: _Ctx, installation_id: str) -> Response:
    inst = ctx.fake._installations.get(int(installation_id))
    if inst is None:
        raise _HttpError(404, "Not Found")
    token = "ghs_" + hashlib.sha256(f"{inst.id}:{time.time_ns()}".encode()).hexdigest()[:36]
    expires = _now() + ctx.fake.token_ttl
    ctx.fake._tokens[token] = _Token(inst.id, expires, ctx.fake.app_login)
    body = {
        "token": token,
        "expires_at": _iso(expires),
        "permissions": _app_json(ctx.fake)["permissions"],
        "repository_selection": "selected",
    }
    return _json_response(201, body)


def _get_repo(ctx: _Ctx, owner: str, repo: str) -> Response:
    data = _repo_json(ctx.fake, ctx.fake._repo(f"{owner}/{repo}"))
    data["permissions"] = {
        "admin": False,
        "maintain": False,
        "push": False,
        "triage": False,
        "pull": True,
    }
    return _json_response(200, data)


def _get_pull(ctx: _Ctx, owner: str, repo: str, number: str) -> Response:
    pull = ctx.fake._pull(f"{owner}/{repo}", int(number))
    accept = ctx.request.headers.get("accept", "")
    if "application/vnd.github.diff" in accept or "application/vnd.github.v3.diff" in accept:
        too_large = _diff_too_large(ctx.fake, pull)
        if too_large is not None:
            raise _HttpError(
                406,
                too_large,
                errors=[{"resource": "PullRequest", "field": "diff", "code": "too_large"}],
                documentation_url=f"{DOCS}/pulls/pulls#list-pull-requests-files",
            )
        headers = _rate_headers()
        headers["x-github-media-type"] = "github.v3; param=diff"
        return Response(
            pull.diff.encode(),
            200,
            headers,
            media_type="application/vnd.github.diff; charset=utf-8",
        )
    return _json_response(200, _pull_json(ctx.fake, pull))


def _diff_too_large(fake: FakeGitHub, pull: _Pull) -> str | None:
    """GitHub's 406 message when the PR's diff is past its limits, else None."""
    if pull.diff_too_large:
        return DIFF_TOO_LARGE_MESSAGE
    files = PatchSet(pull.diff)
    if len(files) > fake.diff_max_files:
        return DIFF_TOO_LARGE_MESSAGE.replace("(300)", f"({fake.diff_max_files})")
    if sum(f.added + f.removed for f in files) > fake.diff_max_lines:
        return DIFF_TOO_MANY_LINES_MESSAGE.replace("(20000)", f"({fake.diff_max_lines})")
    return None


def _list_pull_files(ctx: _Ctx, owner: str, repo: str, number: str) -> Response:
    pull = ctx.fake._pull(f"{owner}/{repo}", int(number))
    return _page(ctx, _diff_entries(ctx.fake, pull)[: ctx.fake.files_max])


def _list_pull_commits(ctx: _Ctx, owner: str, repo: str, number: str) -> Response:
    pull = ctx.fake._pull(f"{owner}/{repo}", int(number))
    commits = []
    parent: str | None = pull.base_sha
    for sha, message in pull.commits:
        commits.append(_commit_json(ctx.fake, pull.repo, sha, message, parent))
        parent = sha
    return _page(ctx, commits)


def _get_content(ctx: _Ctx, owner: str, repo: str, path: str = "") -> Response:
    target = ctx.fake._repo(f"{owner}/{repo}")
    ref = ctx.request.query.get("ref") or target.default_branch
    files = ctx.fake._resolve_ref(target, ref)
    path = path.strip("/")
    not_found = _HttpError(
        404, "Not Found", documentation_url=f"{DOCS}/repos/contents#get-repository-content"
    )
    if path in files:
        data = files[path]
        if "application/vnd.github.raw" in ctx.request.headers.get("accept", ""):
            headers = _rate_headers()
            return Response(
                data, 200, headers, media_type="application/vnd.github.raw; charset=utf-8"
            )
        return _json_response(200, _content_json(ctx.fake, target, ref, path, data))
    prefix = f"{path}/" if path else ""
    children = sorted({p[len(prefix) :].split("/", 1)[0] for p in files if p.startswith(prefix)})
    if not children:
        raise not_found
    items = []
    for child in children:
        child_path = prefix + child
        if child_path in files:
            items.append(
                _content_json(ctx.fake, target, ref, child_path, files[child_path], listing=True)
            )
        else:
            items.append(_dir_json(ctx.fake, target, ref, child_path))
    return _json_response(200, items)


def _content_links(fake: FakeGitHub, repo: _Repo, ref: str, path: str, sha: str, kind: str) -> Json:
    api = _api(fake, f"/repos/{repo.full_name}/contents/{quote(path)}?ref={quote(ref)}")
    html = f"{HTML_BASE}/{repo.full_name}/{kind}/{ref}/{quote(path)}"
    git = _api(fake, f"/repos/{repo.full_name}/git/{'blobs' if kind == 'blob' else 'trees'}/{sha}")
    return {
        "url": api,
        "html_url": html,
        "git_url": git,
        "_links": {"self": api, "git": git, "html": html},
    }


def _content_json(
    fake: FakeGitHub, repo: _Repo, ref: str, path: str, data: bytes, *, listing: bool = False
) -> Json:
    sha = _blob_sha(data)
    item: Json = {
        "type": "file",
        "name": path.rsplit("/", 1)[-1],
        "path": path,
        "sha": sha,
        "size": len(data),
        "download_url": f"https://raw.githubusercontent.com/{repo.full_name}/{ref}/{quote(path)}",
        **_content_links(fake, repo, ref, path, sha, "blob"),
    }
    if not listing:
        inline = len(data) <= CONTENT_INLINE_MAX
        item["encoding"] = "base64" if inline else "none"
        item["content"] = _b64_lines(data) if inline else ""
    return item


def _dir_json(fake: FakeGitHub, repo: _Repo, ref: str, path: str) -> Json:
    sha = _sha(repo.full_name, ref, path)
    return {
        "type": "dir",
        "name": path.rsplit("/", 1)[-1],
        "path": path,
        "sha": sha,
        "size": 0,
        "download_url": None,
        **_content_links(fake, repo, ref, path, sha, "tree"),
    }


def _get_tree(ctx: _Ctx, owner: str, repo: str, sha: str) -> Response:
    target = ctx.fake._repo(f"{owner}/{repo}")
    if sha not in target.refs:
        raise _HttpError(404, "Not Found")
    files = target.refs[sha]
    recursive = ctx.request.query.get("recursive") not in (None, "", "0", "false")
    paths: set[str] = set()
    dirs: set[str] = set()
    for path in files:
        parts = path.split("/")
        if not recursive:
            (paths if len(parts) == 1 else dirs).add(parts[0])
            continue
        paths.add(path)
        dirs.update("/".join(parts[:i]) for i in range(1, len(parts)))
    api = _api(ctx.fake, f"/repos/{target.full_name}/git")
    entries: list[Json] = [
        {
            "path": d,
            "mode": "040000",
            "type": "tree",
            "sha": _sha(sha, d),
            "url": f"{api}/trees/{_sha(sha, d)}",
        }
        for d in dirs
    ] + [
        {
            "path": p,
            "mode": "100644",
            "type": "blob",
            "sha": _blob_sha(files[p]),
            "size": len(files[p]),
            "url": f"{api}/blobs/{_blob_sha(files[p])}",
        }
        for p in paths
    ]
    entries.sort(key=lambda e: e["path"])
    truncated = len(entries) > ctx.fake.tree_limit
    body = {
        "sha": _sha(sha, "tree"),
        "url": f"{api}/trees/{_sha(sha, 'tree')}",
        "tree": entries[: ctx.fake.tree_limit],
        "truncated": truncated,
    }
    return _json_response(200, body)


def _short(repo: _Repo, ref: str) -> str:
    sha = ref if re.fullmatch(r"[0-9a-f]{40}", ref) else _sha(repo.full_name, ref, "head")
    return sha[:7]


def _tarball(repo: _Repo, ref: str, files: Mapping[str, bytes]) -> bytes:
    """A gzip tar as codeload sends it: everything under `{owner}-{repo}-{shortsha}/`."""
    top = f"{repo.owner}-{repo.name}-{_short(repo, ref)}"
    buffer = io.BytesIO()
    with tarfile.open(fileobj=buffer, mode="w", format=tarfile.PAX_FORMAT) as tar:
        info = tarfile.TarInfo(f"{top}/")
        info.type = tarfile.DIRTYPE
        info.mode = 0o775
        tar.addfile(info)
        for path in sorted(files):
            data = files[path]
            info = tarfile.TarInfo(f"{top}/{path}")
            info.size = len(data)
            info.mode = 0o664
            tar.addfile(info, io.BytesIO(data))
    return gzip.compress(buffer.getvalue(), mtime=0)


def _get_tarball(ctx: _Ctx, owner: str, repo: str, ref: str) -> Response:
    """`GET /repos/o/r/tarball/{ref}`: 302 to a codeload URL carrying a short-lived token."""
    target = ctx.fake._repo(f"{owner}/{repo}")
    ctx.fake._resolve_ref(target, ref)
    token = f"{random.getrandbits(64):016x}"
    ctx.fake._archive_tokens[token] = (target.full_name, ref)
    location = f"{ctx.fake.url}/codeload/{owner}/{repo}/legacy.tar.gz/{quote(ref)}?token={token}"
    headers = {**_rate_headers(), "location": location}
    return Response(b"", 302, headers)


def _get_blob(ctx: _Ctx, owner: str, repo: str, sha: str) -> Response:
    target = ctx.fake._repo(f"{owner}/{repo}")
    for files in target.refs.values():
        for data in files.values():
            if _blob_sha(data) == sha:
                api = _api(ctx.fake, f"/repos/{target.full_name}/git/blobs/{sha}")
                body = {
                    "sha": sha,
                    "node_id": f"B_{sha[:12]}",
                    "size": len(data),
                    "url": api,
                    "content": _b64_lines(data),
                    "encoding": "base64",
                }
                return _json_response(200, body)
    raise _HttpError(404, "Not Found", documentation_url=f"{DOCS}/git/blobs#get-a-blob")


def _compare(ctx: _Ctx, owner: str, repo: str, basehead: str) -> Response:
    full_name = f"{owner}/{repo}"
    target = ctx.fake._repo(full_name)
    base, sep, head = basehead.partition("...")
    if not sep or (base not in target.refs and base not in target.commit_messages):
        raise _HttpError(404, "Not Found")
    # Two heads a pull request had: their histories say ahead, behind or diverged.
    recorded = next(
        (
            p
            for p in ctx.fake._pulls.values()
            if p.repo == full_name and head in p.history and base in p.history
        ),
        None,
    )
    if recorded is not None:
        return _compare_heads(ctx, target, recorded, base, head, basehead)
    pull = next(
        (p for p in ctx.fake._pulls.values() if p.repo == full_name and p.head_sha == head), None
    )
    if pull is None:
        raise _HttpError(404, "Not Found")
    shas = [sha for sha, _ in pull.commits]
    start = shas.index(base) + 1 if base in shas else 0
    chosen = pull.commits[start:]
    commits = []
    parent = base
    for sha, message in chosen:
        commits.append(_commit_json(ctx.fake, full_name, sha, message, parent))
        parent = sha
    base_commit = _commit_json(
        ctx.fake, full_name, base, target.commit_messages.get(base, "base"), None
    )
    files = _diff_entries(ctx.fake, pull) if commits else []
    return _compare_response(ctx, target, basehead, base_commit, base_commit, commits, files)


def _compare_heads(
    ctx: _Ctx, target: _Repo, pull: _Pull, base: str, head: str, basehead: str
) -> Response:
    """Compare between two recorded heads of `pull`: the commits `head` has that `base`
    has not, and the files changed from their merge base to `head` (a diff of the trees)."""
    fake, full_name = ctx.fake, target.full_name
    ours, theirs = pull.history[head], pull.history[base]
    common = 0
    while common < min(len(ours), len(theirs)) and ours[common] == theirs[common]:
        common += 1
    merge_base = ours[common - 1] if common else pull.base_sha
    if base == head:
        status, merge_base = "identical", base
    elif base in ours:
        status, merge_base = "ahead", base
        common = ours.index(base) + 1
    elif head in theirs:
        status, merge_base = "behind", head
    else:
        status = "diverged"
    ahead = ours[common:] if status != "behind" else []
    behind_by = 0 if status in ("ahead", "identical") else len(theirs) - common
    commits = []
    parent = merge_base
    for sha in ahead:
        message = target.commit_messages.get(sha, "commit")
        commits.append(_commit_json(fake, full_name, sha, message, parent))
        parent = sha
    base_commit = _commit_json(fake, full_name, base, target.commit_messages.get(base, "c"), None)
    merge_commit = _commit_json(
        fake, full_name, merge_base, target.commit_messages.get(merge_base, "base"), None
    )
    old = target.refs.get(merge_base) or target.refs.get(pull.base_ref, {})
    diff = tree_diff(old, target.refs.get(head, {}))
    if "application/vnd.github.diff" in ctx.request.headers.get("accept", ""):
        headers = _rate_headers()
        headers["x-github-media-type"] = "github.v3; param=diff"
        return Response(diff.encode(), 200, headers, media_type="application/vnd.github.diff")
    files = _entries_of(fake, full_name, head, diff) if diff else []
    return _compare_response(
        ctx,
        target,
        basehead,
        base_commit,
        merge_commit,
        commits,
        files[:300],  # compare lists at most 300 files
        status=status,
        behind_by=behind_by,
    )


def _compare_response(
    ctx: _Ctx,
    target: _Repo,
    basehead: str,
    base_commit: Json,
    merge_base_commit: Json,
    commits: list[Json],
    files: list[Json],
    *,
    status: str | None = None,
    behind_by: int = 0,
) -> Response:
    full_name = target.full_name
    api = _api(ctx.fake, f"/repos/{full_name}")
    body = {
        "url": f"{api}/compare/{basehead}",
        "html_url": f"{HTML_BASE}/{full_name}/compare/{basehead}",
        "permalink_url": f"{HTML_BASE}/{full_name}/compare/{basehead}",
        "diff_url": f"{HTML_BASE}/{full_name}/compare/{basehead}.diff",
        "patch_url": f"{HTML_BASE}/{full_name}/compare/{basehead}.patch",
        "base_commit": base_commit,
        "merge_base_commit": merge_base_commit,
        "status": status or ("ahead" if commits else "identical"),
        "ahead_by": len(commits),
        "behind_by": behind_by,
        "total_commits": len(commits),
        "commits": commits,
        "files": files,
    }
    return _json_response(200, body)


def tree_diff(old: Mapping[str, bytes], new: Mapping[str, bytes]) -> str:
    """A git diff between two trees (path -> bytes), as `git diff` writes it."""
    parts: list[str] = []
    for path in sorted(set(old) | set(new)):
        before, after = old.get(path), new.get(path)
        if before == after:
            continue
        source = "/dev/null" if before is None else f"a/{path}"
        target = "/dev/null" if after is None else f"b/{path}"
        head = f"diff --git a/{path} b/{path}\n"
        if before is None:
            head += "new file mode 100644\n"
        elif after is None:
            head += "deleted file mode 100644\n"
        head += f"index {_blob_sha(before or b'')[:7]}..{_blob_sha(after or b'')[:7]}"
        head += "\n" if before is None or after is None else " 100644\n"
        texts: list[str | None] = []
        for data in (before or b"", after or b""):
            try:
                texts.append(data.decode("utf-8"))
            except UnicodeDecodeError:
                texts.append(None)
        if None in texts or any("\0" in t for t in texts if t is not None):
            parts.append(head + f"Binary files {source} and {target} differ\n")
            continue
        lines = [
            [line if line.endswith("\n") else line + "\n" for line in t.splitlines(True)]
            for t in texts
            if t is not None
        ]
        hunks = "".join(difflib.unified_diff(lines[0], lines[1], source, target))
        parts.append(head + hunks)
    return "".join(parts)


def _list_comments(ctx: _Ctx, owner: str, repo: str, number: str) -> Response:
    full_name = f"{owner}/{repo}"
    ctx.fake._repo(full_name)
    found = [
        _comment_json(ctx.fake, c)
        for c in sorted(ctx.fake._comments.values(), key=lambda c: c.id)
        if c.repo == full_name and c.issue_number == int(number)
    ]
    return _page(ctx, found)


def _comment_body(ctx: _Ctx) -> str:
    body = ctx.body.get("body")
    if not isinstance(body, str):
        raise _validation_failed("IssueComment", "body", "missing_field", "body wasn't supplied.")
    if len(body) > COMMENT_MAX:
        raise _validation_failed(
            "IssueComment",
            "data",
            "unprocessable",
            f"Body is too long (maximum is {COMMENT_MAX} characters)",
        )
    return body


def _create_comment(ctx: _Ctx, owner: str, repo: str, number: str) -> Response:
    full_name = f"{owner}/{repo}"
    ctx.fake._repo(full_name)
    if (full_name, int(number)) not in ctx.fake._pulls:
        raise _HttpError(404, "Not Found")
    body = _comment_body(ctx)
    login, kind = ctx.actor
    comment = ctx.fake._create_comment(full_name, int(number), body, login, kind)
    headers = {"location": _comment_json(ctx.fake, comment)["url"]}
    return _json_response(201, _comment_json(ctx.fake, comment), headers)


def _owned_comment(ctx: _Ctx, owner: str, repo: str, comment_id: str) -> CommentState:
    comment = ctx.fake._comments.get(int(comment_id))
    if comment is None or comment.repo != f"{owner}/{repo}":
        raise _HttpError(404, "Not Found")
    return comment


def _get_comment(ctx: _Ctx, owner: str, repo: str, comment_id: str) -> Response:
    return _json_response(
        200, _comment_json(ctx.fake, _owned_comment(ctx, owner, repo, comment_id))
    )


def _update_comment(ctx: _Ctx, owner: str, repo: str, comment_id: str) -> Response:
    comment = _owned_comment(ctx, owner, repo, comment_id)
    body = _comment_body(ctx)
    if ctx.actor[0] != comment.user:
        raise _HttpError(403, "Resource not accessible by integration")
    comment.body, comment.updated_at = body, _now()
    return _json_response(200, _comment_json(ctx.fake, comment))


_REACTIONS = ("+1", "-1", "laugh", "confused", "heart", "hooray", "rocket", "eyes")


def _create_reaction(ctx: _Ctx, owner: str, repo: str, comment_id: str) -> Response:
    comment = _owned_comment(ctx, owner, repo, comment_id)
    content = ctx.body.get("content")
    if content not in _REACTIONS:
        raise _validation_failed(
            "Reaction", "content", "invalid", "content is not included in the list"
        )
    login, kind = ctx.actor
    for existing in ctx.fake._reactions:
        if (existing.comment_id, existing.content, existing.user) == (comment.id, content, login):
            return _json_response(200, _reaction_json(ctx.fake, existing))
    reaction = ReactionState(
        ctx.fake._next_id("reaction"), comment.id, content, login, kind, _now()
    )
    ctx.fake._reactions.append(reaction)
    return _json_response(201, _reaction_json(ctx.fake, reaction))


def _list_labels(ctx: _Ctx, owner: str, repo: str, number: str) -> Response:
    full_name = f"{owner}/{repo}"
    names = ctx.fake._issue_labels.get((full_name, int(number)))
    if names is None:
        raise _HttpError(404, "Not Found")
    return _page(ctx, [_label_json(ctx.fake, full_name, n) for n in names])


def _add_labels(ctx: _Ctx, owner: str, repo: str, number: str) -> Response:
    full_name = f"{owner}/{repo}"
    names = ctx.fake._issue_labels.get((full_name, int(number)))
    if names is None:
        raise _HttpError(404, "Not Found")
    raw = ctx.request.json
    wanted = raw.get("labels") if isinstance(raw, dict) else raw
    if not isinstance(wanted, list) or not all(isinstance(n, str) for n in wanted):
        raise _validation_failed("Label", "labels", "invalid", "labels must be a list of names")
    for name in wanted:
        if name not in names:
            names.append(name)
    return _json_response(200, [_label_json(ctx.fake, full_name, n) for n in names])


def _validate_output(output: Any) -> None:
    if output is None:
        return
    if (
        not isinstance(output, dict)
        or not isinstance(output.get("title"), str)
        or not isinstance(output.get("summary"), str)
    ):
        raise _validation_failed(
            "CheckRun", "output", "missing_field", "output needs title and summary"
        )
    for key in ("summary", "text"):
        value = output.get(key)
        if isinstance(value, str) and len(value) > OUTPUT_MAX:
            raise _HttpError(
                422,
                f"Invalid request.\n\nOnly {OUTPUT_MAX} characters are allowed; "
                f"{len(value)} were supplied.",
            )
    annotations = output.get("annotations") or []
    if len(annotations) > ANNOTATIONS_MAX:
        raise _validation_failed(
            "CheckRun",
            "annotations",
            "too_many",
            f"Only {ANNOTATIONS_MAX} annotations are allowed per request; "
            f"{len(annotations)} were supplied.",
        )
    for annotation in annotations:
        missing = {"path", "start_line", "end_line", "annotation_level", "message"} - set(
            annotation
        )
        if missing:
            raise _validation_failed(
                "CheckRun", "annotations", "missing_field", f"annotation lacks {sorted(missing)}"
            )


def _validate_actions(actions: Any) -> list[Json]:
    if actions is None:
        return []
    if not isinstance(actions, list) or len(actions) > 3:
        raise _validation_failed("CheckRun", "actions", "invalid", "at most 3 actions")
    for action in actions:
        limits = {"label": 20, "description": 40, "identifier": 20}
        for key, limit in limits.items():
            value = action.get(key) if isinstance(action, dict) else None
            if not isinstance(value, str) or not value or len(value) > limit:
                raise _validation_failed(
                    "CheckRun", f"actions.{key}", "invalid", f"{key} must be 1-{limit} characters"
                )
    return list(actions)


def _apply_check_fields(run: CheckRunState, body: Json) -> None:
    for key in ("name", "details_url", "external_id"):
        if key in body:
            setattr(run, key, body[key])
    if "status" in body:
        run.status = body["status"]
    if "conclusion" in body:
        run.conclusion, run.status = body["conclusion"], "completed"
    if run.status == "completed" and run.completed_at is None:
        run.completed_at = _now()
    output = body.get("output")
    if output:
        run.title, run.summary = output["title"], output["summary"]
        if "text" in output:
            run.text = output["text"]
        run.annotations.extend(output.get("annotations") or [])
    if "actions" in body:
        run.actions = _validate_actions(body["actions"])


def _create_check_run(ctx: _Ctx, owner: str, repo: str) -> Response:
    full_name = f"{owner}/{repo}"
    target = ctx.fake._repo(full_name)
    body = ctx.body
    if not isinstance(body.get("name"), str) or not isinstance(body.get("head_sha"), str):
        raise _validation_failed(
            "CheckRun", "name", "missing_field", "name and head_sha are required"
        )
    if body["head_sha"] not in target.refs and body["head_sha"] not in target.commit_messages:
        raise _HttpError(422, f"No commit found for SHA: {body['head_sha']}")
    if body.get("status") == "completed" and "conclusion" not in body:
        raise _validation_failed(
            "CheckRun", "conclusion", "missing_field", "conclusion is required when completed"
        )
    _validate_output(body.get("output"))
    _validate_actions(body.get("actions"))
    run = CheckRunState(
        id=ctx.fake._next_id("check_run"),
        repo=full_name,
        name=body["name"],
        head_sha=body["head_sha"],
        status="queued",
        conclusion=None,
        external_id=None,
        details_url=None,
        started_at=_now(),
        completed_at=None,
        title=None,
        summary=None,
        text=None,
        annotations=[],
        actions=[],
        app_id=ctx.fake.app_id or 0,
    )
    _apply_check_fields(run, body)
    ctx.fake._check_runs[run.id] = run
    return _json_response(201, _check_run_json(ctx.fake, run))


def _owned_run(ctx: _Ctx, owner: str, repo: str, run_id: str) -> CheckRunState:
    run = ctx.fake._check_runs.get(int(run_id))
    if run is None or run.repo != f"{owner}/{repo}":
        raise _HttpError(404, "Not Found")
    return run


def _get_check_run(ctx: _Ctx, owner: str, repo: str, run_id: str) -> Response:
    return _json_response(200, _check_run_json(ctx.fake, _owned_run(ctx, owner, repo, run_id)))


def _update_check_run(ctx: _Ctx, owner: str, repo: str, run_id: str) -> Response:
    run = _owned_run(ctx, owner, repo, run_id)
    body = ctx.body
    _validate_output(body.get("output"))
    _validate_actions(body.get("actions"))
    _apply_check_fields(run, body)
    return _json_response(200, _check_run_json(ctx.fake, run))


def _list_check_runs(ctx: _Ctx, owner: str, repo: str, ref: str) -> Response:
    full_name = f"{owner}/{repo}"
    target = ctx.fake._repo(full_name)
    # A branch name stands for its head commit (only the default branch's is known here).
    sha = _sha(full_name, ref, "head") if ref == target.default_branch else ref
    query = ctx.request.query
    runs = [r for r in ctx.fake._check_runs.values() if r.repo == full_name and r.head_sha == sha]
    if "check_name" in query:
        runs = [r for r in runs if r.name == query["check_name"]]
    if "status" in query:
        runs = [r for r in runs if r.status == query["status"]]
    if "app_id" in query:
        runs = [r for r in runs if str(r.app_id) == query["app_id"]]
    if query.get("filter", "latest") == "latest":
        # GitHub's default: only the most recent run of each name.
        latest: dict[str, CheckRunState] = {}
        for run in sorted(runs, key=lambda r: r.id):
            latest[run.name] = run
        runs = list(latest.values())
    items = [_check_run_json(ctx.fake, r) for r in sorted(runs, key=lambda r: -r.id)]
    return _page(ctx, items, lambda chunk: {"total_count": len(items), "check_runs": chunk})


def _get_permission(ctx: _Ctx, owner: str, repo: str, username: str) -> Response:
    full_name = f"{owner}/{repo}"
    target = ctx.fake._repo(full_name)
    if (full_name, username.casefold()) in ctx.fake._not_collaborators:
        raise _HttpError(
            404,
            "Not Found",
            documentation_url=f"{DOCS}/collaborators/collaborators"
            "#get-repository-permissions-for-a-user",
        )
    default: Permission = "none" if target.private else "read"
    permission = ctx.fake._permissions.get((full_name, username), default)
    user = {**_user(ctx.fake, username), "role_name": permission}
    user["permissions"] = {
        "admin": permission == "admin",
        "maintain": permission == "admin",
        "push": permission in ("admin", "write"),
        "triage": permission in ("admin", "write"),
        "pull": permission != "none",
    }
    return _json_response(200, {"permission": permission, "role_name": permission, "user": user})


def _routes(fake: FakeGitHub) -> list[_Route]:
    del fake
    repo = r"/repos/(?P<owner>[^/]+)/(?P<repo>[^/]+)"
    table: list[tuple[str, str, Callable[..., Response], bool]] = [
        ("GET", r"/app", _get_app, True),
        ("POST", r"/app/installations/(?P<installation_id>\d+)/access_tokens", _create_token, True),
        ("GET", repo + r"/installation", _get_repo_installation, True),
        ("GET", repo, _get_repo, False),
        ("GET", repo + r"/pulls/(?P<number>\d+)", _get_pull, False),
        ("GET", repo + r"/pulls/(?P<number>\d+)/files", _list_pull_files, False),
        ("GET", repo + r"/pulls/(?P<number>\d+)/commits", _list_pull_commits, False),
        ("GET", repo + r"/contents/?", _get_content, False),
        ("GET", repo + r"/contents/(?P<path>.+)", _get_content, False),
        ("GET", repo + r"/git/trees/(?P<sha>.+)", _get_tree, False),
        ("GET", repo + r"/git/blobs/(?P<sha>[0-9a-f]{40})", _get_blob, False),
        ("GET", repo + r"/tarball/(?P<ref>.+)", _get_tarball, False),
        ("GET", repo + r"/compare/(?P<basehead>.+)", _compare, False),
        ("GET", repo + r"/issues/(?P<number>\d+)/comments", _list_comments, False),
        ("POST", repo + r"/issues/(?P<number>\d+)/comments", _create_comment, False),
        ("GET", repo + r"/issues/comments/(?P<comment_id>\d+)", _get_comment, False),
        ("PATCH", repo + r"/issues/comments/(?P<comment_id>\d+)", _update_comment, False),
        ("POST", repo + r"/issues/comments/(?P<comment_id>\d+)/reactions", _create_reaction, False),
        ("GET", repo + r"/issues/(?P<number>\d+)/labels", _list_labels, False),
        ("POST", repo + r"/issues/(?P<number>\d+)/labels", _add_labels, False),
        ("POST", repo + r"/check-runs", _create_check_run, False),
        ("GET", repo + r"/check-runs/(?P<run_id>\d+)", _get_check_run, False),
        ("PATCH", repo + r"/check-runs/(?P<run_id>\d+)", _update_check_run, False),
        ("GET", repo + r"/commits/(?P<ref>[^/]+)/check-runs", _list_check_runs, False),
        ("GET", repo + r"/collaborators/(?P<username>[^/]+)/permission", _get_permission, False),
    ]
    from tests.support.github_reviews import review_routes

    table += review_routes()
    from tests.support.github_oauth import oauth_routes

    table += oauth_routes()
    return [_Route(m, re.compile(p), h, a) for m, p, h, a in table]


# --------------------------------------------------------------------------------------------
# Running it
# --------------------------------------------------------------------------------------------


@contextlib.contextmanager
def run_fake_github() -> Iterator[FakeGitHub]:
    """A running fake on a free port; `.url` is githubkit's `base_url`."""
    fake = FakeGitHub()
    runner = ServerThread(fake.app, name="fake GitHub server")
    runner.start()
    fake.url = f"http://127.0.0.1:{runner.port}"
    fake.calls.clear()  # the start-up probe
    try:
        yield fake
    finally:
        runner.stop()


# --------------------------------------------------------------------------------------------
# A ready-made scene for tests
# --------------------------------------------------------------------------------------------

APP_ID = 4242
INSTALLATION_ID = 77
ACCOUNT = "acme"
REPO = "acme/widgets"


def install_app(
    fake: FakeGitHub,
    *,
    app_id: int = APP_ID,
    installation_id: int = INSTALLATION_ID,
    account: str = ACCOUNT,
) -> str:
    """Register the App (key made once per process) and one installation.

    Returns the App's private key PEM, for `GITHUB_PRIVATE_KEY`."""
    private, public = app_keypair()
    fake.set_app_key(app_id, public)
    fake.add_installation(installation_id, account)
    return private
