"""`/council strategies ...` in the App (issue 12, parts 1 and 6): it needs write access like
every command (a read-only user gets the one refusal, and nothing is convened or called),
and from someone with write access the strategies protocol runs and its report is in the
advisory comment, collapsed."""

from __future__ import annotations

from collections.abc import AsyncIterator
from pathlib import Path
from typing import Any

import pytest

from bot.render.markdown import visible_text
from tests.support.council_answers import CouncilScript
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
    drained,
    eventually,
    running_app,
    seed_github,
)

KEYS = app_keypair()
MARKER = "<!-- pr-council:advisory -->"
ASK = "/council strategies how should we fix the crash in the retry loop?"


@pytest.fixture
def gh(fake_github: FakeGitHub) -> FakeGitHub:
    seed_github(fake_github, KEYS[1])
    return fake_github


@pytest.fixture
async def app(tmp_path: Path, models: FakeModelServer, gh: FakeGitHub) -> AsyncIterator[App]:
    models.default(CouncilScript(hunter_severity=["major", "minor"], task_type="bug-fix").reply)
    async with running_app(app_settings(tmp_path, models, gh, KEYS[0])) as running:
        yield running


async def test_strategies_from_a_read_only_user_is_refused_like_any_command(
    app: App, gh: FakeGitHub, models: FakeModelServer
) -> None:
    gh.set_permission(REPO, "visitor", "read")
    comment_id = gh.add_comment(REPO, PR, ASK, user="visitor")
    response = await app.deliver(
        "issue_comment", comment_event(ASK, comment_id=comment_id, sender="visitor")
    )
    assert response.status_code == 202
    await eventually(lambda: len(app_replies(gh)) >= 1, what="the refusal")
    await drained(app)
    assert len(app_replies(gh)) == 1 and "write or admin" in app_replies(gh)[0].body
    assert gh.check_runs(REPO) == [] and models.calls == []


async def test_strategies_from_a_writer_posts_the_strategies_report(
    app: App, gh: FakeGitHub, models: FakeModelServer
) -> None:
    comment_id = gh.add_comment(REPO, PR, ASK, user=AUTHOR)
    await app.deliver("issue_comment", comment_event(ASK, comment_id=comment_id))

    def advisory() -> list[Any]:
        return [c for c in gh.comments(REPO, PR) if MARKER in c.body]

    await eventually(lambda: advisory(), what="the advisory comment")
    (comment,) = advisory()
    assert "protocol `strategies`" in comment.body
    assert "**Strategies** · bug fix" in visible_text(comment.body)
    # The PR's title ("Fix login") and the question's words say bug fix over the security
    # area: decided from the PR, no classification call.
    assert "bug fix, from the change's signals" in comment.body
    assert sum(c.request.output_name == "submit_task_type" for c in models.calls) == 0
    assert "<summary>Strategies: bug fix, 3 lenses" in comment.body
    # The first round raised a new major finding: a second round ran.
    critiques = [c for c in models.calls if c.request.output_name == "submit_critique"]
    assert len(critiques) == 6
    assert "Round 2 of at most 2: converged" in comment.body
