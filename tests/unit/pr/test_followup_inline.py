"""Inline review comments: which lines GitHub accepts (checked against the diff before
posting), the comment a person sees, fingerprints found again from the comments, and
`publish_inline` against the fake GitHub (posted once, dismissed, fixed: resolved or
replied to); the forge seam's review comments and threads (`GitHubForge` over the fake
GitHub), and the follow-up step on a forge that cannot resolve threads."""

from __future__ import annotations

from collections.abc import AsyncIterator
from pathlib import Path

import httpx
import pytest

from bot.council.advisory import Advisory, MergedFinding, Resolution
from bot.forge.errors import ForgeValidationError
from bot.forge.reviews import LineComment
from bot.github.client import GitHubApp, RepoClient
from bot.github.forge import WORKFLOW, GitHubForge
from bot.github.reviews import create_review, list_review_comments
from bot.pr.followup.inline import publish_inline
from bot.pr.followup.markers import comment_body, finding_fingerprint, marker_fingerprint
from bot.pr.followup.step import InlineRequest, follow_up
from bot.review.anchors import DiffLines
from bot.review.fingerprints import fingerprint
from bot.settings import Settings
from bot.store import Database
from bot.store.findings import pr_findings
from tests.support.github_app import github_app
from tests.support.github_reviews import (
    LINE_NOT_IN_DIFF,
    START_OTHER_HUNK,
    react_as,
    resolve_as,
    reviews_of,
)
from tests.support.github_server import INSTALLATION_ID, REPO, FakeGitHub, install_app
from tests.unit.pr.test_forge_seam import BareForge

HEAD = "1234" * 10
FIXED_HEAD = "5678" * 10
AUTHOR = "octocat"  # the pull request's author

# Two hunks of app/retry.py: right side lines 1-5 (3-4 added) and 20-24 (22 added).
DIFF = """diff --git a/app/retry.py b/app/retry.py
--- a/app/retry.py
+++ b/app/retry.py
@@ -1,3 +1,5 @@
 import time
 def retry(call):
+    while True:
+        call()
     return None
@@ -18,4 +20,5 @@
 def other():
     x = 1
+    y = x / 0
     return x
 # end
"""

FIXED_DIFF = """diff --git a/app/retry.py b/app/retry.py
--- a/app/retry.py
+++ b/app/retry.py
@@ -1,3 +1,5 @@
 import time
 def retry(call):
+    for _ in range(3):
+        call()
     return None
"""


def finding(
    title: str,
    start: int | None,
    end: int | None = None,
    *,
    severity: str = "major",
    replacement: str | None = None,
) -> MergedFinding:
    return MergedFinding.model_validate(
        {
            "severity": severity,
            "path": "app/retry.py",
            "start_line": start,
            "end_line": end,
            "title": title,
            "detail": f"{title}: it matters.",
            "suggestion": "Bound it.",
            "replacement": replacement,
            "raised_by": ["s1"],
            "consensus": 1,
        }
    )


def advisory(*findings: MergedFinding, deliberation: str = "d-1") -> Advisory:
    return Advisory(
        deliberation_id=deliberation,
        protocol="quick",
        topic="t",
        resolution=Resolution.APPROVED_WITH_CONDITIONS,
        findings=list(findings),
    )


# -- lines GitHub accepts ----------------------------------------------------------------------


def test_placement_keeps_to_one_hunk_of_the_right_side() -> None:
    lines = DiffLines.from_diff(DIFF)
    assert lines.hunks == {"app/retry.py": [(1, 5), (20, 24)]}
    assert lines.placement("app/retry.py", 3, 4) == (3, 4)  # both in the first hunk
    assert lines.placement("app/retry.py", 3, None) == (None, 3)
    assert lines.placement("app/retry.py", 4, 22) == (None, 22)  # across hunks: its last line
    assert lines.placement("app/retry.py", 10, None) is None  # between hunks
    assert lines.placement("app/retry.py", 30, None) is None
    assert lines.placement("app/other.py", 3, None) is None  # not in the diff
    assert lines.placement("app/retry.py", None, None) is None  # file-level


def test_placement_keeps_to_the_hunk_lines_the_review_read() -> None:
    # The review read the first hunk only (its hunk lines, added and context: 1-5).
    lines = DiffLines.from_diff(DIFF, {"app/retry.py": [(1, 5)]})
    assert lines.placement("app/retry.py", 3, 4) == (3, 4)
    assert lines.placement("app/retry.py", 1, None) == (None, 1)  # a context line
    assert lines.placement("app/retry.py", 2, 4) == (2, 4)
    assert lines.placement("app/retry.py", 22, None) is None  # a hunk it did not read


def test_the_fingerprint_is_of_the_first_anchored_lines_text() -> None:
    lines = DiffLines.from_diff(DIFF)
    loop = finding("Unbounded retry loop", 3, 4)
    assert finding_fingerprint(loop, lines) == fingerprint(
        "app/retry.py", "unbounded retry-loop!", "while True:"
    )
    moved = DiffLines.from_diff(DIFF.replace("@@ -1,3 +1,5 @@", "@@ -1,3 +7,5 @@"))
    assert finding_fingerprint(finding("Unbounded retry loop", 9, 10), moved) == (
        finding_fingerprint(loop, lines)
    )


def test_the_comment_carries_the_finding_the_fix_and_a_suggestion() -> None:
    f = finding("Unbounded retry loop", 3, 4, replacement="    for _ in range(3):\n        call()")
    body = comment_body(f, "0123456789abcdef", suggestion=True)
    assert marker_fingerprint(body) == "0123456789abcdef"
    assert "**major**: **Unbounded retry loop**" in body and "Bound it." in body
    assert "```suggestion\n    for _ in range(3):\n        call()\n```" in body
    assert "```suggestion" not in comment_body(f, "0123456789abcdef", suggestion=False)
    tricky = finding("x", 3, replacement="s = '```'")
    assert "````suggestion\ns = '```'\n````" in comment_body(tricky, "0" * 16, suggestion=True)


# -- the fake answers like GitHub --------------------------------------------------------------


@pytest.fixture
def fake(fake_github: FakeGitHub) -> FakeGitHub:
    fake_github.reset()
    install_app(fake_github)
    fake_github.add_repo(REPO, installation_id=INSTALLATION_ID, files={"app/retry.py": "x\n"})
    fake_github.add_pull(
        REPO, 1, title="t", body="b", head_sha=HEAD, diff=DIFF, files_at_head={"app/retry.py": "x"}
    )
    return fake_github


@pytest.fixture
async def app(fake: FakeGitHub) -> AsyncIterator[GitHubApp]:
    async with github_app(fake) as app:
        yield app


@pytest.fixture
async def client(app: GitHubApp) -> AsyncIterator[RepoClient]:
    async with app.for_installation(INSTALLATION_ID, REPO) as repo_client:
        yield repo_client


@pytest.fixture
async def db(tmp_path: Path) -> AsyncIterator[Database]:
    async with Database(f"sqlite:///{tmp_path / 'council.db'}") as database:
        yield database


async def test_a_line_outside_the_diff_fails_the_whole_review_with_422(
    fake: FakeGitHub, app: GitHubApp, client: RepoClient
) -> None:
    token = "a-personal-token"
    fake.add_token(token, login="alice")
    good = {"path": "app/retry.py", "line": 3, "side": "RIGHT", "body": "fine"}
    bad = {"path": "app/retry.py", "line": 10, "side": "RIGHT", "body": "not in the diff"}
    async with httpx.AsyncClient(base_url=fake.url) as http:
        answer = await http.post(
            f"/repos/{REPO}/pulls/1/reviews",
            headers={"Authorization": f"token {token}"},
            json={"commit_id": HEAD, "event": "COMMENT", "body": "", "comments": [good, bad]},
        )
    assert answer.status_code == 422
    assert answer.json()["message"] == "Unprocessable Entity"
    assert answer.json()["errors"] == [LINE_NOT_IN_DIFF]
    assert reviews_of(fake).reviews(REPO, 1) == [] and reviews_of(fake).comments(REPO, 1) == []
    across = {**good, "start_line": 3, "line": 22}
    with pytest.raises(ForgeValidationError) as refused:
        await create_review(client, 1, commit_id=HEAD, body="", comments=[across])
    assert START_OTHER_HUNK in refused.value.reason
    await create_review(client, 1, commit_id=HEAD, body="ok", comments=[good])
    (review,) = reviews_of(fake).reviews(REPO, 1)
    assert review.event == "COMMENT" and review.user == fake.app_login
    del app
    assert [(c.path, c.line) for c in await list_review_comments(client, 1)] == [
        ("app/retry.py", 3)
    ]


# -- publish_inline --------------------------------------------------------------------------


async def test_posted_once_and_off_diff_findings_stay_out(
    fake: FakeGitHub, app: GitHubApp, client: RepoClient, db: Database
) -> None:
    login = await app.app_login()
    lines = DiffLines.from_diff(DIFF)
    loop = finding(
        "Unbounded retry loop", 3, 4, replacement="    for _ in range(3):\n        call()"
    )
    crash = finding("Division by zero", 22, severity="critical")
    nit = finding("Name it better", 3, severity="minor")
    off = finding("Somewhere else", 10)  # not a diff line (the anchors would not leave it)
    first = await publish_inline(
        GitHubForge(client), 1, HEAD, advisory(loop, crash, nit, off), lines, db,
        bot_login=login, pr_author=AUTHOR, can_resolve_threads=True,
    )  # fmt: skip
    assert (first.posted, first.off_diff, first.dismissed) == (2, 1, 0)
    (review,) = reviews_of(fake).reviews(REPO, 1)
    assert review.event == "COMMENT"
    comments = reviews_of(fake).comments(REPO, 1)
    assert [(c.start_line, c.line) for c in comments] == [(3, 4), (None, 22)]
    assert "```suggestion" in comments[0].body and "```suggestion" not in comments[1].body
    assert first.advisory.notes[0] == "2 findings posted as review comments on their lines."
    stored = {f.fingerprint: f for f in await pr_findings(db, REPO, 1)}
    for c in comments:
        fp = marker_fingerprint(c.body)
        assert fp is not None and stored[fp].review_comment_id == c.id
        assert stored[fp].thread_node_id == f"PRRT_{c.id}"

    again = await publish_inline(
        GitHubForge(client), 1, HEAD, advisory(loop, crash, nit, off, deliberation="d-2"),
        lines, db, bot_login=login, pr_author=AUTHOR, can_resolve_threads=True,
    )  # fmt: skip
    assert (again.posted, again.already) == (0, 2)
    assert len(reviews_of(fake).reviews(REPO, 1)) == 1
    assert len(reviews_of(fake).comments(REPO, 1)) == 2

    # Without the store, the markers alone keep it from posting twice.
    no_store = await publish_inline(
        GitHubForge(client), 1, HEAD, advisory(loop, crash), lines, None,
        bot_login=login, pr_author=AUTHOR, can_resolve_threads=True,
    )  # fmt: skip
    assert (no_store.posted, no_store.already) == (0, 2)


async def test_a_person_dismisses_by_resolving_or_thumbs_down(
    fake: FakeGitHub, app: GitHubApp, client: RepoClient, db: Database
) -> None:
    login = await app.app_login()
    lines = DiffLines.from_diff(DIFF)
    loop, crash = finding("Unbounded retry loop", 3, 4), finding("Division by zero", 22)
    await publish_inline(
        GitHubForge(client), 1, HEAD, advisory(loop, crash), lines, db,
        bot_login=login, pr_author=AUTHOR, can_resolve_threads=True,
    )  # fmt: skip
    first, second = reviews_of(fake).comments(REPO, 1)
    fake.set_permission(REPO, "alice", "write")  # people who may write: their word counts
    fake.set_permission(REPO, "bob", "admin")
    resolve_as(fake, first.id, "alice")
    react_as(fake, second.id, "-1", "bob")
    react_as(fake, second.id, "+1", "carol")
    later = await publish_inline(
        GitHubForge(client), 1, HEAD, advisory(loop, crash), lines, db,
        bot_login=login, pr_author=AUTHOR, can_resolve_threads=True,
    )  # fmt: skip
    assert later.dismissed == 2 and later.advisory.findings == []
    assert "2 findings dismissed earlier are not raised again." in later.advisory.notes
    assert {f.status for f in await pr_findings(db, REPO, 1)} == {"dismissed"}
    assert len(reviews_of(fake).reviews(REPO, 1)) == 1


async def test_the_bot_resolving_its_own_thread_is_not_a_dismissal(
    fake: FakeGitHub, app: GitHubApp, client: RepoClient, db: Database
) -> None:
    login = await app.app_login()
    lines = DiffLines.from_diff(DIFF)
    loop = finding("Unbounded retry loop", 3, 4)
    await publish_inline(
        GitHubForge(client), 1, HEAD, advisory(loop), lines, db,
        bot_login=login, pr_author=AUTHOR, can_resolve_threads=True,
    )  # fmt: skip
    (comment,) = reviews_of(fake).comments(REPO, 1)
    react_as(fake, comment.id, "-1", login)  # its own reaction does not count either
    resolve_as(fake, comment.id, login)
    later = await publish_inline(
        GitHubForge(client), 1, HEAD, advisory(loop), lines, db,
        bot_login=login, pr_author=AUTHOR, can_resolve_threads=True,
    )  # fmt: skip
    assert later.dismissed == 0 and later.advisory.findings == [loop]


@pytest.mark.parametrize("forbidden", [False, True])
async def test_a_push_that_fixes_a_finding_closes_its_thread(
    fake: FakeGitHub, app: GitHubApp, client: RepoClient, db: Database, forbidden: bool
) -> None:
    login = await app.app_login()
    loop = finding("Unbounded retry loop", 3, 4)
    await publish_inline(
        GitHubForge(client), 1, HEAD, advisory(loop), DiffLines.from_diff(DIFF), db,
        bot_login=login, pr_author=AUTHOR, can_resolve_threads=True,
    )  # fmt: skip
    fake.push(REPO, 1, head_sha=FIXED_HEAD, diff=FIXED_DIFF)
    reviews_of(fake).forbid_resolve = forbidden
    for _ in range(2):  # the second review finds it closed already
        fixed = await publish_inline(
            GitHubForge(client), 1, FIXED_HEAD, advisory(deliberation="d-2"),
            DiffLines.from_diff(FIXED_DIFF), db,
            bot_login=login, pr_author=AUTHOR, can_resolve_threads=True,
        )  # fmt: skip
    (row,) = await pr_findings(db, REPO, 1)
    assert row.status == "fixed" and row.fixed_sha == FIXED_HEAD
    (thread,) = reviews_of(fake).threads(REPO, 1)
    comments = reviews_of(fake).comments(REPO, 1)
    if forbidden:  # a workflow token: one reply, the thread stays open
        assert thread.resolved_by is None
        assert [c.body for c in comments[1:]] == [f"Fixed in {FIXED_HEAD[:7]}."]
        assert comments[1].in_reply_to_id == comments[0].id
    else:
        assert thread.resolved_by == login.removesuffix("[bot]") and len(comments) == 1
    assert fixed.fixed.resolved + fixed.fixed.replied == 0  # nothing left to close


async def test_a_still_open_finding_on_an_unchanged_line_is_not_fixed(
    fake: FakeGitHub, app: GitHubApp, client: RepoClient, db: Database
) -> None:
    login = await app.app_login()
    lines = DiffLines.from_diff(DIFF)
    await publish_inline(
        GitHubForge(client), 1, HEAD, advisory(finding("Division by zero", 22)), lines, db,
        bot_login=login, pr_author=AUTHOR, can_resolve_threads=True,
    )  # fmt: skip
    fake.push(REPO, 1, head_sha=FIXED_HEAD, diff=DIFF)  # another push, the line as it was
    result = await publish_inline(
        GitHubForge(client), 1, FIXED_HEAD, advisory(deliberation="d-2"), lines, db,
        bot_login=login, pr_author=AUTHOR, can_resolve_threads=True,
    )  # fmt: skip
    assert result.fixed.resolved == 0
    assert [f.status for f in await pr_findings(db, REPO, 1)] == ["open"]


# -- replacement code: kept only for the lines it was written for ------------------------------


def test_a_replacement_survives_merging_and_anchoring_only_for_its_own_lines() -> None:
    from bot.council.findings import merge_findings
    from bot.council.schemas import Finding
    from bot.review.anchors import anchor_advisory

    def seat_finding(start: int, end: int | None, replacement: str | None) -> Finding:
        return Finding(
            severity="major",
            path="app/retry.py",
            start_line=start,
            end_line=end,
            title="Unbounded retry loop",
            detail="It never stops.",
            replacement=replacement,
        )

    alone = merge_findings([("s1", [seat_finding(3, 4, "    for _ in range(3):")])])
    assert [f.replacement for f in alone] == ["    for _ in range(3):"]
    # Two seats, one issue, a wider merged range: the replacement was for fewer lines.
    wider = merge_findings(
        [("s1", [seat_finding(3, 4, "    for _ in range(3):")]), ("s2", [seat_finding(3, 5, None)])]
    )
    assert len(wider) == 1 and wider[0].replacement is None
    changed = {"app/retry.py": [(3, 4), (22, 22)]}
    kept = anchor_advisory(advisory(*alone), changed)
    assert kept.findings[0].replacement == "    for _ in range(3):"
    moved = anchor_advisory(advisory(finding("x", 6, replacement="y = 1")), changed)
    assert (moved.findings[0].start_line, moved.findings[0].replacement) == (4, None)


async def test_the_workflow_token_without_a_store_replies_fixed_once(fake: FakeGitHub) -> None:
    """The Action: a workflow's GITHUB_TOKEN (github-actions[bot]) and a store that lasts one
    run. The markers alone keep a finding from being posted twice and tell it was fixed;
    GitHub refuses the token the thread's resolution, so the bot replies in it."""
    fake.add_token("ghs_workflow", login="github-actions[bot]")
    settings = Settings(_env_file=None, github_api_url=fake.url, content_pacing_s=0)
    login = "github-actions[bot]"
    loop = finding("Unbounded retry loop", 3, 4)
    async with RepoClient.from_token("ghs_workflow", REPO, settings) as workflow:
        first = await publish_inline(
            GitHubForge(workflow), 1, HEAD, advisory(loop), DiffLines.from_diff(DIFF), None,
            bot_login=login, pr_author=AUTHOR, can_resolve_threads=True,
        )  # fmt: skip
        assert first.posted == 1
        (comment,) = reviews_of(fake).comments(REPO, 1)
        assert comment.user == login and "<!-- pr-council:anchor " in comment.body
        fake.push(REPO, 1, head_sha=FIXED_HEAD, diff=FIXED_DIFF)
        for _ in range(2):
            later = await publish_inline(
                GitHubForge(workflow), 1, FIXED_HEAD, advisory(deliberation="d-2"),
                DiffLines.from_diff(FIXED_DIFF), None, bot_login=login, pr_author=AUTHOR,
                can_resolve_threads=True,
            )  # fmt: skip
    assert later.fixed.replied == 0  # the second run found its reply there
    (thread,) = reviews_of(fake).threads(REPO, 1)
    assert thread.resolved_by is None
    replies = [c for c in reviews_of(fake).comments(REPO, 1) if c.in_reply_to_id == comment.id]
    assert [r.body for r in replies] == [f"Fixed in {FIXED_HEAD[:7]}."]
    forbidden = [
        c
        for c in fake.calls_to("POST", "/graphql")
        if "resolveReviewThread" in str((c.json or {}).get("query"))
    ]
    assert len(forbidden) == 1  # tried once, FORBIDDEN, then replied


# -- the forge seam's review comments and threads ----------------------------------------------


@pytest.fixture
async def forge(app: GitHubApp) -> AsyncIterator[GitHubForge]:
    async with app.for_installation(INSTALLATION_ID, REPO) as client:
        yield GitHubForge(client)


async def test_a_review_on_lines_of_the_diff_and_its_comments_read_back(
    fake: FakeGitHub, forge: GitHubForge
) -> None:
    comments = [
        LineComment(path="app/retry.py", line=4, body="a range", start_line=3),
        LineComment(path="app/retry.py", line=22, body="one line"),
    ]
    review_id = await forge.post_review(1, commit_id=HEAD, body="two", comments=comments)
    (review,) = reviews_of(fake).reviews(REPO, 1)
    assert review.id == review_id and review.event == "COMMENT"
    posted = [(c.start_line, c.line) for c in reviews_of(fake).comments(REPO, 1)]
    assert posted == [(3, 4), (None, 22)]
    sent = fake.calls_to("POST", rf"/repos/{REPO}/pulls/1/reviews")[0].json or {}
    assert {c["side"] for c in sent["comments"]} == {"RIGHT"}
    assert sent["comments"][0]["start_side"] == "RIGHT"

    read = await forge.review_comments(1)
    assert [(c.path, c.line, c.body) for c in read] == [
        ("app/retry.py", 4, "a range"),
        ("app/retry.py", 22, "one line"),
    ]
    assert {c.user for c in read} == {fake.app_login}
    first = read[0].id
    reply = await forge.reply_in_thread(1, first, "Fixed in 5678567.")
    replies = [c for c in await forge.review_comments(1) if c.in_reply_to_id == first]
    assert [(c.id, c.body) for c in replies] == [(reply, "Fixed in 5678567.")]


async def test_threads_reactions_and_who_may_write(fake: FakeGitHub, forge: GitHubForge) -> None:
    comments = [LineComment(path="app/retry.py", line=3, body="loop")]
    await forge.post_review(1, commit_id=HEAD, body="one", comments=comments)
    (comment,) = await forge.review_comments(1)
    fake.set_permission(REPO, "maintainer", "write")
    fake.set_permission(REPO, "reader", "read")
    react_as(fake, comment.id, "-1", "maintainer")
    assert await forge.review_comment_reactions(comment.id) == [("-1", "maintainer")]
    assert await forge.can_write("maintainer") and not await forge.can_write("reader")

    (thread,) = await forge.review_threads(1)
    assert thread.first_comment_id == comment.id and not thread.is_resolved
    resolve_as(fake, comment.id, "maintainer")
    (thread,) = await forge.review_threads(1)
    assert thread.is_resolved and thread.resolved_by == "maintainer"


async def test_the_app_resolves_a_thread_and_a_workflow_token_may_not(
    fake: FakeGitHub, forge: GitHubForge
) -> None:
    comments = [LineComment(path="app/retry.py", line=3, body="loop")]
    await forge.post_review(1, commit_id=HEAD, body="one", comments=comments)
    (thread,) = await forge.review_threads(1)
    assert await forge.resolve_thread(thread.id)
    assert (await forge.review_threads(1))[0].is_resolved

    fake.add_token("ghs_workflow", login="github-actions[bot]")
    settings = Settings(_env_file=None, github_api_url=fake.url, content_pacing_s=0)
    async with RepoClient.from_token("ghs_workflow", REPO, settings) as client:
        workflow = GitHubForge(client, WORKFLOW)
        assert not workflow.capabilities.resolve_threads
        assert await workflow.resolve_thread(thread.id) is False  # FORBIDDEN


async def test_a_forge_without_thread_resolution_replies_fixed() -> None:
    """The same follow-up step on a forge that cannot resolve threads (Gitea's review
    comments): posted once, and a fixed finding's comment gets "Fixed in <sha>." once."""
    forge = BareForge()
    pull = await forge.pull(1)
    loop = finding("Unbounded retry loop", 3, 4)
    inline = InlineRequest(post=True, pr_diff=DIFF)
    first = pull.model_copy(update={"head_sha": HEAD, "author_login": AUTHOR})
    for _ in range(2):
        shown = await follow_up(forge, first, advisory(loop), inline, None, bot_login="council")
    assert [c.line for c in forge.notes] == [4]  # posted once: the marker found it again
    assert shown.notes[0] == "1 finding posted as a review comment on its line."

    fixed = pull.model_copy(update={"head_sha": FIXED_HEAD, "author_login": AUTHOR})
    after = InlineRequest(post=True, pr_diff=FIXED_DIFF)
    for _ in range(2):
        review = advisory(deliberation="d-2")
        await follow_up(forge, fixed, review, after, None, bot_login="council")
    replies = [c.body for c in forge.notes if c.in_reply_to_id is not None]
    assert replies == [f"Fixed in {FIXED_HEAD[:7]}."]
