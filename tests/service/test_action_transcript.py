"""The action's transcript: `council action` writes the deliberation's page to
`$RUNNER_TEMP/council-transcript.html`, and action.yml uploads it as an artifact whatever
the run's outcome."""

from __future__ import annotations

from pathlib import Path

import yaml

from tests.service.test_action import ACTIONS_BOT, run_action, seed
from tests.support.council_answers import CouncilScript
from tests.support.github_server import FakeGitHub
from tests.support.model_server import FakeModelServer
from tests.support.service import PR, REPO, comment_event

ROOT = Path(__file__).resolve().parents[2]
SEAT = "Application Security Reviewer"
FINDING = {
    "severity": "critical",
    "path": "app/auth.py",
    "start_line": 2,
    "end_line": 3,
    "title": "Hard-coded admin password",
    "detail": "Anyone who types admin logs in.",
    "suggestion": None,
}


def test_the_action_writes_the_transcript_for_the_artifact(
    tmp_path: Path, models: FakeModelServer, fake_github: FakeGitHub
) -> None:
    gh = fake_github
    seed(gh)
    models.default(CouncilScript(findings={SEAT: [FINDING]}).reply)
    runner_temp = tmp_path / "runner-temp"
    runner_temp.mkdir()
    asked = gh.add_comment(REPO, PR, "/council quick", user="Codertocat")
    done, _ = run_action(
        tmp_path,
        gh,
        models,
        "issue_comment",
        comment_event("/council quick", comment_id=asked),
        RUNNER_TEMP=str(runner_temp),
    )
    assert done.returncode == 0, done.stderr
    assert [c.user for c in gh.comments(REPO, PR)][-1] == ACTIONS_BOT
    page = (runner_temp / "council-transcript.html").read_text()
    assert page.startswith("<!") and REPO in page
    assert SEAT in page and "app/auth.py:2" in page
    assert "Hard-coded admin password" in page


def test_a_run_outside_a_runner_writes_no_transcript(
    tmp_path: Path, models: FakeModelServer, fake_github: FakeGitHub
) -> None:
    gh = fake_github
    seed(gh)
    models.default(CouncilScript().reply)
    asked = gh.add_comment(REPO, PR, "/council quick", user="Codertocat")
    done, _ = run_action(
        tmp_path,
        gh,
        models,
        "issue_comment",
        comment_event("/council quick", comment_id=asked),
        RUNNER_TEMP="",
    )
    assert done.returncode == 0, done.stderr
    assert not list(tmp_path.rglob("council-transcript.html"))


def test_action_yml_uploads_the_transcript_whatever_the_outcome() -> None:
    steps = yaml.safe_load((ROOT / "action.yml").read_text())["runs"]["steps"]
    convene = next(i for i, s in enumerate(steps) if 'council" action' in s.get("run", ""))
    (upload,) = [s for s in steps if str(s.get("uses", "")).startswith("actions/upload-artifact")]
    assert steps.index(upload) > convene
    assert upload["uses"] == "actions/upload-artifact@v4"
    assert upload["if"] == "always()"
    assert upload["with"]["path"] == "${{ runner.temp }}/council-transcript.html"
    assert upload["with"]["if-no-files-found"] == "ignore"
