"""Inline review comments through the App (a webhook in; a review, the sticky comment and
the check run out), as a person on the pull request sees them: findings on their lines in
one COMMENT review with a suggested change, the rest only in the sticky comment; never
posted twice; a dismissal (a resolved thread, a thumbs-down) by a person who may write
stands; a push that fixes a finding closes its thread (resolved by the App, or "Fixed in
<sha>." when GitHub refuses the resolution); `/council --inline` turns it on for one
run."""

from __future__ import annotations

from collections.abc import AsyncIterator
from pathlib import Path
from typing import Any

import pytest

from bot.render.markdown import COMMENT_MARKER
from tests.support.council_answers import CouncilScript
from tests.support.github_reviews import react_as, resolve_as, reviews_of
from tests.support.github_server import FakeGitHub, app_keypair
from tests.support.model_server import FakeModelServer
from tests.support.service import (
    AUTHOR,
    FILES,
    PR,
    REPO,
    App,
    app_settings,
    comment_event,
    eventually,
    pull_request_event,
    running_app,
    seed_github,
)

KEYS = app_keypair()
SEAT = "Application Security Reviewer"
FIXED_HEAD = "f1" * 20
FIXED_DIFF = """diff --git a/app/auth.py b/app/auth.py
index 1111111..3333333 100644
--- a/app/auth.py
+++ b/app/auth.py
@@ -1,2 +1,4 @@
 def login(user, password):
-    return check(user, password)
+    if hmac.compare_digest(password, ADMIN_PASSWORD):
+        return True
+    return check(user, password)
"""
FIXED_FILES = {
    **FILES,
    "app/auth.py": "def login(user, password):\n"
    "    if hmac.compare_digest(password, ADMIN_PASSWORD):\n"
    "        return True\n    return check(user, password)\n",
}
REPLACEMENT = "    if hmac.compare_digest(password, ADMIN_PASSWORD):\n        return True"

ADMIN = {
    "severity": "major",
    "path": "app/auth.py",
    "start_line": 2,
    "end_line": 3,
    "title": "Hard-coded admin password",
    "detail": "Anyone who types admin logs in as anyone.",
    "suggestion": "Compare against a configured secret, in constant time.",
    "replacement": REPLACEMENT,
}
RETURN = {
    "severity": "critical",
    "path": "app/auth.py",
    "start_line": 4,
    "end_line": None,
    "title": "Check result ignored for admins",
    "detail": "The check is skipped on the admin path.",
    "suggestion": None,
    "replacement": None,
}
NAMING = {**RETURN, "severity": "minor", "title": "Unclear parameter name", "start_line": 4}
ELSEWHERE = {
    **RETURN,
    "start_line": 40,  # not a line of the diff: the anchors make it file-level
    "title": "No audit log of admin logins",
    "detail": "Admin logins leave no trace.",
}


@pytest.fixture
def gh(fake_github: FakeGitHub) -> FakeGitHub:
    seed_github(fake_github, KEYS[1])
    return fake_github


def configure(gh: FakeGitHub, config: str | None) -> None:
    files = dict(FILES)
    if config is not None:
        files[".github/council.yml"] = config
    gh.set_files(REPO, "main", files)


def script(models: FakeModelServer, *findings: dict[str, Any]) -> None:
    models.default(CouncilScript(findings={SEAT: list(findings)}).reply)


@pytest.fixture
async def app(tmp_path: Path, models: FakeModelServer, gh: FakeGitHub) -> AsyncIterator[App]:
    async with running_app(app_settings(tmp_path, models, gh, KEYS[0])) as running:
        yield running


async def convene(app: App, gh: FakeGitHub, command: str = "/council quick") -> str:
    """One command, waited for until its check run completes; the sticky comment's body."""
    done = len([c for c in gh.check_runs(REPO) if c.status == "completed"])
    comment_id = gh.add_comment(REPO, PR, command, user=AUTHOR)
    response = await app.deliver("issue_comment", comment_event(command, comment_id=comment_id))
    assert response.status_code == 202, response.text
    await eventually(
        lambda: len([c for c in gh.check_runs(REPO) if c.status == "completed"]) > done,
        what="the check run",
    )
    (sticky,) = [c for c in gh.comments(REPO, PR) if COMMENT_MARKER in c.body]
    return sticky.body


def review_posts(gh: FakeGitHub) -> list[Any]:
    return gh.calls_to("POST", rf"/repos/{REPO}/pulls/{PR}/reviews")


async def test_findings_go_on_their_lines_in_one_comment_review(
    app: App, gh: FakeGitHub, models: FakeModelServer
) -> None:
    configure(gh, "inline_comments: true\n")
    script(models, ADMIN, RETURN, NAMING, ELSEWHERE)
    start = len(gh.calls)
    sticky = await convene(app, gh)
    # The lines are checked against the diff the review read: fetched once, not again.
    diffs = [
        c for c in gh.calls[start:] if c.path == f"/repos/{REPO}/pulls/{PR}" and "diff" in c.accept
    ]
    assert len(diffs) == 1

    (review,) = reviews_of(gh).reviews(REPO, PR)
    assert review.event == "COMMENT" and review.user == gh.app_login
    assert [call.status for call in review_posts(gh)] == [200]  # never refused with a 422
    comments = reviews_of(gh).comments(REPO, PR)
    by_title = {c.body.split("**: **")[1].split("**")[0]: c for c in comments}
    # Major and critical on their lines; the minor one and the one off the diff are not.
    assert set(by_title) == {"Hard-coded admin password", "Check result ignored for admins"}
    admin = by_title["Hard-coded admin password"]
    assert (admin.path, admin.start_line, admin.line) == ("app/auth.py", 2, 3)
    assert f"```suggestion\n{REPLACEMENT}\n```" in admin.body
    assert "Compare against a configured secret" in admin.body
    assert "<!-- pr-council:finding " in admin.body
    check = by_title["Check result ignored for admins"]
    assert (check.start_line, check.line) == (None, 4) and "```suggestion" not in check.body
    # The sticky comment still lists every finding, and says which are on their lines.
    assert "2 findings posted as review comments on their lines." in sticky
    for finding in (ADMIN, RETURN, NAMING, ELSEWHERE):
        assert str(finding["title"]) in sticky

    # The same head reviewed again: nothing posted twice.
    sticky = await convene(app, gh)
    assert len(reviews_of(gh).reviews(REPO, PR)) == 1
    assert len(reviews_of(gh).comments(REPO, PR)) == 2
    assert "2 findings posted as review comments on their lines." in sticky


async def test_a_dismissed_finding_is_not_raised_again(
    app: App, gh: FakeGitHub, models: FakeModelServer
) -> None:
    # Major findings: no dismissal takes a critical one away (test_inline_dismissals.py).
    configure(gh, "inline_comments: true\n")
    ignored = {**RETURN, "severity": "major"}
    script(models, ADMIN, ignored, {**ignored, "title": "Timing leak", "start_line": 3})
    await convene(app, gh)
    assert len(reviews_of(gh).comments(REPO, PR)) == 3
    by_title = {c.body.split("**: **")[1]: c for c in reviews_of(gh).comments(REPO, PR)}
    (ignored_comment,) = [c for t, c in by_title.items() if t.startswith(str(RETURN["title"]))]
    (leak,) = [c for t, c in by_title.items() if t.startswith("Timing leak")]
    gh.set_permission(REPO, "reviewer", "write")  # people who may write dismiss
    resolve_as(gh, ignored_comment.id, "Codertocat")  # the author (an admin) resolves it
    react_as(gh, leak.id, "-1", "reviewer")  # a maintainer gives a thumbs-down

    sticky = await convene(app, gh)
    assert "2 findings dismissed earlier are not raised again." in sticky
    assert "Check result ignored for admins" not in sticky and "Timing leak" not in sticky
    assert "Hard-coded admin password" in sticky  # never dismissed: still raised
    assert len(reviews_of(gh).reviews(REPO, PR)) == 1
    assert len(reviews_of(gh).comments(REPO, PR)) == 3
    (run,) = [r for r in gh.check_runs(REPO) if r.status == "completed"][-1:]
    assert all("Timing leak" not in str(a) for a in run.annotations)


@pytest.mark.parametrize("forbidden", [False, True])
async def test_a_push_that_fixes_a_finding_closes_its_thread(
    app: App, gh: FakeGitHub, models: FakeModelServer, forbidden: bool
) -> None:
    configure(gh, "inline_comments: true\n")
    script(models, ADMIN)
    await convene(app, gh)
    (posted,) = reviews_of(gh).comments(REPO, PR)

    gh.push(REPO, PR, head_sha=FIXED_HEAD, diff=FIXED_DIFF, files_at_head=FIXED_FILES)
    reviews_of(gh).forbid_resolve = forbidden  # as for a workflow's GITHUB_TOKEN
    script(models)  # the council no longer raises it
    sticky = await convene(app, gh)

    (thread,) = reviews_of(gh).threads(REPO, PR)
    replies = [c for c in reviews_of(gh).comments(REPO, PR) if c.in_reply_to_id == posted.id]
    if forbidden:
        assert thread.resolved_by is None
        assert [r.body for r in replies] == [f"Fixed in {FIXED_HEAD[:7]}."]
        assert replies[0].user == gh.app_login
    else:
        assert thread.resolved_by == gh.app_login.removesuffix("[bot]") and replies == []
    assert "1 review thread closed: its finding was fixed." in sticky

    await convene(app, gh)  # once: the next review leaves the closed thread alone
    again = [c for c in reviews_of(gh).comments(REPO, PR) if c.in_reply_to_id == posted.id]
    assert len(again) == len(replies)


async def test_the_inline_flag_turns_it_on_for_one_run(
    app: App, gh: FakeGitHub, models: FakeModelServer
) -> None:
    configure(gh, None)  # inline_comments off (the default)
    script(models, ADMIN)
    sticky = await convene(app, gh)
    assert reviews_of(gh).reviews(REPO, PR) == [] and "review comment" not in sticky
    assert gh.calls_to("POST", "/graphql") == []  # nothing inline: no request for it

    sticky = await convene(app, gh, "/council quick --inline is the admin path safe?")
    (review,) = reviews_of(gh).reviews(REPO, PR)
    assert review.event == "COMMENT"
    assert "1 finding posted as a review comment on its line." in sticky


async def test_a_push_re_review_that_fixes_a_finding_resolves_its_thread(
    tmp_path: Path, models: FakeModelServer, fake_github: FakeGitHub
) -> None:
    """The incremental re-review (bot.pr.followup.tracked) marks the finding fixed at the new
    head; the inline step resolves the thread it was posted in."""
    gh = fake_github
    seed_github(gh, KEYS[1], labels=("architecture",))
    configure(gh, "protocol: quick\ninline_comments: true\n")
    script(models, ADMIN)
    async with running_app(app_settings(tmp_path, models, gh, KEYS[0])) as app:
        labeled = pull_request_event("labeled", label="architecture")
        assert (await app.deliver("pull_request", labeled)).status_code == 202
        await eventually(lambda: reviews_of(gh).comments(REPO, PR), what="the review comments")
        await eventually(
            lambda: [c for c in gh.check_runs(REPO) if c.status == "completed"],
            what="the first check run",
        )
        gh.push(REPO, PR, head_sha=FIXED_HEAD, diff=FIXED_DIFF, files_at_head=FIXED_FILES)
        script(models)
        pushed = pull_request_event("synchronize", sha=FIXED_HEAD)
        assert (await app.deliver("pull_request", pushed)).status_code == 202
        await eventually(
            lambda: [
                c
                for c in gh.check_runs(REPO)
                if c.status == "completed" and c.head_sha == FIXED_HEAD
            ],
            what="the re-review's check run",
        )
    (thread,) = reviews_of(gh).threads(REPO, PR)
    assert thread.resolved_by == gh.app_login.removesuffix("[bot]")
    (sticky,) = [c for c in gh.comments(REPO, PR) if COMMENT_MARKER in c.body]
    assert "1 review thread closed: its finding was fixed." in sticky.body
