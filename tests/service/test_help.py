"""`/council help` under the permission rule of every command, and broken persona files
said where people look: the help reply and the check run."""

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
    FILES,
    PR,
    REPO,
    App,
    app_settings,
    comment_event,
    eventually,
    running_app,
    seed_github,
)

KEYS = app_keypair()
OPERATOR_MODELS = ("anthropic:claude-sonnet-5-5", "openai:gpt-5.4")
BROKEN = ".github/council/agents/broken.md"
BROKEN_TEXT = """---
id: broken-reviewer
name: Broken Reviewer
division: testing
description: Reviews nothing.
task_types: [general]
review_strengths: everything
---
You review.
"""


@pytest.fixture
def gh(fake_github: FakeGitHub) -> FakeGitHub:
    seed_github(fake_github, KEYS[1])
    fake_github.set_files(REPO, "main", {**FILES, BROKEN: BROKEN_TEXT})
    return fake_github


@pytest.fixture
async def app(tmp_path: Path, models: FakeModelServer, gh: FakeGitHub) -> AsyncIterator[App]:
    models.default(CouncilScript().reply)
    settings = app_settings(tmp_path, models, gh, KEYS[0], max_cost_usd=2.5)
    assert tuple(settings.models) == OPERATOR_MODELS
    async with running_app(settings) as running:
        yield running


def replies(gh: FakeGitHub) -> list[Any]:
    return [c for c in gh.comments(REPO, PR) if c.user == gh.app_login]


async def comment(app: App, gh: FakeGitHub, body: str, sender: str = AUTHOR) -> None:
    comment_id = gh.add_comment(REPO, PR, body, user=sender)
    response = await app.deliver(
        "issue_comment", comment_event(body, comment_id=comment_id, sender=sender)
    )
    assert response.status_code == 202, response.text


async def test_an_outsiders_help_gets_one_refusal_and_learns_nothing_of_the_settings(
    app: App, gh: FakeGitHub, models: FakeModelServer
) -> None:
    gh.set_permission(REPO, "visitor", "read")
    for _ in range(3):
        await comment(app, gh, "/council help", sender="visitor")
    # Each job has run once the last one has answered the permission question.
    await eventually(
        lambda: len(gh.calls_to("GET", rf"/repos/{REPO}/collaborators/visitor/permission")) == 3,
        what="three permission checks",
    )
    await comment(app, gh, "/council cancel", sender="visitor")  # the same window
    await eventually(
        lambda: len(gh.calls_to("GET", rf"/repos/{REPO}/collaborators/visitor/permission")) == 4,
        what="the fourth permission check",
    )
    await comment(app, gh, "/council help")  # an admin's, so the outsiders' have all run
    await eventually(lambda: len(replies(gh)) == 2, what="the admin's help")

    refusal, admins = replies(gh)
    assert refusal.body.startswith("@visitor Only people with write or admin access")
    for secret in ("$", "tokens", "2.5", "max_cost", "protocol:", "broken.md"):
        assert secret not in refusal.body
    for model in OPERATOR_MODELS:
        for name in model.split(":"):
            assert name not in refusal.body
    assert "2.5" in admins.body and "protocol: board" in admins.body  # what was withheld
    assert gh.check_runs(REPO) == [] and models.calls == []


async def test_an_admins_help_lists_a_broken_persona_file_with_its_line_and_reason(
    app: App, gh: FakeGitHub
) -> None:
    await comment(app, gh, "/council help")

    (reply,) = await eventually(lambda: replies(gh), what="the help reply")
    assert "/council cancel" in reply.body
    assert f"`{BROKEN}` line 7: field 'review_strengths' must be a list" in reply.body


async def test_a_deliberations_check_run_names_the_broken_persona_file(
    app: App, gh: FakeGitHub
) -> None:
    await comment(app, gh, "/council quick")

    (run,) = await eventually(
        lambda: [c for c in gh.check_runs(REPO) if c.status == "completed"], what="the check run"
    )
    summary = run.summary or ""
    assert run.conclusion == "success"
    assert "did not load" in summary
    assert f"`{BROKEN}` line 7: field 'review_strengths' must be a list" in summary
