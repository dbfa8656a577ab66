"""The repository's `comment`, `max_findings` and `min_severity` (`.github/council.yml`)
reach the comment the App posts."""

from __future__ import annotations

from pathlib import Path

import pytest

from bot.render.markdown import COMMENT_MARKER, visible_text
from tests.support.council_answers import CouncilScript
from tests.support.github_server import FakeGitHub, app_keypair
from tests.support.model_server import FakeModelServer
from tests.support.service import (
    AUTHOR,
    FILES,
    PR,
    REPO,
    app_settings,
    comment_event,
    eventually,
    running_app,
    seed_github,
)

KEYS = app_keypair()
WORDS = ("alpha", "bravo", "charlie", "delta", "echo", "foxtrot")


@pytest.fixture
def gh(fake_github: FakeGitHub) -> FakeGitHub:
    seed_github(fake_github, KEYS[1])
    return fake_github


def findings() -> list[dict[str, object]]:
    return [
        {
            "severity": "major",
            "path": "app/auth.py",
            "start_line": 10 * (i + 1),
            "end_line": 10 * (i + 1),
            "title": f"{word.capitalize()} defect in the login path",
            "detail": f"The {word} branch skips the password check. It must not.",
            "suggestion": "Check the password.",
        }
        for i, word in enumerate(WORDS)
    ]


async def posted(
    tmp_path: Path, models: FakeModelServer, gh: FakeGitHub, config: str | None
) -> str:
    files = dict(FILES)
    if config is not None:
        files[".github/council.yml"] = config
    gh.set_files(REPO, "main", files)
    models.default(CouncilScript(findings={"Application Security Reviewer": findings()}).reply)
    async with running_app(app_settings(tmp_path, models, gh, KEYS[0])) as app:
        comment_id = gh.add_comment(REPO, PR, "/council quick", user=AUTHOR)
        await app.deliver("issue_comment", comment_event("/council quick", comment_id=comment_id))
        await eventually(
            lambda: [c for c in gh.check_runs(REPO) if c.status == "completed"],
            what="the check run",
        )
    (comment,) = [c for c in gh.comments(REPO, PR) if c.user == gh.app_login]
    assert comment.body.startswith(COMMENT_MARKER)
    return comment.body


async def test_the_repo_config_sets_max_findings_and_compact(
    tmp_path: Path, models: FakeModelServer, gh: FakeGitHub
) -> None:
    body = await posted(tmp_path, models, gh, "max_findings: 3\ncomment: compact\n")
    assert body.count("defect in the login path") == 3
    assert "…and 3 more findings: see the check run." in body
    assert "<details>" not in body and "Compact advisory (`comment: compact`)" in body


async def test_by_default_seven_findings_and_the_collapsed_sections(
    tmp_path: Path, models: FakeModelServer, gh: FakeGitHub
) -> None:
    body = await posted(tmp_path, models, gh, None)
    visible = visible_text(body)
    assert visible.count("defect in the login path") == 6  # all six: within max_findings 7
    assert "more findings" not in visible
    assert "<summary>All findings (6: 6 major)</summary>" in body
    assert "check `" in visible
