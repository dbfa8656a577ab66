"""The shape of ragflow#6691 through the App (a `/council` command in; the sticky comment,
the check run and the inline review out): every seat cites line 196 of
`rag/extractor.py`, an unchanged line 8 lines above the first hunk, with a one-line fix.
It stays on line 196 - "(outside the diff)" in the comment, an annotation on the check run -
and no review comment is asked for it (GitHub would refuse the whole review); a finding
on a context line of a hunk is posted inline on that line.
"""

from __future__ import annotations

from collections.abc import AsyncIterator
from pathlib import Path

import pytest

from tests.service.test_inline_comments import convene, review_posts
from tests.support.council_answers import CouncilScript
from tests.support.github_reviews import reviews_of
from tests.support.github_server import FakeGitHub, app_keypair
from tests.support.model_server import FakeModelServer
from tests.support.service import FILES, PR, REPO, App, app_settings, running_app, seed_github
from tests.unit.review.test_anchors_head import DIFF, FIX, PATH, EverySeat, source

KEYS = app_keypair()
HEAD_6691 = "69" * 20


CITED = {"severity": "major", "path": PATH, "end_line": None, "suggestion": None}
SET_EXTENDED = {
    **CITED,
    "start_line": 196,
    "title": "A set is extended",
    "detail": "entities is a set; line 207 still calls extend on it.",
    "replacement": FIX,
}
CONTEXT = {
    **CITED,
    "start_line": 205,
    "title": "The chunk loop swallows errors",
    "detail": "An exception in one chunk ends the extraction silently.",
    "replacement": None,
}


@pytest.fixture
def gh(fake_github: FakeGitHub) -> FakeGitHub:
    seed_github(fake_github, KEYS[1])
    files = {**FILES, PATH: source(False), ".github/council.yml": "inline_comments: true\n"}
    fake_github.set_files(REPO, "main", files)
    fake_github.push(
        REPO, PR, head_sha=HEAD_6691, diff=DIFF, files_at_head={**FILES, PATH: source(True)}
    )
    return fake_github


@pytest.fixture
async def app(tmp_path: Path, models: FakeModelServer, gh: FakeGitHub) -> AsyncIterator[App]:
    async with running_app(app_settings(tmp_path, models, gh, KEYS[0])) as running:
        yield running


async def test_a_cited_unchanged_line_above_the_hunk_is_kept_annotated_and_not_inline(
    app: App, gh: FakeGitHub, models: FakeModelServer
) -> None:
    models.default(CouncilScript(findings=EverySeat([SET_EXTENDED, CONTEXT])).reply)
    sticky = await convene(app, gh)

    assert f"{PATH}:L196 (outside the diff)" in sticky
    assert "Anchors:" not in sticky  # nothing was moved, clipped or dropped
    (run,) = [r for r in gh.check_runs(REPO) if r.status == "completed"]
    where = sorted((a["path"], a["start_line"], a["end_line"]) for a in run.annotations)
    assert where == [(PATH, 196, 196), (PATH, 205, 205)]
    (outside,) = [a for a in run.annotations if a["start_line"] == 196]
    assert "outside the diff" in outside["message"] and FIX in outside["raw_details"]

    # One review, never refused, with the context line's comment only: 196 is not asked for.
    assert [call.status for call in review_posts(gh)] == [200]
    asked = [c["line"] for call in review_posts(gh) for c in (call.json or {})["comments"]]
    assert asked == [205]
    (comment,) = reviews_of(gh).comments(REPO, PR)
    assert (comment.path, comment.line) == (PATH, 205)
    assert "1 finding posted as a review comment on its line." in sticky
