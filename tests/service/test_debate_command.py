"""`/council debate --full ...` in the App (issue 12, parts 2 and 6): it needs write access
like every command (a read-only user gets the one refusal, and nothing is convened or
called), and from someone with write access the mode reaches the engine: the advisory is
a full debate's."""

from __future__ import annotations

from collections.abc import AsyncIterator
from pathlib import Path
from typing import Any

import pytest

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
FULL = "/council debate --full should this cache live in Redis?"


@pytest.fixture
def gh(fake_github: FakeGitHub) -> FakeGitHub:
    seed_github(fake_github, KEYS[1])
    return fake_github


@pytest.fixture
async def app(tmp_path: Path, models: FakeModelServer, gh: FakeGitHub) -> AsyncIterator[App]:
    models.default(CouncilScript(judge=["FULL", "FULL", "CONVERGED"]).reply)
    async with running_app(app_settings(tmp_path, models, gh, KEYS[0])) as running:
        yield running


async def test_a_full_debate_from_a_read_only_user_is_refused_like_any_command(
    app: App, gh: FakeGitHub, models: FakeModelServer
) -> None:
    gh.set_permission(REPO, "visitor", "read")
    comment_id = gh.add_comment(REPO, PR, FULL, user="visitor")
    response = await app.deliver(
        "issue_comment", comment_event(FULL, comment_id=comment_id, sender="visitor")
    )
    assert response.status_code == 202
    await eventually(lambda: len(app_replies(gh)) >= 1, what="the refusal")
    await drained(app)
    assert len(app_replies(gh)) == 1 and "write or admin" in app_replies(gh)[0].body
    assert gh.check_runs(REPO) == [] and models.calls == []


async def test_a_full_debate_from_a_writer_runs_the_full_mode(
    app: App, gh: FakeGitHub, models: FakeModelServer
) -> None:
    comment_id = gh.add_comment(REPO, PR, FULL, user=AUTHOR)
    await app.deliver("issue_comment", comment_event(FULL, comment_id=comment_id))

    def advisory() -> list[Any]:
        return [c for c in gh.comments(REPO, PR) if MARKER in c.body]

    await eventually(lambda: advisory(), what="the advisory comment")
    (comment,) = advisory()
    assert "**Debate (full): converged after 3 of 3 cycles**" in comment.body
    assert sum(c.request.output_name == "submit_judgement" for c in models.calls) == 3
    # The App runs two models: the outside opinion is asked of the one the officers are not on.
    (outside,) = [c for c in models.calls if c.request.output_name == "submit_outside_opinion"]
    assert outside.api == "openai"
    assert "Debate: outside opinion (openai:gpt-5.4)" in comment.body
