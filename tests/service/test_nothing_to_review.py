"""A pull request with no changed line to read gets no model call, and (no earlier verdict to
carry) a check run that says it has no verdict, which blocks under `gate: verdict`."""

from __future__ import annotations

from pathlib import Path

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
BINARY_ONLY = (
    "diff --git a/logo.png b/logo.png\n"
    "index 1111111..2222222 100644\n"
    "Binary files a/logo.png and b/logo.png differ\n"
)


async def test_a_binary_only_pull_request_is_nothing_to_review(
    tmp_path: Path, models: FakeModelServer, fake_github: FakeGitHub
) -> None:
    gh = fake_github
    seed_github(gh, KEYS[1])
    gh.add_pull(
        REPO,
        PR,
        title="New logo",
        body="",
        head_sha="cd" * 20,
        diff=BINARY_ONLY,
        files_at_head={**FILES, "logo.png": b"\x89PNG\r\n\x1a\n"},
        user=AUTHOR,
        head_ref="new-logo-AKIAIOSFODNN7EXAMPLE",  # a branch name is the author's words
    )
    models.default(CouncilScript().reply)
    async with running_app(app_settings(tmp_path, models, gh, KEYS[0])) as app:
        comment_id = gh.add_comment(REPO, PR, "/council", user=AUTHOR)
        response = await app.deliver(
            "issue_comment", comment_event("/council", comment_id=comment_id)
        )
        assert response.status_code == 202
        await eventually(
            lambda: [c for c in gh.check_runs(REPO) if c.status == "completed"],
            what="a completed check run",
        )
    (run,) = gh.check_runs(REPO)
    # No earlier verdict to carry: nothing passes the gate without one.
    assert run.conclusion == "failure"
    title = run.title or ""
    assert title.startswith("No verdict: nothing to review") and "main..new-logo-" in title
    assert "AKIAIOSFODNN7EXAMPLE" not in f"{title}{run.summary}"  # redacted, as everywhere
    assert "only binary files changed: logo.png" in title
    assert models.calls == []  # nothing was sent to a model
    assert [c for c in gh.comments(REPO, PR) if c.user == gh.app_login] == []
