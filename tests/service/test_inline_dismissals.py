"""Who can dismiss the council's inline findings, through the App (a command in; the review
comments, the sticky comment and the check run out). The Action's store-less path is in
tests/unit/pr/test_followup_dismissals.py.

A thumbs-down on a finding's review comment, or its thread resolved, dismisses the finding
only when the person may write to the repository (admin, maintain or write, as GitHub's
collaborator-permission endpoint says; a 404 is no access); the pull request's author
never dismisses a critical finding, and no dismissal takes a critical finding out of the
annotations or the verdict: the sticky comment says who dismissed it. Each person's
permission is asked once per review."""

from __future__ import annotations

from collections.abc import AsyncIterator
from pathlib import Path
from typing import Any

import pytest

from tests.service.test_inline_comments import ADMIN, RETURN, SEAT, configure, convene
from tests.support.council_answers import CouncilScript
from tests.support.github_reviews import ReviewCommentState, react_as, resolve_as, reviews_of
from tests.support.github_server import CheckRunState, FakeGitHub, app_keypair
from tests.support.model_server import FakeModelServer
from tests.support.service import (
    AUTHOR,
    PR,
    REPO,
    App,
    app_settings,
    running_app,
    seed_github,
)

KEYS = app_keypair()
MAINTAINER = "maintainer"  # write access
PASSERBY = "passerby"  # anyone: a public repository's "read"
STRANGER = "stranger"  # GitHub counts them as no collaborator: 404
ZWSP = "\u200b"  # the sticky comment neutralises mentions: "@\u200blogin"


@pytest.fixture
def gh(fake_github: FakeGitHub) -> FakeGitHub:
    seed_github(fake_github, KEYS[1])  # the author, Codertocat, is an admin
    fake_github.set_permission(REPO, MAINTAINER, "write")
    fake_github.set_not_collaborator(REPO, STRANGER)
    return fake_github


@pytest.fixture
async def app(tmp_path: Path, models: FakeModelServer, gh: FakeGitHub) -> AsyncIterator[App]:
    async with running_app(app_settings(tmp_path, models, gh, KEYS[0])) as running:
        yield running


def council(models: FakeModelServer, *findings: dict[str, Any], reject: bool = False) -> None:
    verdict = "REJECT" if reject else "APPROVE"
    script = CouncilScript(verdict=verdict, vote=verdict, findings={SEAT: list(findings)})
    models.default(script.reply)


def posted_comments(gh: FakeGitHub) -> dict[str, ReviewCommentState]:
    """The council's review comments by the finding's title."""
    return {
        c.body.split("**: **")[1].split("**")[0]: c
        for c in reviews_of(gh).comments(REPO, PR)
        if c.in_reply_to_id is None
    }


def last_check_run(gh: FakeGitHub) -> CheckRunState:
    return [r for r in gh.check_runs(REPO) if r.status == "completed"][-1]


def annotated(run: CheckRunState) -> set[str]:
    return {str(a.get("title") or "") + " " + str(a.get("message") or "") for a in run.annotations}


def in_annotations(run: CheckRunState, title: str) -> bool:
    return any(title in text for text in annotated(run))


def permission_asks(gh: FakeGitHub, login: str, since: int) -> int:
    path = f"/repos/{REPO}/collaborators/{login}/permission"
    return len([c for c in gh.calls[since:] if c.method == "GET" and c.path == path])


async def test_a_thumbs_down_without_write_access_leaves_the_finding(
    app: App, gh: FakeGitHub, models: FakeModelServer
) -> None:
    configure(gh, "inline_comments: true\n")
    council(models, ADMIN, RETURN)
    await convene(app, gh)
    posted = posted_comments(gh)
    major, critical = posted[str(ADMIN["title"])], posted[str(RETURN["title"])]
    for comment in (major, critical):  # one person, two dismissals
        react_as(gh, comment.id, "-1", PASSERBY)
    react_as(gh, major.id, "-1", STRANGER)
    resolve_as(gh, major.id, STRANGER)

    start = len(gh.calls)
    sticky = await convene(app, gh)
    assert "dismissed" not in sticky
    for finding in (ADMIN, RETURN):
        assert str(finding["title"]) in sticky
        assert in_annotations(last_check_run(gh), str(finding["title"]))
    # Asked once each for the review, whatever the number of their dismissals.
    assert permission_asks(gh, PASSERBY, start) == 1
    assert permission_asks(gh, STRANGER, start) == 1


async def test_the_authors_own_dismissal_leaves_a_critical_finding(
    app: App, gh: FakeGitHub, models: FakeModelServer
) -> None:
    configure(gh, "inline_comments: true\n")
    council(models, ADMIN, RETURN)
    await convene(app, gh)
    posted = posted_comments(gh)
    critical, major = posted[str(RETURN["title"])], posted[str(ADMIN["title"])]
    resolve_as(gh, critical.id, AUTHOR)  # the author, an admin, waves it away twice
    react_as(gh, critical.id, "-1", AUTHOR)
    react_as(gh, major.id, "-1", AUTHOR)  # a major one: the author's word counts

    start = len(gh.calls)
    sticky = await convene(app, gh)
    run = last_check_run(gh)
    assert str(RETURN["title"]) in sticky and in_annotations(run, str(RETURN["title"]))
    assert f"dismissed by @{ZWSP}{AUTHOR}" not in sticky
    assert "1 finding dismissed earlier is not raised again." in sticky
    assert str(ADMIN["title"]) not in sticky and not in_annotations(run, str(ADMIN["title"]))
    # The command's permission check and the dismissal's: one request.
    assert permission_asks(gh, AUTHOR, start) == 1

    sticky = await convene(app, gh)  # and on every later review
    assert str(RETURN["title"]) in sticky
    assert in_annotations(last_check_run(gh), str(RETURN["title"]))


async def test_a_maintainers_thumbs_down_drops_a_major_finding(
    app: App, gh: FakeGitHub, models: FakeModelServer
) -> None:
    configure(gh, "inline_comments: true\n")
    council(models, ADMIN, RETURN)
    await convene(app, gh)
    react_as(gh, posted_comments(gh)[str(ADMIN["title"])].id, "-1", MAINTAINER)

    sticky = await convene(app, gh)
    assert "1 finding dismissed earlier is not raised again." in sticky
    assert str(ADMIN["title"]) not in sticky
    assert not in_annotations(last_check_run(gh), str(ADMIN["title"]))
    assert str(RETURN["title"]) in sticky  # never dismissed

    sticky = await convene(app, gh)  # it stays dismissed
    assert str(ADMIN["title"]) not in sticky
    assert len(reviews_of(gh).reviews(REPO, PR)) == 1  # and is not posted again


async def test_a_maintainers_dismissal_keeps_a_critical_finding_and_the_rejection(
    app: App, gh: FakeGitHub, models: FakeModelServer
) -> None:
    configure(gh, "inline_comments: true\n")
    council(models, ADMIN, RETURN, reject=True)
    await convene(app, gh)
    assert last_check_run(gh).conclusion == "failure"
    posted = posted_comments(gh)
    critical, major = posted[str(RETURN["title"])], posted[str(ADMIN["title"])]
    resolve_as(gh, critical.id, MAINTAINER)
    react_as(gh, critical.id, "-1", MAINTAINER)
    react_as(gh, major.id, "-1", MAINTAINER)

    start = len(gh.calls)
    sticky = await convene(app, gh)
    run = last_check_run(gh)
    assert run.conclusion == "failure"
    assert in_annotations(run, str(RETURN["title"]))
    assert str(RETURN["title"]) in sticky
    assert f"dismissed by @{ZWSP}{MAINTAINER}" in sticky
    # The major one goes, as any finding a maintainer dismisses.
    assert not in_annotations(run, str(ADMIN["title"]))
    assert "1 finding dismissed earlier is not raised again." in sticky
    assert permission_asks(gh, MAINTAINER, start) == 1

    sticky = await convene(app, gh)  # the next review keeps it too
    run = last_check_run(gh)
    assert run.conclusion == "failure" and in_annotations(run, str(RETURN["title"]))
    assert f"dismissed by @{ZWSP}{MAINTAINER}" in sticky
