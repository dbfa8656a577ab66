"""`/council board +persona -persona` in the App (issue 12, parts 4 and 6): it needs write
access like every command, an unknown persona is said on the check run with the closest
valid ids and no model is called, and a valid adjustment seats and removes."""

from __future__ import annotations

from collections.abc import AsyncIterator
from pathlib import Path

import pytest

from tests.support.council_answers import CouncilScript, persona_of
from tests.support.github_server import FakeGitHub, app_keypair
from tests.support.model_server import FakeModelServer
from tests.support.service import (
    AUTHOR,
    PR,
    REPO,
    App,
    app_replies,
    app_settings,
    comment_event,
    completed,
    drained,
    eventually,
    running_app,
    seed_github,
)

KEYS = app_keypair()


@pytest.fixture
def gh(fake_github: FakeGitHub) -> FakeGitHub:
    seed_github(fake_github, KEYS[1])
    return fake_github


@pytest.fixture
async def app(tmp_path: Path, models: FakeModelServer, gh: FakeGitHub) -> AsyncIterator[App]:
    models.default(CouncilScript().reply)
    async with running_app(app_settings(tmp_path, models, gh, KEYS[0])) as running:
        yield running


async def test_board_adjustment_from_a_read_only_user_is_refused_like_any_command(
    app: App, gh: FakeGitHub, models: FakeModelServer
) -> None:
    gh.set_permission(REPO, "visitor", "read")
    text = "/council board +appsec-reviewer -docs-reviewer"
    comment_id = gh.add_comment(REPO, PR, text, user="visitor")
    response = await app.deliver(
        "issue_comment", comment_event(text, comment_id=comment_id, sender="visitor")
    )
    assert response.status_code == 202
    await eventually(lambda: len(app_replies(gh)) >= 1, what="the refusal")
    await drained(app)
    assert len(app_replies(gh)) == 1 and "write or admin" in app_replies(gh)[0].body
    assert gh.check_runs(REPO) == [] and models.calls == []


async def test_an_unknown_persona_is_said_on_the_check_run_and_nothing_is_called(
    app: App, gh: FakeGitHub, models: FakeModelServer
) -> None:
    text = "/council board +appsec-reviwer"
    comment_id = gh.add_comment(REPO, PR, text, user=AUTHOR)
    await app.deliver("issue_comment", comment_event(text, comment_id=comment_id))
    await eventually(lambda: completed(gh), what="the completed check run")
    (run,) = completed(gh)
    assert run.conclusion == "failure"  # no verdict blocks the gate
    said = f"{run.title} {run.summary}"
    assert "appsec-reviwer" in said and "did you mean appsec-reviewer" in said
    assert [c for c in models.calls if c.request.output_name] == []


async def test_a_board_adjustment_seats_and_removes_in_the_app(
    app: App, gh: FakeGitHub, models: FakeModelServer
) -> None:
    text = "/council board +docs-reviewer -correctness-reviewer"
    comment_id = gh.add_comment(REPO, PR, text, user=AUTHOR)
    await app.deliver("issue_comment", comment_event(text, comment_id=comment_id))
    await eventually(lambda: completed(gh), what="the completed check run")
    assessed = [
        persona_of(c.request.messages_text)
        for c in models.calls
        if c.request.output_name == "submit_assessment"
    ]
    assert "Docs Reviewer" in assessed or any("Doc" in p for p in assessed)
    (comment,) = [c for c in gh.comments(REPO, PR) if "<!-- pr-council:advisory -->" in c.body]
    assert "Adjusted for this run: +docs-reviewer" in comment.body
    # The only correctness owner stays, and the advisory says why.
    assert "-correctness-reviewer not applied" in comment.body
